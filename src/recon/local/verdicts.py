"""The verdict table of ``recon.reconcile``, in DuckDB SQL over relations of the same shapes.

The rules are those of ``recon.reconcile`` (its docstring is the specification, and the unit
tests run every named scenario through both engines). What differs is the plan, chosen for one
machine:

1. Split off invalid records and sink rows, as there.
2. **Fast path.** Join the window's records and the new sink rows on the messageId (one hash
   join, no grouping). A messageId with at most one record, at most one sink row and nothing
   else known (no pending or aborted record, no ledger entry) is decided from its joined row
   alone: delivered, lost, or phantom / unverifiable. That is nearly every message of a window.
3. **General path.** The other messageIds (more than one joined row, or a pending record, an
   aborted record or a ledger entry) get the full treatment of ``recon.reconcile``: every fact
   stacked, grouped by messageId, classified with the same table.

Counting the joined rows per messageId is the only grouping over the whole window; lists are
built only in the general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recon import details
from recon.verdicts import JUDGED, LEDGER_VERDICTS, UNMATCHED, Verdict

UnverifiableRows = Sequence[tuple[str, int, int, int]]
PartitionEnds = Sequence[tuple[int, int, int]]

_MAX_POSITIONS_IN_DETAIL = 20
POSITION_TYPE = 'STRUCT("topic" VARCHAR, "partition" INTEGER, "offset" BIGINT)'
RESULT_COLUMNS = (
    "verdict", "message_id", "topic", "partition", "offsets", "first_offset", "sink_count",
    "sink_keys", "topic_duplicate", "detail", "positions",
)  # fmt: skip


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def _id_ok(column: str = "message_id") -> str:
    """Not null, not empty, not only spaces. CASE evaluates lazily: only an id that starts with a
    space is trimmed (a new string per row otherwise)."""
    return (
        f"CASE WHEN {column} IS NULL OR {column} = '' THEN false "
        f"WHEN starts_with({column}, ' ') THEN trim({column}) <> '' ELSE true END"
    )


def _record_ok() -> str:
    return f"(CASE WHEN invalid_reason IS NULL THEN {_id_ok()} ELSE false END)"


def _pos(alias: str = "") -> str:
    a = f"{alias}." if alias else ""
    return (
        f"{{'topic': {a}topic, 'partition': {a}\"partition\", 'offset': {a}\"offset\"}}"
        f"::{POSITION_TYPE}"
    )


def _listed(positions: str) -> str:
    return (
        f"array_to_string(list_transform(({positions})[1:{_MAX_POSITIONS_IN_DETAIL}], "
        "p -> printf('%s/%d@%d', p.topic, p.partition, p.offset)), ', ')"
    )


def conform_ledger_sql(ledger: str) -> str:
    """The ledger as ``schemas.LEDGER``, ``positions`` derived when the relation has none."""
    return f"""
        SELECT message_id, topic, "partition", first_offset, offsets, sink_count::BIGINT
               AS sink_count, first_run_id, verdict, positions FROM {ledger}
    """


def ledger_with_positions(con: Any, ledger: str) -> str:
    """``ledger``, or a view of it with ``positions`` derived from topic, partition, offsets."""
    columns = {row[0] for row in con.execute(f"DESCRIBE {ledger}").fetchall()}
    if "positions" in columns:
        return ledger
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW recon_ledger_positioned AS
        SELECT *, list_transform(offsets, o -> {{'topic': topic, 'partition': "partition",
               'offset': o}}::{POSITION_TYPE}) AS positions FROM {ledger}"""
    )
    return "recon_ledger_positioned"


