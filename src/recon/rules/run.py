"""The engine seam, and the one driver that runs the rule steps through it.

An engine registers the run's inputs under the names the rules read (``recon.rules.INPUTS``),
runs each step's statement as the relation the step names, and hands back the small results the
driver needs (the verdict counts). Nothing here knows which engine it drives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from recon.model.verdicts import ALL_VERDICTS, Verdict
from recon.rules import (
    COUNTED_STEPS,
    DIVERTED_STEPS,
    EXCLUDED_STEPS,
    FINAL_STEPS,
    INPUT_COLUMNS,
    LEDGER_INPUTS,
    LEDGER_STEPS,
    OPTIONAL_COLUMNS,
    ORDER_STEPS,
    RESULT_STEPS,
    SOURCE_ID_STEPS,
    SOURCE_STEPS,
    VERDICT_STEPS,
    Step,
)
from recon.rules.judging import Judging
from recon.rules.render import for_dialect, literal, render

UnverifiableRows = Sequence[tuple[str, int, int, int]]
PartitionEnds = Sequence[tuple[int, ...]]
#: ``(topic, partition, offset)`` of each record a repair replayed.
Replays = Sequence[tuple[str, int, int]]


class RuleEngine(Protocol):
    """What the driver asks of an engine (``recon.engines.duckdb``, ``recon.engines.spark``)."""

    #: The dialect the rules are rendered for: ``duckdb`` or ``spark``.
    dialect: str

    def define(self, name: str, statement: str, *, keep: bool = False) -> None:
        """Make ``statement`` (in :attr:`dialect`) the relation ``name``.

        :param keep: materialise it (it is read more than once).
        """

    def rows(self, name: str) -> list[tuple[Any, ...]]:
        """Every row of a small relation."""

    def use(self, name: str, source: Any | None) -> None:
        """Input ``name`` read from the engine's own relation ``source`` (None: empty)."""

    def relation(self, name: str) -> Any:
        """The defined relation ``name`` as the engine's own relation (what :meth:`use` takes)."""

    def reread(self, name: str, source: Any) -> None:
        """The defined relation ``name`` read from here on from the engine's own relation
        ``source``, which holds the same rows (the run's results once written: reading the file
        back costs less than computing them again). Relations defined before may read either
        (a DuckDB view names it, a Spark view holds its plan): the rows are the same."""

    def scratch(self) -> RuleEngine:
        """The same engine with a namespace of its own: relations it defines never replace this
        one's (e.g. a ledger version compacted while a run's relations are in use)."""

    def close(self) -> None:
        """Free what a :meth:`scratch` namespace holds (its kept relations, its connection or
        session); the namespace is not used after."""


def _columns(name: str) -> tuple[tuple[str, str], ...]:
    return INPUT_COLUMNS[name] + OPTIONAL_COLUMNS.get(name, ())


def empty_sql(name: str) -> str:
    """A statement (DuckDB dialect) for input ``name`` with no rows, its columns typed."""
    columns = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in _columns(name))
    return f"SELECT {columns} WHERE false"


def conform_sql(name: str, source: str, present: Iterable[str]) -> str:
    """A statement (DuckDB dialect) reading input ``name`` from relation ``source`` with the
    declared columns and types. A ledger entry that stores no lists (a message at one position)
    gets them from ``first_offset``; a ledger without ``positions`` derives them all.

    :raises InputSchemaError: ``source`` lacks a declared column.

    :param present: the columns ``source`` has.
    """
    have = set(present)
    is_ledger = name in LEDGER_INPUTS
    optional = {"positions"} if is_ledger else set()
    missing = [c for c, _ in INPUT_COLUMNS[name] if c not in have and c not in optional]
    if missing:
        from recon.errors import InputSchemaError

        expected = ", ".join(f"{c} {t}" for c, t in INPUT_COLUMNS[name])
        raise InputSchemaError(
            f"{name}: missing column(s) {', '.join(missing)} (expected {expected})"
        )
    typed = {
        c: (f'CAST("{c}" AS {t})' if c in have else f"CAST(NULL AS {t})") for c, t in _columns(name)
    }
    if is_ledger:
        offsets = (
            f"coalesce({typed['offsets']}, CASE WHEN first_offset IS NULL THEN "
            "CAST([] AS BIGINT[]) ELSE [CAST(first_offset AS BIGINT)] END)"
        )
        position = (
            "CAST({'topic': topic, 'partition': \"partition\", 'offset': o} AS "
            'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT))'
        )
        typed["offsets"] = offsets
        typed["positions"] = (
            f"coalesce({typed['positions']}, list_transform({offsets}, o -> {position}))"
        )
    columns = ", ".join(f'{e} AS "{c}"' for c, e in typed.items())
    return f"SELECT {columns} FROM {source}"


