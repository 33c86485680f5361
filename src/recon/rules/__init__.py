"""The verdict rules, once: set-based SQL over named relations, run by both engines.

Each ``NN_name.sql`` file is one ``SELECT``/``WITH`` statement whose result is the relation
``name``; later steps read earlier ones by that name. Inputs, registered by the engine before the
first step (empty, with their columns, when the run has none):

==================  ===================================================================
``records``         the window's committed records (``recon.schemas.WINDOW``)
``pending``         records past the window's end (``schemas.PENDING``)
``sink_rows``       the run's new sink rows (``schemas.SINK_ROWS``)
``ledger``          earlier runs' entries of the run's messages (``schemas.LEDGER``)
``uncommitted``     records only the read_uncommitted pass saw (``schemas.UNCOMMITTED``)
``removed_ranges``  per partition whose window starts below its log-start offset:
                    ``topic, partition, from_offset, log_start_offset``
``partition_ends``  per partition: ``partition, window_to, log_start`` (where a pending
                    ledger entry's records stop being pending)
==================  ===================================================================

Outputs: ``results`` (``schemas.RESULT``), ``verdict_counts`` and ``ledger_next``
(``schemas.LEDGER``; ``ledger_known`` and ``ledger_new`` are its two parts). ``docs/algorithm.md``
explains the algorithm; each file says what it decides.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One rule file and whether its relation is kept (materialised) or stays a view.

    :param file: the file's name without ``.sql``.
    :param keep: materialise: the relation is small and read more than once, or its inputs are
        costly to compute again.
    """

    file: str
    keep: bool = False

    @property
    def relation(self) -> str:
        return self.file.split("_", 1)[1]


#: The steps that judge a run, in order.
VERDICT_STEPS: tuple[Step, ...] = (
    Step("01_checked_records", keep=True),
    Step("01_checked_sink_rows", keep=True),
    Step("02_joined", keep=True),
    Step("03_general_hashes", keep=True),
    Step("03_general_joined", keep=True),
    Step("03_fast_joined"),
    Step("03_general_ids", keep=True),
    Step("04_fast_verdicts"),
    Step("05_general_verdicts", keep=True),
    Step("06_results"),
    Step("07_verdict_counts", keep=True),
)

#: The steps that make the next ledger from a judged run.
LEDGER_STEPS: tuple[Step, ...] = (
    Step("08_ledger_judged", keep=True),
    Step("08_ledger_known"),
    Step("08_ledger_new"),
    Step("09_ledger_next"),
)

#: The relations every engine registers before the first step.
INPUTS = (
    "records", "pending", "sink_rows", "ledger", "uncommitted", "removed_ranges",
    "partition_ends",
)  # fmt: skip

_POSITIONS = 'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT)[]'
_RECORD = (
    ("topic", "VARCHAR"), ("partition", "INTEGER"), ("offset", "BIGINT"),
    ("message_id", "VARCHAR"), ("invalid_reason", "VARCHAR"),
)  # fmt: skip

#: The columns each input must have, in DuckDB's types (the Spark engine renders them).
INPUT_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "records": _RECORD,
    "pending": _RECORD,
    "sink_rows": (("sink_key", "VARCHAR"), ("message_id", "VARCHAR")),
    "ledger": (
        ("message_id", "VARCHAR"),
        ("topic", "VARCHAR"),
        ("partition", "INTEGER"),
        ("first_offset", "BIGINT"),
        ("offsets", "BIGINT[]"),
        ("sink_count", "BIGINT"),
        ("first_run_id", "VARCHAR"),
        ("verdict", "VARCHAR"),
        ("positions", _POSITIONS),
    ),  # fmt: skip
    "uncommitted": (
        ("message_id", "VARCHAR"),
        ("topic", "VARCHAR"),
        ("partition", "INTEGER"),
        ("offset", "BIGINT"),
    ),  # fmt: skip
    "removed_ranges": (
        ("topic", "VARCHAR"),
        ("partition", "INTEGER"),
        ("from_offset", "BIGINT"),
        ("log_start_offset", "BIGINT"),
    ),  # fmt: skip
    "partition_ends": (("partition", "INTEGER"), ("window_to", "BIGINT"), ("log_start", "BIGINT")),
}