def reconcile(
    con: Any,
    *,
    window: str,
    sink_rows: str,
    ledger: str | None = None,
    pending: str | None = None,
    uncommitted: str | None = None,
    unverifiable: UnverifiableRows | None = None,
    partition_ends: PartitionEnds | None = None,
    into: str = "recon_results",
) -> str:
    """One verdict row per message (and per invalid record / sink row, per unverifiable
    partition) into the temporary table ``into``.

    :param con: a DuckDB connection where the inputs are visible by name.
    :param window: ``schemas.WINDOW`` rows: committed records read in ``[from, to)``.
    :param sink_rows: ``schemas.SINK_ROWS`` rows added since the previous run.
    :param ledger: ``schemas.LEDGER`` entries of earlier runs (``positions`` optional).
    :param pending: ``schemas.PENDING`` records not judged yet.
    :param uncommitted: ``schemas.UNCOMMITTED`` records seen only reading uncommitted.
    :param unverifiable: ``(topic, partition, from_offset, log_start_offset)`` per partition.
    :param partition_ends: ``(partition, window_to, log_start_offset)`` per partition: where a
        pending ledger entry's records stop being pending (``recon.reconcile.reconcile``).
    :returns: ``into``, shaped as ``schemas.RESULT``.
    """
    removed = [u for u in (unverifiable or ()) if u[2] < u[3]]
    run_unverifiable = "true" if removed else "false"
    ok = _record_ok()
    # Each input is read once; the invalid rows and the general path come from these tables.
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_w AS
        SELECT message_id, topic, "partition", "offset", invalid_reason, {ok} AS ok
        FROM {window}"""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_s AS
        SELECT sink_key, message_id, {_id_ok()} AS ok FROM {sink_rows}"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE recon_j AS
        SELECT coalesce(w.message_id, s.message_id) AS message_id, w.topic, w."partition",
               w."offset", s.sink_key
        FROM (SELECT message_id, topic, "partition", "offset" FROM recon_w WHERE ok) w
        FULL OUTER JOIN (SELECT message_id, sink_key FROM recon_s WHERE ok) s
        ON w.message_id = s.message_id"""
    )
    others = []
    if pending:
        others.append(f"SELECT message_id FROM {pending} WHERE {ok}")
    if uncommitted:
        others.append(f"SELECT message_id FROM {uncommitted} WHERE {_id_ok()}")
    if ledger:
        ledger = ledger_with_positions(con, ledger)
        others.append(f"SELECT message_id FROM {ledger}")
    # Messages with more than one joined row, found by their 64-bit hash (grouping integers is
    # cheaper than grouping strings); a collision only sends a message the general way too.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE recon_multi_hash AS SELECT DISTINCT h FROM ("
        + " UNION ALL ".join(
            ["SELECT hash(message_id) AS h FROM recon_j GROUP BY h HAVING count(*) > 1"]
            + [f"SELECT hash(message_id) AS h FROM ({o})" for o in others]
        )
        + ")"
    )
    # The joined rows of the general path's messages move out of the join, which then holds
    # the fast path's messages only.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE recon_j_multi AS SELECT * FROM recon_j "
        "WHERE hash(message_id) IN (SELECT h FROM recon_multi_hash)"
    )
    con.execute("DELETE FROM recon_j WHERE hash(message_id) IN (SELECT h FROM recon_multi_hash)")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE recon_multi AS SELECT DISTINCT message_id FROM ("
        + " UNION ALL ".join(["SELECT message_id FROM recon_j_multi", *others])
        + ")"
    )
    general = _general_path_sql(ledger, pending, uncommitted, run_unverifiable, partition_ends)
    rest = [general, _invalid_records_sql(), _invalid_sink_rows_sql()]
    if removed:
        values = ", ".join(
            f"('{_quote(t)}', {int(p)}, {int(f)}, {int(log_start)})"
            for t, p, f, log_start in removed
        )
        rest.append(_unverifiable_sql(values))
    columns = ", ".join(f'"{c}"' for c in RESULT_COLUMNS)
    # The few messages of the general path (and the invalid rows) are materialised; the many of
    # the fast path stay a view over the join, so that their lists are built only while they
    # are written out.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE recon_rest AS "
        + " UNION ALL ".join(f"SELECT {columns} FROM ({p})" for p in rest)
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE {into}_rest AS SELECT * FROM recon_rest")
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {into}_fast AS {_fast_verdicts_sql(run_unverifiable)}"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {into} AS SELECT {columns} FROM ({_fast_path_sql(into)}) "
        f"UNION ALL SELECT {columns} FROM {into}_rest"
    )
    return into


def _quote(text: str) -> str:
    return text.replace("'", "''")


def sql_literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return f"'{_quote(text)}'"


_literal = sql_literal


def _ends_sql(ends: PartitionEnds | None) -> tuple[str, str]:
    """``(expired, gone)`` of a pending ledger entry (``recon.reconcile._expiry``): every record
    it was seen at is behind the window's end or removed, and one of them is below the
    log-start offset."""
    if not ends:
        return "false", "false"

    def per_partition(values: list[tuple[int, int]]) -> str:
        cases = " ".join(f"WHEN {int(p)} THEN {int(v)}" for p, v in values)
        return f'CASE p."partition" {cases} END'

    passed = per_partition([(p, max(to, start)) for p, to, start in ends])
    log_start = per_partition([(p, start) for p, _, start in ends])
    behind = (
        f'len(l_pos) > 0 AND len(list_filter(l_pos, p -> coalesce(p."offset" < {passed}, '
        "false) = false)) = 0"
    )
    gone = f'len(list_filter(l_pos, p -> coalesce(p."offset" < {log_start}, false))) > 0'
    return behind, gone


