"""A Kafka sink's part of a run's steps (``sink.kind: kafka``): step 1 fixes the ranges each target
partition is read over (:mod:`recon.snapshot.target_position`) and the run keeps them as text, as
a table sink keeps its snapshot; step 2 copies the target's records of those ranges into the
run's sink copy (the layout of :mod:`recon.read.sink_copy`: both engines read it as any sink
copy); the rules then take what else the ranges say (:class:`TargetFacts`).

Kept as the ranges, not only as their ends, so that a run re-run under its id reads the very
same records and judges the same facts.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recon.config import PipelineConfig
from recon.snapshot.target_position import (
    TargetRange,
    partitions_now,
    plan,
    removed_any,
)


@dataclass(frozen=True)
class TargetFacts:
    """What a run's target ranges say beyond their records.

    :param removed: retention removed target records before this run read them: a message
        without a copy is ``unverifiable``, not ``lost``.
    :param open_ids: messageIds in target transactions still open: ``pending``, not ``lost``.
    """

    removed: bool
    open_ids: frozenset[str]


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


def _config(cfg: PipelineConfig) -> dict[str, Any]:
    from recon.config.connections import kafka_connection

    return dict(kafka_connection(cfg.sink.connection).config)


def ranges_for_run(cfg: PipelineConfig, previous: str | None) -> list[TargetRange]:
    """Step 1: each target partition from where the previous run's ranges ended to its last
    stable offset now.

    :param previous: the ranges the previous committed run kept (None: the first run).
    """
    topic = cfg.sink.topic
    assert topic is not None and cfg.sink.is_kafka
    ends = {r.partition: r.end for r in ranges_of(topic, previous)} if previous else None
    return plan(topic, ends, partitions_now(_config(cfg), topic))


#: Beside the copied rows: the facts the rules take from the ranges (:class:`TargetFacts`),
#: read in step 2 with the rows, so that step 3 (and a re-run) judges what step 2 saw.
FACTS_FILE = "target-facts.json"


def copy_for_run(cfg: PipelineConfig, ranges: Sequence[TargetRange], directory: str) -> int:
    """Step 2: the target's committed records of ``ranges`` into ``directory`` as the run's sink
    copy, and its :class:`TargetFacts` beside them; returns the rows copied."""
    from recon.read.sink_copy import DONE_FILE, ROWS_FILE
    from recon.read.target_kafka import open_message_ids, write_sink_rows

    spec = cfg.sink.message_id
    assert spec is not None
    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(f"{directory}/{DONE_FILE}")
    config = _config(cfg)
    n = write_sink_rows(f"{directory}/{ROWS_FILE}", config, ranges, spec)
    opened = sorted(open_message_ids(config, ranges, spec))
    with open(f"{directory}/{FACTS_FILE}", "w") as out:
        json.dump({"removed": removed_any(ranges), "open_ids": opened}, out)
    open(f"{directory}/{DONE_FILE}", "w").close()
    return n


def facts_of(directory: str) -> TargetFacts:
    """The facts step 2 kept beside the run's sink copy (:func:`copy_for_run`)."""
    with open(f"{directory}/{FACTS_FILE}") as kept:
        facts = json.load(kept)
    return TargetFacts(bool(facts["removed"]), frozenset(facts["open_ids"]))
