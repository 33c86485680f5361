"""The verdict rules, once: set-based SQL over named relations, run by both engines.

Each ``NN_name.sql`` file is one ``SELECT``/``WITH`` statement whose result is the relation
``name``; later steps read earlier ones by that name. Inputs, registered by the engine before the
first step (empty, with their columns, when the run has none):

==================  ===================================================================
``records``         the window's committed records (``recon.model.schemas.WINDOW``)
``pending``         records past the window's end (``schemas.PENDING``)
``sink_rows``       the run's new sink rows (``schemas.SINK_ROWS``)
``ledger``          earlier runs' entries of the run's messages (``schemas.LEDGER``)
``uncommitted``     records only the read_uncommitted pass saw (``schemas.UNCOMMITTED``)
``removed_ranges``  per partition whose window starts below its log-start offset:
                    ``topic, partition, from_offset, log_start_offset``
``partition_ends``  per partition: ``partition, window_to, log_start, last_stable`` (where
                    a pending ledger entry's records stop being pending; a pending record
                    below ``last_stable`` was read committed)
``compaction_gaps`` per partition of a compacted topic whose read range holds fewer
                    committed records than offsets: ``topic, partition, from_offset,
                    to_offset, missing, detail`` (``recon.engines.pending.compaction_gaps``)
``target_removed``  one row (``detail``) when the sink is a Kafka topic whose retention
                    removed records before the run read them (``recon.read.target_copy``):
                    a record without a sink row is then ``unverifiable``, not ``lost``
``replays``         ``topic, partition, offset`` of every record a repair replayed
                    (``recon.repairs``): a message at such a position is not a producer's
                    ``topic_duplicate``
``source_rows``     the pipeline's source rows (``source:``, an outbox) written within its
                    horizon up to the snapshot: ``message_id, source_key, judge``; ``judge``
                    marks the rows that settled in this run (each is judged by one run)
``source_known``    ``message_id`` of the settled source messages the ledger has an entry of
``dead_letters``    the records of the pipeline's dead-letter and retry topics read by the run
                    (``diverted:``, ``recon.read.dead_letters``): ``message_id`` (as the
                    record carries it), ``dl_topic, dl_partition, dl_offset`` (where it is),
                    ``orig_topic, orig_partition, orig_offset`` (its original, from its
                    headers), ``error`` (the error text its headers carry)
==================  ===================================================================

Two inputs may carry a time (null when the source has none): ``records.timestamp`` (the
record's Kafka timestamp) and ``sink_rows.sink_time`` (``sink.time_column``); with both, a judged
message has a delivery latency, and ``${LATE_AFTER_MS}`` (the pipeline's bound, null when it
declares none) turns the slow deliveries into ``late``. Both may carry a ``payload`` (the
compared content, as text, in the pipeline's order; null when it declares no ``payload``):
``${PAYLOAD_DIGESTS}`` (``recon.rules.judging``) turns it into one digest per field before the
join, and ``${PAYLOAD_DIFF}`` names the fields a sink row changed, which makes a delivery
``mismatched``. And both may carry ``order_key`` and ``order_position`` (an upsert sink's
key and position, ``order`` declared), judged against input ``sink_all`` (the sink as a whole) by
:data:`ORDER_STEPS`.

With a source, :data:`SOURCE_STEPS` find the ``unpublished`` messages (``06_results`` reads
them) and :data:`FUNNEL_STEPS` count the way from source to sink; without one, ``source_rows``
and ``source_known`` are empty and so is what they make.

Outputs: ``results`` (``schemas.RESULT``), ``verdict_counts``, ``latency_stats`` and
``ledger_next``
(``schemas.LEDGER``; ``ledger_known`` and ``ledger_new`` are its two parts). ``docs/algorithm.md``
explains the algorithm; each file says what it decides.

Around them, steps ``00_*`` prepare a run's inputs (its pending records, the messages the base
run left pending, the ids whose ledger entries it reads, the newest of those entries from a
ledger version's files, and, for a sink scanned whole, the rows and entries worth judging
again), and
steps ``10_*``/``11_*`` decide what the read_uncommitted pass reads and keeps and what the results
store gets (``recon.engines.driver`` runs them in a run's order).
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


#: The steps that judge a run's messages, in order; then :data:`ORDER_STEPS` (without an upsert
#: sink's order, ``order_keys`` empty and the judged relations views); then :data:`RESULT_STEPS`.
VERDICT_STEPS: tuple[Step, ...] = (
    Step("01_checked_records"),
    Step("01_checked_sink_rows"),
    Step("02_joined", keep=True),
    Step("03_general_hashes", keep=True),
    Step("03_general_joined", keep=True),
    Step("03_fast_joined"),
    Step("03_general_ids", keep=True),
    Step("04_fast_verdicts"),
    Step("05_general_classified", keep=True),
    Step("05_general_verdicts", keep=True),
)

#: An upsert sink's order (``order`` declared): how each record stands against its key's sink
#: row, applied to the messages the verdict steps found lost.
ORDER_STEPS: tuple[Step, ...] = (
    Step("05_order_keys", keep=True),
    Step("05_fast_judged"),
    Step("05_general_judged", keep=True),
)

#: A judged run's records and sink rows without an upsert key or position (``order`` declared).
UNORDERED_STEPS: tuple[Step, ...] = (Step("07_unordered"),)

#: A settled source message no committed record carries: ``unpublished`` (run by ``judge``
#: before the results; empty without a source).
SOURCE_STEPS: tuple[Step, ...] = (
    Step("06_source_invalid", keep=True),
    Step("06_source_unmatched", keep=True),
    Step("06_source_repeated", keep=True),
    Step("06_source_judged", keep=True),
)

#: The ids of the source rows that settled in the run (input ``source_rows``): defined before a
#: run's ledger read, whose ids they join (:data:`SOURCE_FACT_STEPS`).
SOURCE_ID_STEPS: tuple[Step, ...] = (Step("00_source_ids"),)

#: A run with a source whose sink has an ingest sequence reads the ledger entries of its facts
#: and of its settled source messages at once (``source_fact_ids``); from them (input
#: ``ledger_all``), the entries the verdict steps judge with (``fact_ledger``).
SOURCE_FACT_STEPS: tuple[Step, ...] = (Step("00_source_fact_ids"),)
FACT_LEDGER_STEPS: tuple[Step, ...] = (Step("00_fact_ledger", keep=True),)

#: The settled source messages the ledger knows (input ``ledger_all``): ``source_in_ledger``,
#: the run's input ``source_known``.
SOURCE_KNOWN_STEPS: tuple[Step, ...] = (Step("00_source_in_ledger", keep=True),)

#: A judged run with a source: its window's messages no source row names, and the counts
#: from source to sink (``funnel``, one row).
FUNNEL_STEPS: tuple[Step, ...] = (
    Step("07_source_unsourced", keep=True),
    Step("07_funnel"),
    Step("07_unsourced_sample"),
)

#: Records that left the pipeline on purpose: a record outside the pipeline's ``expect``
#: (``excluded_ids``, with ``${EXPECTED}`` over ``records.expect_fields``), a record found in a
#: dead-letter or retry topic (``dead_lettered``, ``diverted_ids``, and the dead-letter records
#: that name no record seen, ``dead_letters_unknown``); then :data:`FINAL_STEPS` turn the judged
#: verdicts into ``excluded`` and ``diverted``. Without ``expect`` and ``diverted`` none runs:
#: ``fast_final`` and ``general_final`` are views of the judged relations.
EXCLUDED_STEPS: tuple[Step, ...] = (Step("05_excluded_ids", keep=True),)
DIVERTED_STEPS: tuple[Step, ...] = (
    Step("05_dead_lettered", keep=True),
    Step("05_diverted_ids", keep=True),
    Step("06_dead_letters_unknown", keep=True),
    Step("06_dead_letters_carried"),
)
FINAL_STEPS: tuple[Step, ...] = (Step("05_fast_final"), Step("05_general_final", keep=True))

#: The run's result rows.
RESULT_STEPS: tuple[Step, ...] = (Step("06_results"),)
#: Their counts per verdict, of ``results`` as it stands: judged, or written and read back.
COUNTED_STEPS: tuple[Step, ...] = (Step("07_verdict_counts", keep=True),)

#: A judged run's delivery latencies, per partition and overall (``latency_stats``): run when
#: the pipeline declares ``sink.time_column``.
LATENCY_STEPS: tuple[Step, ...] = (Step("07_latency_stats", keep=True), Step("07_untimed"))

#: The steps that make the next ledger from a judged run.
LEDGER_STEPS: tuple[Step, ...] = (
    Step("08_ledger_judged", keep=True),
    Step("08_ledger_known"),
    Step("08_ledger_new"),
    Step("09_ledger_next"),
)

#: A run's pending input: the records read committed past the window's end (input ``readable``)
#: and the in-flight ones (input ``inflight``).
PENDING_STEPS: tuple[Step, ...] = (Step("00_pending_read"),)

#: The messageIds whose ledger entries a run reads (inputs ``sink_all``, ``carried``).
FACT_STEPS: tuple[Step, ...] = (Step("00_fact_ids"),)

#: The messages the base run left pending (input ``carried_from``: its results, or its ledger).
CARRIED_STEPS: tuple[Step, ...] = (Step("00_carried", keep=True),)

#: A ledger version read: from the stored entries and the results written into the version
#: (inputs ``ledger_stored``, ``ledger_results``; all of them, or at least those of the messages
#: a run meets) to the newest entry of each message (``ledger_newest``).
LEDGER_READ_STEPS: tuple[Step, ...] = (
    Step("00_ledger_entries"),
    Step("00_ledger_newest", keep=True),
)

#: A sink scanned whole (no ingest sequence): from all its rows (``sink_all``) and every ledger
#: entry (``ledger_all``) to the ``sink_rows`` and ``ledger`` the verdict steps judge.
SCAN_STEPS: tuple[Step, ...] = (
    Step("00_scan_changed_ids", keep=True),
    Step("00_scan_sink_rows"),
    Step("00_scan_ledger", keep=True),
)

#: Which partitions the read_uncommitted pass reads (``committed_counts``), and what it found
#: that the committed read did not (``aborted``, from input ``every``).
COUNT_STEPS: tuple[Step, ...] = (Step("10_committed_counts"),)
ABORTED_STEPS: tuple[Step, ...] = (Step("10_aborted", keep=True),)

#: What a judged run hands the results store: its discrepancy rows, their samples, and the
#: number of sink rows it judged.
COMMIT_STEPS: tuple[Step, ...] = (
    Step("11_discrepancies", keep=True),
    Step("11_samples"),
    Step("11_sink_scanned"),
)

#: The relations every engine registers before the first step.
INPUTS = (
    "records", "pending", "sink_rows", "ledger", "uncommitted", "removed_ranges",
    "partition_ends", "compaction_gaps", "replays", "source_rows", "source_known",
    "dead_letters", "target_removed",
)  # fmt: skip

_POSITIONS = 'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT)[]'
_RECORD = (
    ("topic", "VARCHAR"), ("partition", "INTEGER"), ("offset", "BIGINT"),
    ("message_id", "VARCHAR"), ("invalid_reason", "VARCHAR"),
)  # fmt: skip

_LEDGER = (
    ("message_id", "VARCHAR"),
    ("topic", "VARCHAR"),
    ("partition", "INTEGER"),
    ("first_offset", "BIGINT"),
    ("offsets", "BIGINT[]"),
    ("sink_count", "BIGINT"),
    ("first_run_id", "VARCHAR"),
    ("verdict", "VARCHAR"),
    ("positions", _POSITIONS),
)  # fmt: skip

#: The inputs holding ledger entries: ``positions`` may be absent (a ledger written before they
#: were kept), and an entry of a message at one position may store no lists
#: (``recon.rules.run.conform_sql`` derives them). A run's results read as entries
#: (``ledger_results``) store ``positions`` only for a message at several.
LEDGER_INPUTS = ("ledger", "ledger_all", "ledger_stored", "ledger_results")

#: The columns an input may have: a source without one reads it as null.
OPTIONAL_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "records": (
        ("timestamp", "TIMESTAMPTZ"),
        ("payload", "VARCHAR[]"),
        ("order_key", "VARCHAR"),
        ("order_position", "BIGINT"),
        # the texts of the fields the pipeline's expect reads (recon.rules.expect)
        ("expect_fields", "VARCHAR[]"),
    ),
    "sink_rows": (
        ("sink_time", "TIMESTAMPTZ"),
        ("payload", "VARCHAR[]"),
        ("order_key", "VARCHAR"),
        ("order_position", "BIGINT"),
    ),
}
OPTIONAL_COLUMNS["pending"] = OPTIONAL_COLUMNS["readable"] = OPTIONAL_COLUMNS["records"]
OPTIONAL_COLUMNS["inflight"] = OPTIONAL_COLUMNS["every"] = OPTIONAL_COLUMNS["records"]
OPTIONAL_COLUMNS["sink_all"] = OPTIONAL_COLUMNS["sink_rows"]
# A lost message's record time, a pending one's sink row time and whether a committed record of
# it was read (schemas.RESULT): entries written before they were kept have none.
for _name in LEDGER_INPUTS:
    OPTIONAL_COLUMNS[_name] = (
        ("record_time_ms", "BIGINT"),
        ("sink_time_ms", "BIGINT"),
        ("committed_seen", "BOOLEAN"),  # a pending message read as a committed record
    )

#: The columns each input must have, in DuckDB's types (the Spark engine renders them).
INPUT_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "records": _RECORD,
    "pending": _RECORD,
    "sink_rows": (("sink_key", "VARCHAR"), ("message_id", "VARCHAR")),
    "ledger": _LEDGER,
    # A version's entries, with their directory's place in its manifest (``recon.ledger``).
    "ledger_stored": (*_LEDGER, ("_seq", "INTEGER")),
    # The result rows of a run's results written into a version, as the same columns.
    "ledger_results": (*_LEDGER, ("_seq", "INTEGER")),
    "carried_from": (("message_id", "VARCHAR"), ("verdict", "VARCHAR")),
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
    "partition_ends": (
        ("partition", "INTEGER"),
        ("window_to", "BIGINT"),
        ("log_start", "BIGINT"),
        ("last_stable", "BIGINT"),
    ),  # fmt: skip
    "compaction_gaps": (
        ("topic", "VARCHAR"),
        ("partition", "INTEGER"),
        ("from_offset", "BIGINT"),
        ("to_offset", "BIGINT"),
        ("missing", "BIGINT"),
        ("detail", "VARCHAR"),
    ),  # fmt: skip
    "replays": (("topic", "VARCHAR"), ("partition", "INTEGER"), ("offset", "BIGINT")),
    "target_removed": (("detail", "VARCHAR"),),
    "carried": (("message_id", "VARCHAR"),),
    "source_rows": (("message_id", "VARCHAR"), ("source_key", "VARCHAR"), ("judge", "BOOLEAN")),
    "source_known": (("message_id", "VARCHAR"),),
    "dead_letters": (
        ("message_id", "VARCHAR"),
        ("dl_topic", "VARCHAR"),
        ("dl_partition", "INTEGER"),
        ("dl_offset", "BIGINT"),
        ("orig_topic", "VARCHAR"),
        ("orig_partition", "INTEGER"),
        ("orig_offset", "BIGINT"),
        ("error", "VARCHAR"),
    ),
}
# The inputs of the steps around the verdict steps, with the columns of the one they stand for.
INPUT_COLUMNS["readable"] = INPUT_COLUMNS["inflight"] = INPUT_COLUMNS["every"] = _RECORD
INPUT_COLUMNS["sink_all"] = INPUT_COLUMNS["sink_rows"]
INPUT_COLUMNS["ledger_all"] = INPUT_COLUMNS["ledger"]