def _fast_verdicts_sql(run_unverifiable: str) -> str:
    """The fast path's messages, one scalar row each: the verdict and the joined row."""
    v = Verdict
    return f"""
        SELECT
            CASE WHEN "offset" IS NOT NULL AND sink_key IS NOT NULL THEN '{v.DELIVERED}'
                 WHEN "offset" IS NOT NULL THEN '{v.LOST}'
                 WHEN {run_unverifiable} THEN '{v.UNVERIFIABLE}'
                 ELSE '{v.PHANTOM}' END AS verdict,
            message_id, topic, "partition", "offset", sink_key
        FROM recon_j
    """


def _fast_path_sql(results: str) -> str:
    """The fast path's messages as ``schemas.RESULT`` rows (lists built here, as they are read)."""
    v = Verdict
    return f"""
        SELECT
            verdict, message_id, topic, "partition",
            CASE WHEN "offset" IS NOT NULL THEN ["offset"] ELSE []::BIGINT[] END AS offsets,
            "offset" AS first_offset,
            (sink_key IS NOT NULL)::BIGINT AS sink_count,
            CASE WHEN sink_key IS NOT NULL THEN [sink_key] ELSE []::VARCHAR[] END AS sink_keys,
            false AS topic_duplicate,
            CASE verdict WHEN '{v.DELIVERED}' THEN NULL
                 WHEN '{v.LOST}' THEN 'no sink row for a committed record'
                 WHEN '{v.UNVERIFIABLE}' THEN {_literal(details.NOT_FOUND_REMOVED)}
                 ELSE {_literal(details.PHANTOM)}
            END AS detail,
            CASE WHEN "offset" IS NOT NULL THEN [{_pos()}] ELSE []::{POSITION_TYPE}[] END
                AS positions
        FROM {results}_fast
    """