def values_sql(name: str, rows: Iterable[Sequence[Any]]) -> str:
    """A statement (DuckDB dialect) for input ``name`` holding ``rows`` (numbers and text)."""
    spec = INPUT_COLUMNS[name]

    def value(v: Any) -> str:
        return literal(v) if isinstance(v, str) else str(int(v))

    listed = [f"({', '.join(value(v) for v in row)})" for row in rows]
    if not listed:
        return empty_sql(name)
    casts = ", ".join(f'CAST(v{i} AS {t}) AS "{c}"' for i, (c, t) in enumerate(spec))
    names = ", ".join(f"v{i}" for i in range(len(spec)))
    return f"SELECT {casts} FROM (VALUES {', '.join(listed)}) AS v({names})"


def register_parameters(
    engine: RuleEngine,
    unverifiable: UnverifiableRows | None,
    partition_ends: PartitionEnds | None,
    replays: Replays | None = None,
    compaction_gaps: Sequence[tuple[Any, ...]] | None = None,
    target_removed: str | None = None,
) -> None:
    """The run's parameters as the relations ``removed_ranges``, ``partition_ends``,
    ``replays``, ``compaction_gaps`` and ``target_removed``.

    :param unverifiable: ``(topic, partition, from_offset, log_start_offset)`` per partition;
        only those whose window starts below the log-start offset are kept.
    :param partition_ends: ``(partition, window_to, log_start_offset[, last_stable_offset])``
        per partition; without the last stable offset, the window's end stands for it (no
        pending record counts as read committed).
    :param replays: ``(topic, partition, offset)`` of each record a repair replayed.
    :param compaction_gaps: ``recon.engines.pending.compaction_gaps``'s rows (none: no gaps).
    :param target_removed: what a Kafka sink's retention removed before the run read it, in
        words (``recon.read.target_copy``; None: nothing, or a table sink).
    """
    removed = [u for u in (unverifiable or ()) if u[2] < u[3]]
    ends = [tuple(e) if len(e) > 3 else (*e, e[1]) for e in (partition_ends or ())]
    target = [(target_removed,)] if target_removed else []
    for name, rows in (("removed_ranges", removed), ("partition_ends", ends),
                       ("replays", replays or ()),
                       ("compaction_gaps", compaction_gaps or ()),
                       ("target_removed", target)):  # fmt: skip
        # Not kept: a list of values is no plan to cut, and Spark sizes it (and prunes it when
        # empty) as it plans; keeping it cost two Spark jobs each (0.14-0.19 s on Connect).
        engine.define(name, for_dialect(values_sql(name, rows), engine.dialect))


def register_empty(engine: RuleEngine, name: str) -> None:
    """Input ``name`` as an empty relation (the run has none of it)."""
    engine.define(name, for_dialect(empty_sql(name), engine.dialect))


