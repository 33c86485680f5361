"""Three-way runs on the real stack (issue 20): an outbox table as the pipeline's source, records
that never reached the topic judged ``unpublished`` exactly once, the funnel stored with the run,
and a source declared wrong refused with the pipeline and key named. Both engines judge the first
run; the next run, whose source rows both engines read through one copy (``recon.read.
source_copy``, the settle interval in its query), runs on the local engine."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from everyday_kit import (
    ENGINES,
    Setup,
    consume_into_sink,
    produce,
    tail,
)
from source_kit import funnel_of, next_run_judges_only_what_settled_since, refused_with

from recon.config import load_pipelines

pytestmark = pytest.mark.integration


def _source_block(table: str, key_column: str | None = "seq") -> str:
    key = f"      key_column: {key_column}\n" if key_column else ""
    return (
        "    source:\n      connection: postgres_sink\n"
        f"      table: {table}\n      message_id_column: message_id\n"
        f"      time_column: created_at\n{key}"
    )


@pytest.fixture
def sourced(
    tmp_path: Path, new_topic: Callable[..., str], pg_kwargs: dict[str, Any]
) -> Iterator[Callable[..., tuple[Setup, str]]]:
    """A pipeline (topic, group, sink) whose source is a fresh outbox table."""
    made: list[tuple[Setup, str]] = []

    def make(engine: str, semantics: str = "exactly_once") -> tuple[Setup, str]:
        topic = new_topic("ev-src", partitions=1)
        s = Setup.make(tmp_path, engine, topic, pg_kwargs, prefix="src", semantics=semantics)
        outbox = f"public.outbox_{uuid.uuid4().hex[:12]}"
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"CREATE TABLE {outbox} (seq bigserial PRIMARY KEY, message_id text, "
                        "created_at timestamptz NOT NULL DEFAULT clock_timestamp())")  # fmt: skip
        pg.close()
        s.yaml_path.write_text(s.yaml_path.read_text() + _source_block(outbox))
        s.cfg = load_pipelines(s.yaml_path)[s.name]
        made.append((s, outbox))
        return s, outbox

    yield make
    for s, outbox in made:
        s.closers.append(lambda t=outbox, kw=s.pg_kwargs: _drop(kw, t))
        s.close()


def _drop(pg_kwargs: dict[str, Any], table: str) -> None:
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
    pg.close()


def _outbox(pg_kwargs: dict[str, Any], table: str, ids: list[str | None]) -> None:
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        for mid in ids:
            cur.execute(f"INSERT INTO {table} (message_id) VALUES (%s)", (mid,))
    pg.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_outbox_rows_the_topic_never_got_are_unpublished_once(
    engine: str, sourced: Callable[..., tuple[Setup, str]], kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any], spark: Any,
) -> None:  # fmt: skip
    s, outbox = sourced(engine)
    # a1..a6 in the outbox (and one row without an id); the relay published a1..a4 only, and
    # another producer x1, which no outbox row names.
    _outbox(pg_kwargs, outbox, ["a1", "a2", "a3", "a4", "a5", None, "a6"])
    produce(kafka_config, s.topic, ["a1", "a2", "a3", "a4", "x1"])
    consume_into_sink(kafka_config, s.topic, s.group, pg_kwargs, s.table, {})

    summary = s.run(spark, "r1")
    got = [(v, m, d) for v, m, d in s.discrepancies("r1")]
    unpublished = sorted(m for v, m, _ in got if v == "unpublished")
    assert unpublished == ["a5", "a6"], got
    invalid = [d for v, _, d in got if v == "invalid"]
    assert invalid == ["source row 6 without a message id"], got
    assert summary.counts["unpublished"] == 2 and not summary.contract_passed
    funnel = funnel_of(s, "r1")
    assert {k: funnel[k] for k in ("produced", "published", "committed", "delivered",
                                   "unsourced", "source_invalid", "source_duplicates")} == {
        "produced": 6, "published": 4, "committed": 5, "delivered": 5, "unsourced": 1,
        "source_invalid": 1, "source_duplicates": 0,
    }  # fmt: skip
    assert [u["message_id"] for u in funnel["unsourced_sample"]] == ["x1"]

    if engine == "spark":
        return  # the next run's source rows: the same copy on both engines, judged once below

    # The next run judges only the rows written since: a7 published and delivered; a5 and a6
    # are not reported again, and a5 published late is judged as any message.
    next_run_judges_only_what_settled_since(
        s, spark, kafka_config, lambda: _outbox(pg_kwargs, outbox, ["a7"])
    )


def test_source_rows_without_a_time_are_counted_every_run_not_skipped_silently(
    sourced: Callable[..., tuple[Setup, str]], kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any], spark: Any,
) -> None:  # fmt: skip
    # An outbox whose declared time is filled only when the relay publishes (a published_at):
    # the rows it never published have none, and no run's interval holds them.
    s, outbox = sourced("local")
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"ALTER TABLE {outbox} ALTER COLUMN created_at DROP NOT NULL")
        cur.execute(f"INSERT INTO {outbox} (message_id, created_at) VALUES ('a3', NULL), "
                    "('a4', 'infinity'), ('a5', '-infinity')")  # fmt: skip
    pg.close()
    _outbox(pg_kwargs, outbox, ["a1", "a2"])
    produce(kafka_config, s.topic, ["a1", "a3"])
    consume_into_sink(kafka_config, s.topic, s.group, pg_kwargs, s.table, {})

    summary = s.run(spark, "r1")
    assert summary.unchecked == {"untimed_source_rows": 3}
    (stored,) = s.run_row("r1", "unchecked")
    assert stored == {"untimed_source_rows": 3}
    # What the timed rows say is unchanged: a2 unpublished; a3's record names no row read.
    got = sorted((v, m) for v, m, _ in s.discrepancies("r1"))
    assert got == [("unpublished", "a2")], got
    assert funnel_of(s, "r1")["unsourced"] == 1


def test_a_source_table_that_does_not_exist_is_named(
    sourced: Callable[..., tuple[Setup, str]], kafka_config: dict[str, str]
) -> None:
    s, outbox = sourced("local")
    s.yaml_path.write_text(s.yaml_path.read_text().replace(outbox, "public.no_such_outbox"))
    refused_with(s, kafka_config, "source.table: table public.no_such_outbox does not exist")


def test_runs_json_carries_thefunnel_of(
    sourced: Callable[..., tuple[Setup, str]], kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
) -> None:  # fmt: skip
    s, outbox = sourced("local")
    _outbox(pg_kwargs, outbox, ["a1", "a2"])
    produce(kafka_config, s.topic, ["a1"])
    consume_into_sink(kafka_config, s.topic, s.group, pg_kwargs, s.table, {})
    result = s.cli("r1")
    assert result.returncode == 1, tail(result.stderr)  # a2 unpublished breaks exactly_once
    summary = json.loads(result.stdout)
    assert summary["funnel"]["produced"] == 2 and summary["funnel"]["published"] == 1
    assert summary["counts"]["unpublished"] == 1