def _general_path_sql(
    ledger: str | None,
    pending: str | None,
    uncommitted: str | None,
    run_unverifiable: str,
    partition_ends: PartitionEnds | None = None,
) -> str:
    ok = _record_ok()
    behind, gone = _ends_sql(partition_ends)
    empty_pos = f"NULL::{POSITION_TYPE}"
    no_ledger = f"NULL::BIGINT, NULL::VARCHAR, NULL::VARCHAR, NULL::{POSITION_TYPE}[]"

    def fact(source: str, tag: str, where: str) -> str:
        pos = _pos() if tag in ("w", "p", "u") else empty_pos
        key = "sink_key" if tag == "s" else "NULL::VARCHAR"
        ledger_cols = (
            "sink_count::BIGINT, verdict, first_run_id, positions" if tag == "l" else no_ledger
        )
        return (
            f"SELECT message_id, '{tag}' AS src, {pos} AS pos, {key} AS sink_key, {ledger_cols} "
            f"FROM {source} WHERE {where} AND message_id IN (SELECT message_id FROM recon_multi)"
        )

    # The window's records and the sink rows of these messages are in their joined rows: each
    # record position and each sink key (a primary key, or ctid) is one fact.
    facts = [
        f"SELECT DISTINCT message_id, 'w' AS src, {_pos()} AS pos, NULL::VARCHAR AS sink_key, "
        f'{no_ledger} FROM recon_j_multi WHERE "offset" IS NOT NULL',
        f"SELECT DISTINCT message_id, 's' AS src, {empty_pos} AS pos, sink_key, {no_ledger} "
        "FROM recon_j_multi WHERE sink_key IS NOT NULL",
    ]
    if pending:
        facts.append(fact(pending, "p", ok))
    if uncommitted:
        facts.append(fact(uncommitted, "u", _id_ok()))
    if ledger:
        facts.append(fact(ledger, "l", "true"))
    stacked = " UNION ALL ".join(facts)

    def positions_of(tag: str) -> str:
        return (
            f"coalesce(list_sort(list_distinct(list(pos) FILTER (WHERE src = '{tag}'))), "
            f"[]::{POSITION_TYPE}[])"
        )

    def union(a: str, b: str) -> str:
        return f"list_sort(list_distinct(list_concat({a}, {b})))"

    v = Verdict
    judged = _in(JUDGED)
    grouped = f"""
        SELECT message_id,
               {positions_of("w")} AS w_pos, {positions_of("p")} AS p_pos,
               {positions_of("u")} AS u_pos,
               count(*) FILTER (WHERE src = 's') AS n_new,
               coalesce(list_sort(list(sink_key) FILTER (WHERE src = 's'
                        AND sink_key IS NOT NULL)), []::VARCHAR[]) AS new_keys,
               max(l_sink_count) AS l_sink_count, max(l_verdict) AS l_verdict_raw,
               max(l_first_run_id) AS l_first_run_id,
               first(l_positions) FILTER (WHERE l_positions IS NOT NULL) AS l_pos_raw
        FROM ({stacked}) AS facts(message_id, src, pos, sink_key, l_sink_count, l_verdict,
                                  l_first_run_id, l_positions)
        GROUP BY message_id
    """
    flags = f"""
        SELECT *, coalesce(l_sink_count, 0) + n_new AS total,
               coalesce(l_verdict_raw, '') AS l_verdict,
               coalesce(l_pos_raw, []::{POSITION_TYPE}[]) AS l_pos,
               len(w_pos) > 0 AS has_w, len(p_pos) > 0 AS has_p, len(u_pos) > 0 AS has_u
        FROM ({grouped})
    """
    states = f"""
        SELECT *, has_w OR (l_verdict IN {judged} AND n_new > 0) AS judged,
               ({behind}) AS behind, ({gone}) AS gone
        FROM ({flags})
    """
    states1 = f"""
        SELECT *, NOT judged AND NOT has_p AND l_verdict = '{v.PENDING}' AND behind AS expired
        FROM ({states})
    """
    states2 = f"""
        SELECT *, NOT judged AND NOT expired AND (has_p OR l_verdict = '{v.PENDING}')
               AS pending_now
        FROM ({states1})
    """
    classified = f"""
        SELECT *,
            CASE WHEN judged AND total = 0 THEN '{v.LOST}'
                 WHEN judged AND total = 1 THEN '{v.DELIVERED}'
                 WHEN judged THEN '{v.DUPLICATED}'
                 WHEN pending_now THEN '{v.PENDING}'
                 WHEN expired AND has_u THEN '{v.ABORTED_READ}'
                 WHEN expired AND gone THEN '{v.UNVERIFIABLE}'
                 WHEN expired THEN '{v.PHANTOM}'
                 WHEN n_new > 0 AND has_u THEN '{v.ABORTED_READ}'
                 WHEN n_new > 0 AND {run_unverifiable} THEN '{v.UNVERIFIABLE}'
                 WHEN n_new > 0 THEN '{v.PHANTOM}' END AS verdict,
            CASE WHEN judged THEN {union("w_pos", "l_pos")}
                 WHEN pending_now THEN {union("p_pos", "l_pos")}
                 WHEN has_u THEN u_pos
                 WHEN expired THEN l_pos
                 ELSE []::{POSITION_TYPE}[] END AS positions
        FROM ({states2})
    """
    flagged = f"""
        SELECT *, judged AND len(positions) > 1 AS topic_duplicate,
               coalesce(l_first_run_id, '?') AS first_run
        FROM ({classified}) WHERE verdict IS NOT NULL
    """
    return f"""
        SELECT verdict, message_id, positions[1].topic AS topic,
               positions[1]."partition" AS "partition",
               list_sort(list_transform(positions, p -> p."offset")) AS offsets,
               positions[1]."offset" AS first_offset, total::BIGINT AS sink_count,
               new_keys AS sink_keys, topic_duplicate, {_detail_sql()} AS detail, positions
        FROM ({flagged})
    """


