"""Step 2 of a pipeline whose sink is a Kafka topic (``sink.kind: kafka``): the target's committed
records of the ranges step 1 fixed (``recon.snapshot.target_step``) become the run's sink rows,
in the layout of a table sink's copy (``recon.read.sink_copy``, which calls this), so both engines
read them as any sink copy; beside them, what else the ranges say (:class:`TargetFacts`), which
step 3 hands the rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from recon.config import PipelineConfig
from recon.read.target_kafka import open_message_ids, write_sink_rows
from recon.snapshot.target_position import TargetRange, removed_any
from recon.snapshot.target_step import target_config

#: read in step 2 with the rows, so that step 3 (and a re-run) judges what step 2 saw.
FACTS_FILE = "target-facts.json"


@dataclass(frozen=True)
class TargetFacts:
    """What a run's target ranges say beyond their records.

    :param removed: retention removed target records before this run read them: a message
        without a copy is ``unverifiable``, not ``lost``.
    :param open_ids: messageIds in target transactions still open: ``pending``, not ``lost``.
    """

    removed: bool
    open_ids: frozenset[str]


def copy_target_records(
    cfg: PipelineConfig, ranges: Sequence[TargetRange], rows_path: str, directory: str
) -> int:
    """The target's committed records of ``ranges`` as sink rows into ``rows_path``, and the
    run's :class:`TargetFacts` into ``directory``; returns the rows copied.

    :param directory: the run's sink copy folder (its completion mark is the caller's).
    """
    spec = cfg.sink.message_id
    assert spec is not None
    config = target_config(cfg)
    n = write_sink_rows(rows_path, config, ranges, spec)
    opened = sorted(open_message_ids(config, ranges, spec))
    with open(f"{directory}/{FACTS_FILE}", "w") as out:
        json.dump({"removed": removed_any(ranges), "open_ids": opened}, out)
    return n


def facts_of(directory: str) -> TargetFacts:
    """The facts step 2 kept beside the run's sink copy (:func:`copy_target_records`)."""
    with open(f"{directory}/{FACTS_FILE}") as kept:
        facts = json.load(kept)
    return TargetFacts(bool(facts["removed"]), frozenset(facts["open_ids"]))
