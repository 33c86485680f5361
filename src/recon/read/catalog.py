"""What the catalogs say about a pipeline's tables and topic, asked once per run.

Step 1 asks (:func:`inspect_catalog`): the sink table's key, its time column's type and how its
payload compares (``recon.read.sink.inspect_sink``), a source table's time type and whether its
catalog proves each messageId named once (``recon.read.source.inspect_source``); the topic's
timestamp type comes with its offsets (``recon.snapshot.offsets.take_offsets``). The answers are
recorded with the run (``recon.runs.catalog``, as :meth:`Catalog.as_json`), so the run's later
steps read the same answers instead of asking again (``recon.engines.plan.load_plan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from recon.config import PipelineConfig
from recon.read.sink import SinkTable, inspect_sink
from recon.read.source import SourceTable, inspect_source


@dataclass(frozen=True)
class Catalog:
    """What the catalogs said when step 1 planned the run.

    :param sink: the sink table.
    :param source: a source table (None: no source, or an upstream topic).
    :param timestamp_type: the topic's ``message.timestamp.type`` (None: no latency measured, or
        the configuration was unreadable); it labels latencies, never judges them.
    :param dead_letter_ranges: what the run reads of the pipeline's dead-letter and retry
        topics, ``(topic, partition, start, end)`` (``recon.read.dead_letters.planned_ranges``;
        empty without ``diverted``).
    """

    sink: SinkTable
    source: SourceTable | None = None
    timestamp_type: str | None = None
    dead_letter_ranges: tuple[tuple[str, int, int, int], ...] = ()

    @property
    def source_time_type(self) -> str | None:
        """A source table's time column's type (None: no source table)."""
        return None if self.source is None else self.source.time_type

    @property
    def source_named_once(self) -> bool:
        """Whether a source table's catalog proves each messageId named once."""
        return self.source is not None and self.source.named_once

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Catalog:
        sink: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in doc["sink"].items()
        }
        source = doc.get("source")
        ranges = tuple((str(t), int(p), int(s), int(e))
                       for t, p, s, e in doc.get("dead_letter_ranges") or ())  # fmt: skip
        return cls(SinkTable(**sink), None if source is None else SourceTable(**source),
                   doc.get("timestamp_type"), ranges)  # fmt: skip


def inspect_catalog(cfg: PipelineConfig, sink_pg: Any) -> Catalog:
    """Ask the sink's catalog and a source table's, once each (the topic's timestamp type is
    asked with its offsets, and set by step 1: ``recon.engines.plan.resolve_plan``).

    :param sink_pg: an open connection to the sink database.
    :raises recon.errors.SinkTableError: the sink table or a declared column is missing.
    :raises recon.errors.SourceTableError: the source table or a declared column is missing.
    """
    from recon.run.services import source_db

    table = inspect_sink(sink_pg, cfg.sink, cfg.name, cfg.payload, cfg.order)
    source = None
    if cfg.source is not None and not cfg.source.is_topic:
        with source_db(cfg) as pg:
            source = inspect_source(pg, cfg)
    return Catalog(table, source)