def _detail_sql() -> str:
    """Why the verdict, as ``recon.reconcile._message_detail`` words it."""
    v = Verdict
    judged = _in(JUDGED)
    listed = _listed("positions")
    parts = [
        f"CASE WHEN verdict = '{v.LOST}' THEN 'no sink row for a committed record' END",
        f"CASE WHEN verdict = '{v.DUPLICATED}' THEN "
        "printf('%d sink rows, %d new in this run', total, n_new) END",
        f"CASE WHEN verdict = '{v.DUPLICATED}' AND l_verdict = '{v.LOST}' THEN "
        f"{_literal(details.LATE_DELIVERY)} || first_run || ')' END",
        f"CASE WHEN verdict = '{v.DELIVERED}' AND l_verdict = '{v.LOST}' THEN "
        f"{_literal(details.LATE_DELIVERY)} || first_run || ')' END",
        f"CASE WHEN l_verdict IN {judged} AND has_w THEN "
        "'read again (group reset or replay), first seen in run ' || first_run END",
        f"CASE WHEN l_verdict IN {judged} AND NOT has_w AND verdict IN {judged} THEN "
        "'new sink rows for a message first seen in run ' || first_run END",
        f"CASE WHEN l_verdict IN {_in(UNMATCHED)} AND verdict IN {judged} THEN "
        "'its sink rows were reported as ' || l_verdict || ' before the record was committed "
        "(first seen in run ' || first_run || ')' END",
        "CASE WHEN topic_duplicate THEN 'in the topic at ' || len(positions) || ' positions: ' "
        f"|| {listed} END",
        f"CASE WHEN verdict = '{v.PENDING}' THEN {_literal(details.PENDING)} END",
        f"CASE WHEN verdict = '{v.ABORTED_READ}' THEN "
        f"'id only in records of aborted transactions: ' || {listed} END",
        f"CASE WHEN verdict = '{v.UNVERIFIABLE}' AND expired THEN "
        f"{_literal(details.PENDING_REMOVED)} || {listed} END",
        f"CASE WHEN verdict = '{v.UNVERIFIABLE}' AND NOT expired THEN "
        f"{_literal(details.NOT_FOUND_REMOVED)} END",
        f"CASE WHEN verdict = '{v.PHANTOM}' AND expired THEN "
        f"{_literal(details.PENDING_NEVER_COMMITTED)} || {listed} END",
        f"CASE WHEN verdict = '{v.PHANTOM}' AND NOT expired THEN {_literal(details.PHANTOM)} END",
    ]
    return "NULLIF(concat_ws('; ', " + ", ".join(parts) + "), '')"


def _invalid_records_sql() -> str:
    return f"""
        SELECT '{Verdict.INVALID}' AS verdict, message_id, topic, "partition",
               ["offset"] AS offsets, "offset" AS first_offset, 0::BIGINT AS sink_count,
               []::VARCHAR[] AS sink_keys, false AS topic_duplicate,
               coalesce(invalid_reason, 'missing message id') AS detail, [{_pos()}] AS positions
        FROM recon_w WHERE NOT ok
    """


def _invalid_sink_rows_sql() -> str:
    return f"""
        SELECT '{Verdict.INVALID}' AS verdict, message_id, NULL::VARCHAR AS topic,
               NULL::INTEGER AS "partition", []::BIGINT[] AS offsets,
               NULL::BIGINT AS first_offset, 1::BIGINT AS sink_count, [sink_key] AS sink_keys,
               false AS topic_duplicate, 'sink row without a message id' AS detail,
               []::{POSITION_TYPE}[] AS positions
        FROM recon_s WHERE NOT ok
    """


def _unverifiable_sql(values: str) -> str:
    return f"""
        SELECT '{Verdict.UNVERIFIABLE}' AS verdict, NULL::VARCHAR AS message_id, topic,
               "partition"::INTEGER AS "partition", []::BIGINT[] AS offsets,
               from_offset::BIGINT AS first_offset, 0::BIGINT AS sink_count,
               []::VARCHAR[] AS sink_keys, false AS topic_duplicate,
               printf('offsets %d to %d were removed (retention or compaction) before they were '
                      || 'read', from_offset, log_start_offset - 1) AS detail,
               []::{POSITION_TYPE}[] AS positions
        FROM (VALUES {values}) AS u(topic, "partition", from_offset, log_start_offset)
    """


def verdict_counts(con: Any, results: str) -> dict[str, int]:
    """Rows per verdict, every verdict present (0 when absent), plus ``topic_duplicate`` flags.

    :param results: the table :func:`reconcile` made.
    """
    from recon.verdicts import ALL_VERDICTS

    counts = dict.fromkeys(ALL_VERDICTS, 0)
    flagged = 0
    for verdict, n, duplicates in con.execute(
        f"SELECT verdict, count(*), count(*) FILTER (WHERE topic_duplicate) FROM {results} "
        "GROUP BY verdict"
    ).fetchall():
        counts[verdict] = int(n)
        flagged += int(duplicates)
    counts[Verdict.TOPIC_DUPLICATE.value] = flagged
    return counts