def judge_inputs(
    engine: RuleEngine,
    inputs: Mapping[str, Any | None],
    unverifiable: UnverifiableRows | None,
    partition_ends: PartitionEnds | None,
    judging: Judging | None = None,
    replays: Replays | None = None,
    *,
    named_once: bool = False,
    target_removed: str | None = None,
) -> dict[str, int]:
    """Register a run's inputs and judge it (:func:`judge`).

    :param inputs: the engine's relations by input name (``records``, ``sink_rows``, ``ledger``,
        ``pending``, ``uncommitted``, ``source_rows``, ``source_known``, ``dead_letters``); a
        name absent or None
        is an empty input.
    :param judging: the pipeline's declared checks (:func:`judge`).
    :param replays: ``(topic, partition, offset)`` of each record a repair replayed.
    :param named_once: the source names each messageId in one row at most (:func:`judge`).
    :param target_removed: see :func:`register_parameters`.
    """
    for name in ("records", "sink_rows", "ledger", "pending", "uncommitted", "source_rows",
                 "source_known", "dead_letters"):  # fmt: skip
        engine.use(name, inputs.get(name))
    run_steps(engine, SOURCE_ID_STEPS)
    # The sink as a whole: what an upsert sink's order is judged against (the run's rows here).
    engine.use("sink_all", inputs.get("sink_all", inputs.get("sink_rows")))
    register_parameters(
        engine, unverifiable, partition_ends, replays, target_removed=target_removed
    )
    sourced = inputs.get("source_rows") is not None
    return judge(engine, judging, sourced=sourced, named_once=named_once)


def judge(
    engine: RuleEngine,
    judging: Judging | None = None,
    *,
    sourced: bool = False,
    named_once: bool = False,
) -> dict[str, int]:
    """Run the verdict steps over the registered inputs (:func:`judge_steps`); the counts per
    verdict (:func:`count_verdicts`)."""
    judge_steps(engine, judging, sourced=sourced, named_once=named_once)
    return count_verdicts(engine)


def judge_steps(
    engine: RuleEngine,
    judging: Judging | None = None,
    *,
    sourced: bool = False,
    named_once: bool = False,
) -> None:
    """Run the verdict steps over the registered inputs (``source_ids`` defined: see
    ``recon.rules.SOURCE_ID_STEPS``), up to the relation ``results``.

    :param judging: the pipeline's declared checks: the latency bound and the payload
        comparison (None: neither).
    :param sourced: the run has a source (``source_rows``): its messages are met with the
        joined rows; without one nothing is unpublished, and the window is not read again to
        say so.
    :param named_once: the source is known to name each messageId in one row at most
        (``recon.read.source.named_once``): the ids named twice are not searched for.
    """
    judging = judging or Judging()
    params = judging.params()
    run_steps(engine, VERDICT_STEPS, params)
    if judging.ordered:
        run_steps(engine, ORDER_STEPS, params)
    else:
        # No order changes a verdict, but the judged relations still keep the times only where a
        # later run measures from them: views over the verdicts, their join with nothing.
        engine.define("order_keys", NO_ORDER_KEYS)
        run_steps(engine, [Step(s.file) for s in ORDER_STEPS if s.relation != "order_keys"])
    if sourced:
        # A source known to name each id once has no repeated ids to search for.
        skipped = "source_repeated" if named_once else None
        if skipped is not None:
            engine.define(skipped, NO_SOURCE_ROWS[skipped])
        run_steps(engine, [s for s in SOURCE_STEPS if s.relation != skipped], params)
    else:
        for name in ("source_judged", "source_invalid"):
            engine.define(name, NO_SOURCE_ROWS[name])
    account_steps(engine, judging, params)
    run_steps(engine, RESULT_STEPS, params)


