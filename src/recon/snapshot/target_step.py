"""A Kafka sink's part of step 1 (``sink.kind: kafka``): it fixes the ranges each target
partition is read over (:mod:`recon.snapshot.target_position`) and the run keeps them as text, as
a table sink keeps its snapshot; step 2 copies the target's records of those ranges
(:mod:`recon.read.target_copy`).

Kept as the ranges, not only as their ends, so that a run re-run under its id reads the very
same records and judges the same facts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from recon.config import PipelineConfig
from recon.snapshot.target_position import (
    TargetRange,
    partitions_now,
    plan,
)


def ranges_json(ranges: Sequence[TargetRange]) -> str:
    """The ranges as the run keeps them."""
    return json.dumps(
        [[r.partition, r.start, r.end, r.log_start, r.high_watermark] for r in ranges]
    )


def ranges_of(topic: str, kept: str | None) -> list[TargetRange]:
    """The ranges a run kept (empty: none kept)."""
    if kept is None:
        return []
    return [TargetRange(topic, int(p), int(s), int(e), int(ls), int(hw))
            for p, s, e, ls, hw in json.loads(kept)]  # fmt: skip


def target_config(cfg: PipelineConfig) -> dict[str, Any]:
    from recon.config.connections import kafka_connection

    return dict(kafka_connection(cfg.sink.connection).config)


def ranges_for_run(cfg: PipelineConfig, previous: str | None) -> list[TargetRange]:
    """Step 1: each target partition from where the previous run's ranges ended to its last
    stable offset now.

    :param previous: the ranges the previous committed run kept (None: the first run).
    """
    config = target_config(cfg)
    topic = cfg.sink.topic
    assert topic is not None and cfg.sink.is_kafka
    ends = {r.partition: r.end for r in ranges_of(topic, previous)} if previous else None
    return plan(topic, ends, partitions_now(config, topic))


def plan_target(cfg: PipelineConfig, previous: str | None) -> tuple[str, str]:
    """Step 1 of a Kafka sink: :func:`ranges_for_run` as the run keeps them (its sink snapshot's
    text), and what the run reads of the target, in words."""
    ranges = ranges_for_run(cfg, previous)
    read = ", ".join(f"[{r.partition}] {r.read_from}-{r.end}" for r in ranges)
    return ranges_json(ranges), f"sink topic {cfg.sink.topic} read committed by offsets: {read}"