def ledger_update(
    con: Any,
    ledger: str | None,
    results: str,
    run_id: str,
    into: str = "recon_ledger_delta",
    known_only: bool = False,
) -> str | None:
    """The next ledger entries of the run's messages, as ``recon.reconcile.ledger_update``: the
    view ``into`` (``schemas.LEDGER``), evaluated when it is written.

    :param ledger: the entries the run started from (:func:`reconcile`'s ``ledger``), or None.
    :param results: the run's results table.
    :param run_id: recorded as ``first_run_id`` for messages new to the ledger.
    :param known_only: only the entries of messages the ledger knew (``None`` when it knew none):
        the others are the run's results as they are (``recon.ledger.results_as_entries``).
    """
    if known_only and ledger is None:
        return None
    run = "'" + _quote(run_id) + "'"
    parts = _parts(con, results)
    judged = f"{parts[1]}" if parts else results
    new = f"""
        SELECT message_id, verdict AS n_verdict, sink_count AS n_sink_count,
               CASE WHEN verdict IN {_in(UNMATCHED)} THEN []::{POSITION_TYPE}[]
                    ELSE positions END AS n_positions
        FROM {judged}
        WHERE message_id IS NOT NULL AND verdict IN {_in(LEDGER_VERDICTS)}
    """
    # The fast path's messages are at one position or none, and never in the ledger (every
    # ledger id goes the general way): their entries come straight from the joined rows,
    # without lists.
    fast = (
        f"""SELECT message_id, topic, "partition", "offset" AS first_offset,
               NULL::BIGINT[] AS offsets, (sink_key IS NOT NULL)::BIGINT AS sink_count,
               {run} AS first_run_id, verdict, NULL::{POSITION_TYPE}[] AS positions
        FROM {parts[0]}"""
        if parts
        else None
    )

    def fresh(source: str) -> str:
        """Entries of messages new to the ledger: this run's as they are. A message at one
        position (nearly all) stores no lists: ``offsets`` and ``positions`` are null and
        readers derive them from ``first_offset`` (``recon.reconcile.conform_ledger``)."""
        return f"""
            SELECT message_id, n_positions[1].topic AS topic,
                   n_positions[1]."partition" AS "partition",
                   n_positions[1]."offset" AS first_offset,
                   CASE WHEN len(n_positions) > 1
                        THEN list_sort(list_transform(n_positions, p -> p."offset")) END
                       AS offsets,
                   n_sink_count AS sink_count, {run} AS first_run_id,
                   n_verdict AS verdict,
                   CASE WHEN len(n_positions) > 1 THEN n_positions END AS positions
            FROM ({source})
        """

    if ledger is None:
        fresh_entries = fresh(new) + (f" UNION ALL {fast}" if fast else "")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {into} AS {fresh_entries}")
        return into
    ledger = ledger_with_positions(con, ledger)
    keep_old = (
        f"(n.n_verdict IS NULL OR (n.n_verdict = '{Verdict.PENDING}' "
        f"AND o.verdict IN {_in(JUDGED)}))"
    )

    def pick(old: str, new_value: str) -> str:
        return f'CASE WHEN {keep_old} THEN o."{old}" ELSE {new_value} END AS "{old}"'

    # A full outer join of old and new entries, in two parts so that the run's many new
    # messages are not joined against the few known ones: known (old, maybe new) and new only.
    known = f"""
        SELECT o.message_id,
               {pick("topic", "n.n_positions[1].topic")},
               {pick("partition", 'n.n_positions[1]."partition"')},
               {pick("first_offset", 'n.n_positions[1]."offset"')},
               {pick("offsets", 'list_sort(list_transform(n.n_positions, p -> p."offset"))')},
               {pick("sink_count", "n.n_sink_count")},
               coalesce(o.first_run_id, {run}) AS first_run_id,
               {pick("verdict", "n.n_verdict")},
               {pick("positions", "n.n_positions")}
        FROM ({conform_ledger_sql(ledger)}) o LEFT JOIN ({new}) n
        ON o.message_id = n.message_id
    """
    only_new = fresh(f"SELECT n.* FROM ({new}) n ANTI JOIN (SELECT message_id FROM {ledger}) o "
                     "ON n.message_id = o.message_id")  # fmt: skip
    if known_only:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {into} AS {known}")
        return into
    entries = f"{known} UNION ALL {only_new}" + (f" UNION ALL {fast}" if fast else "")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {into} AS {entries}")
    return into


def _parts(con: Any, results: str) -> tuple[str, str] | None:
    """The fast and general parts :func:`reconcile` made for ``results``, when it made them."""
    names = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()"
        ).fetchall()
    }
    if f"{results}_fast" in names and f"{results}_rest" in names:
        return f"{results}_fast", f"{results}_rest"
    return None
