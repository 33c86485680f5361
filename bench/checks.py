"""What stops a bench: a product run or a peer whose verdicts differ from the data's planted
faults, or from each other's; a comparison of times would be meaningless."""

from __future__ import annotations

from bench.measure import Measured

PEER_VERDICTS = ("delivered", "lost", "duplicated", "phantom", "topic_duplicate", "invalid")


def check_counts(label: str, expected: dict[str, int], measured: dict[str, Measured]) -> None:
    """Both engines must find the planted faults, and each peer exactly the product's counts."""
    want = {v: expected.get(v, 0) for v in PEER_VERDICTS}
    for engine in ("product", "local", "connect"):
        if engine not in measured:
            continue
        found = measured[engine].output.get("counts", {})
        got = {v: found.get(v, 0) for v in PEER_VERDICTS}
        if got != want:
            raise SystemExit(f"P1 {label}: {engine} counts {got} differ from the planted {want}")
    for peer in ("python", "duckdb", "spark"):
        if peer not in measured:
            continue
        counts = measured[peer].output.get("counts", {})
        theirs = {v: counts.get(v, 0) for v in PEER_VERDICTS}
        if theirs != got:
            raise SystemExit(f"P1 {label}: {peer} peer counts {theirs} != product {got}")


def same_verdicts(a: str, run_a: str, b: str, run_b: str) -> bool:
    """Both runs' discrepancy rows, compared as (verdict, messageId, offsets, sink count)."""
    from recon.run.steps import results_db

    query = (
        "SELECT md5(string_agg(verdict || '|' || coalesce(message_id, '') || '|' || "
        "offsets::text || '|' || sink_count, ',' ORDER BY verdict, message_id, offsets)) "
        "FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s"
    )
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(query, (a, run_a))
        left = cur.fetchone()[0]
        cur.execute(query, (b, run_b))
        right = cur.fetchone()[0]
    return bool(left) and left == right