def account_steps(engine: RuleEngine, judging: Judging, params: Mapping[str, str]) -> None:
    """The records that left the pipeline on purpose (``recon.rules.EXCLUDED_STEPS``,
    ``DIVERTED_STEPS``, ``FINAL_STEPS``): run only for what the pipeline declares; without
    ``expect`` and ``diverted``, ``fast_final`` and ``general_final`` are views of the judged
    relations (the default path joins nothing more)."""
    if judging.expect is not None:
        run_steps(engine, EXCLUDED_STEPS, params)
    else:
        engine.define("excluded_ids", NO_ACCOUNTED["excluded_ids"])
    if judging.diverted:
        run_steps(engine, DIVERTED_STEPS, params)
    else:
        for name in ("diverted_ids", "dead_letters_unknown", "dead_letters_carried"):
            engine.define(name, for_dialect(NO_ACCOUNTED[name], engine.dialect))
    if judging.expect is None and not judging.diverted:
        engine.define("fast_final", "SELECT * FROM fast_judged")
        engine.define("general_final", "SELECT * FROM general_judged")
    else:
        run_steps(engine, FINAL_STEPS, params)


def count_verdicts(engine: RuleEngine) -> dict[str, int]:
    """The rows per verdict of the relation ``results`` as it stands (``07_verdict_counts``):
    judged (:func:`judge_steps`), or written and read back (``RuleEngine.reread``), where the
    count reads three columns of the file instead of judging every message again.

    :returns: rows per verdict (every verdict present, 0 when absent) and the number of rows
        flagged ``topic_duplicate``.
    """
    run_steps(engine, COUNTED_STEPS)
    counts = dict.fromkeys(ALL_VERDICTS, 0)
    flagged = 0
    for verdict, n, duplicates, _with_sink_rows in engine.rows("verdict_counts"):
        counts[verdict] = int(n)
        flagged += int(duplicates)
    counts[Verdict.TOPIC_DUPLICATE.value] = flagged
    return counts


#: ``05_order_keys``'s relation as an empty one, shaped as its rule file makes it: for a run whose
#: pipeline declares no order.
NO_ORDER_KEYS = (
    "SELECT message_id, verdict AS order_verdict, verdict AS order_detail "
    "FROM fast_verdicts WHERE false"
)

#: The source steps' relations as empty ones, shaped as their rule files make them: for a run
#: without a source (what ``06_results`` reads of them), and ``source_repeated`` for a source
#: known to name each messageId once.
NO_SOURCE_ROWS = {
    "source_judged": "SELECT message_id, message_id AS source_key, CAST(0 AS BIGINT) AS n_rows "
    "FROM source_ids WHERE false",
    "source_invalid": "SELECT message_id, source_key FROM source_rows WHERE false",
    "source_repeated": "SELECT message_id, CAST(0 AS BIGINT) AS n_rows FROM source_ids WHERE false",
}

#: The relations of :func:`account_steps` a pipeline's declaration does not ask for, empty and
#: shaped as their rule files make them (DuckDB's dialect).
NO_ACCOUNTED = {
    "excluded_ids": "SELECT message_id FROM records WHERE false",
    "diverted_ids": "SELECT message_id, CAST(0 AS BIGINT) AS n, message_id AS detail "
    "FROM records WHERE false",
    "dead_letters_unknown": empty_sql("dead_letters"),
    "dead_letters_carried": "SELECT CAST(NULL AS VARCHAR) AS dl_topic, "
    "CAST(NULL AS INTEGER) AS dl_partition, CAST(NULL AS BIGINT) AS dl_offset WHERE false",
}


def next_ledger(engine: RuleEngine, run_id: str) -> None:
    """Run the ledger steps after :func:`judge`: ``ledger_known``, ``ledger_new`` and
    ``ledger_next``.

    :param run_id: recorded as ``first_run_id`` of the messages new to the ledger.
    """
    run_steps(engine, LEDGER_STEPS, {"RUN_ID": literal(run_id)})


def run_steps(
    engine: RuleEngine, steps: Sequence[Step], params: Mapping[str, str] | None = None
) -> None:
    """Define each step's relation, in order.

    :param params: placeholders beyond the shared vocabulary, already SQL literals.
    """
    for step in steps:
        engine.define(step.relation, render(step.file, engine.dialect, params), keep=step.keep)
