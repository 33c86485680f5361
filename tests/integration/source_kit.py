"""What the three-way integration tests share (an outbox table or an upstream topic as the
source): the funnel a run stored, the second run that judges only what settled since the
first, and a pipeline refused for a source declared wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from everyday_kit import (
    EXIT_ERROR,
    Setup,
    commit_group,
    consume_into_sink,
    high_watermarks,
    no_traceback,
    produce,
    tail,
)


def funnel_of(s: Setup, run_id: str) -> dict[str, Any]:
    (funnel,) = s.run_row(run_id, "funnel") or (None,)
    assert funnel is not None, f"run {run_id} stored no funnel"
    return dict(funnel)


def next_run_judges_only_what_settled_since(
    s: Setup, spark: Any, kafka_config: dict[str, str], write_a7: Callable[[], None]
) -> None:
    """Run r2 after the source got a7 (``write_a7``) and the topic a7 and a5 (found unpublished
    by r1): nothing is unpublished, and only a7 settled in r2."""
    since = high_watermarks(kafka_config, s.topic)
    write_a7()
    produce(kafka_config, s.topic, ["a7", "a5"])
    consume_into_sink(kafka_config, s.topic, s.group, s.pg_kwargs, s.table, since)
    s.run(spark, "r2")
    got2 = {m: v for v, m, _ in s.discrepancies("r2")}
    assert "unpublished" not in got2.values(), got2
    assert funnel_of(s, "r2")["produced"] == 1


def refused_with(s: Setup, kafka_config: dict[str, str], message: str) -> None:
    """``recon run`` of a pipeline whose source is declared wrong: exit 2, ``message``."""
    produce(kafka_config, s.topic, ["a1"])
    commit_group(kafka_config, s.group, s.topic)
    result = s.cli("r1")
    assert result.returncode == EXIT_ERROR, tail(result.stderr)
    no_traceback(result, "recon run")
    assert f"pipeline '{s.name}': {message}" in result.stderr, tail(result.stderr)
