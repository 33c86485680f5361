"""The Great Expectations suites decide exactly as ``recon.contract.evaluate.evaluate_contract``.

For each claimed semantic: a results fixture that passes with every tolerance exactly at its
threshold, and one that breaks every rule (each tolerance just past its threshold, every
forbidden verdict present, each with a distinct count), both run through the real checkpoint on
Spark (``engine: spark``) and on pandas over the results Parquet (``engine: local``, no JVM), and
cross-checked against the pure-Python contract on the same counts.

The suites are generated from the contract table both sides read: the committed files must be the
generated ones, and editing one cell of the table changes both decisions alike.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from recon.config import KafkaSource, MessageIdSpec, PipelineConfig, SinkSpec, Tolerances
from recon.contract.evaluate import evaluate_contract
from recon.verdicts import RATIO_BASE, ROW_VERDICTS, SEMANTICS, Verdict

pytestmark = pytest.mark.unit

TOPIC = "payments"


def _cfg(semantics: str, tolerances: Tolerances, idempotent: bool, name: str = "pay") -> Any:
    return PipelineConfig(
        name=name,
        semantics=semantics,
        schedule=None,
        settle_seconds=0,
        kafka=KafkaSource("kafka_default", TOPIC, "sink-group", MessageIdSpec("header", "id")),
        sink=SinkSpec("postgres_sink", "public.payments", "message_id"),
        tolerances=tolerances,
        idempotent_producer=idempotent,
    )


def _rows(counts: dict[str, int], topic_duplicates: int = 0) -> list[tuple[Any, ...]]:
    """Rows shaped as schemas.RESULT; ``topic_duplicates`` flags that many delivered rows."""
    rows: list[tuple[Any, ...]] = []
    offset = 0
    flagged = 0
    for verdict in ROW_VERDICTS:
        for i in range(counts.get(verdict, 0)):
            offset += 1
            position = (TOPIC, i % 2, offset)
            message_id: str | None = f"{verdict}-{i}"
            offsets, keys, sink_count, dup = [offset], [f"k{offset}"], 1, False
            if verdict == Verdict.LOST:
                keys, sink_count = [], 0
            elif verdict == Verdict.DUPLICATED:
                keys, sink_count = [f"k{offset}", f"k{offset}b"], 2
            elif verdict == Verdict.DELIVERED and flagged < topic_duplicates:
                flagged += 1
                offsets, dup = [offset, offset + 1000], True
            elif verdict in (Verdict.PHANTOM, Verdict.UNVERIFIABLE):
                offsets, position = [], None  # type: ignore[assignment]
            elif verdict == Verdict.INVALID:
                message_id, keys, sink_count = None, [], 0
            positions = [(TOPIC, i % 2, o) for o in offsets] if position else []
            # a delivered message's latency is within any bound, a late one's past it
            latency_ms = {Verdict.DELIVERED: 1_000, Verdict.LATE: 90_000}.get(verdict)
            record_time_ms = 1_767_225_600_000 if verdict == Verdict.LOST else None
            rows.append(
                (
                    verdict, message_id, TOPIC if position else None,
                    i % 2 if position else None, offsets, offsets[0] if offsets else None,
                    sink_count, keys, dup, None, positions, latency_ms, record_time_ms, None,
                )
            )  # fmt: skip
    assert flagged == topic_duplicates, "topic duplicates need as many delivered rows"
    return rows


def _counts(counts: dict[str, int], topic_duplicates: int) -> dict[str, int]:
    return {**Counter(counts), Verdict.TOPIC_DUPLICATE.value: topic_duplicates}


@dataclass(frozen=True)
class Case:
    semantics: str
    tolerances: Tolerances
    passing: dict[str, int]
    passing_topic_duplicates: int
    broken: dict[str, int]
    broken_topic_duplicates: int
    # (verdict, observed, allowed) expected from the broken fixture, in suite order
    expected: list[tuple[str, int, float]] = field(default_factory=list)


CASES = [
    Case(
        "at_most_once",
        Tolerances(max_loss_ratio=0.29, max_unverifiable=1, max_invalid=2, max_late_ratio=0.1),
        # 29 lost and 10 late of 100 judged: exactly max_loss_ratio (0.29 * 100 is 28.999... in
        # floats) and max_late_ratio
        {"delivered": 61, "late": 10, "lost": 29, "pending": 4, "unverifiable": 1, "invalid": 2},
        3,
        {"delivered": 57, "late": 11, "lost": 30, "duplicated": 2, "phantom": 1,
         "aborted_read": 3, "unverifiable": 2, "invalid": 3, "pending": 1},
        4,
        [("lost", 30, 0.29), ("duplicated", 2, 0), ("late", 11, 0.1), ("phantom", 1, 0),
         ("aborted_read", 3, 0), ("topic_duplicate", 4, 0), ("unverifiable", 2, 1),
         ("invalid", 3, 2)],
    ),
    Case(
        "at_least_once",
        Tolerances(max_duplicate_ratio=0.07, max_late_ratio=0.05),
        {"delivered": 88, "late": 5, "duplicated": 7, "pending": 3},
        2,
        {"delivered": 85, "late": 6, "duplicated": 8, "lost": 1, "phantom": 2, "aborted_read": 3,
         "unverifiable": 1, "invalid": 4},
        5,
        [("lost", 1, 0), ("duplicated", 8, 0.07), ("late", 6, 0.05), ("phantom", 2, 0),
         ("aborted_read", 3, 0), ("topic_duplicate", 5, 0), ("unverifiable", 1, 0),
         ("invalid", 4, 0)],
    ),
    Case(
        "exactly_once",
        # latency is no part of the semantic: exactly_once tolerates late up to its ratio too
        Tolerances(max_unverifiable=2, max_invalid=1, max_late_ratio=0.25),
        {"delivered": 15, "late": 5, "pending": 2, "unverifiable": 2, "invalid": 1},
        2,
        {"delivered": 10, "late": 6, "lost": 1, "duplicated": 2, "phantom": 3, "aborted_read": 4,
         "unverifiable": 3, "invalid": 2},
        5,
        [("lost", 1, 0), ("duplicated", 2, 0), ("late", 6, 0.25), ("phantom", 3, 0),
         ("aborted_read", 4, 0), ("topic_duplicate", 5, 0), ("unverifiable", 3, 2),
         ("invalid", 2, 1)],
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def gx_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("gx") / "gx")


ENGINES = ("spark", "pandas")

#: The results' Parquet layout (``schemas.RESULT``) as the local engine writes it.
RESULT_COLUMNS = (
    ("verdict", "string"), ("message_id", "string"), ("topic", "string"),
    ("partition", "int32"), ("offsets", "list<int64>"), ("first_offset", "int64"),
    ("sink_count", "int64"), ("sink_keys", "list<string>"), ("topic_duplicate", "bool"),
    ("detail", "string"), ("positions", "positions"), ("latency_ms", "int64"),
    ("record_time_ms", "int64"), ("sink_time_ms", "int64"),
)  # fmt: skip


def test_the_fixture_rows_have_the_results_layout() -> None:
    """The rows here are ``schemas.RESULT`` tuples: a column added there must be added here."""
    from recon import schemas

    assert [name for name, _ in RESULT_COLUMNS] == schemas.RESULT.fieldNames()
    assert {len(row) for row in _rows({v: 1 for v in ROW_VERDICTS})} == {len(RESULT_COLUMNS)}


def _write_results(rows: list[tuple[Any, ...]], path: Path) -> str:
    """The rows as a results folder of two Parquet part files, as ``results_path`` holds them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    position = pa.struct([("topic", pa.string()), ("partition", pa.int32()),
                          ("offset", pa.int64())])  # fmt: skip
    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(),
             "list<int64>": pa.list_(pa.int64()), "list<string>": pa.list_(pa.string()),
             "positions": pa.list_(position)}  # fmt: skip
    schema = pa.schema([(name, types[kind]) for name, kind in RESULT_COLUMNS])
    path.mkdir(parents=True)
    half = len(rows) // 2
    for part, chunk in enumerate((rows[:half], rows[half:])):
        records = [dict(zip([n for n, _ in RESULT_COLUMNS], row, strict=True)) for row in chunk]
        for record in records:
            record["positions"] = [dict(zip(("topic", "partition", "offset"), p, strict=True))
                                   for p in record["positions"]]  # fmt: skip
        pq.write_table(pa.Table.from_pylist(records, schema), path / f"part-{part:05d}.parquet")
    return str(path)


def _validate(
    request: pytest.FixtureRequest,
    engine: str,
    gx_dir: str,
    cfg: Any,
    rows: list[tuple[Any, ...]],
    run_id: str,
) -> Any:
    """Validate the rows as a run's results on ``engine``: a Spark DataFrame, or the results
    Parquet read into pandas."""
    from recon import schemas
    from recon.validation import validate_results_file, validate_run

    if engine == "pandas":
        tmp = request.getfixturevalue("tmp_path")
        folder = tmp / f"results-{len(list(tmp.iterdir()))}"
        return validate_results_file(cfg, run_id, _write_results(rows, folder), gx_dir=gx_dir)
    spark = request.getfixturevalue("spark")
    results = spark.createDataFrame(rows, schemas.RESULT)
    return validate_run(spark, results, cfg, run_id, gx_dir=gx_dir)


def _violations(result: Any) -> list[tuple[str, int, float]]:
    return [(v.verdict, v.count, v.allowed) for v in result.violations]


def _gx_failures(outcome: Any) -> list[tuple[str, int, float]]:
    return [(f["verdict"], f["observed"], f["allowed"]) for f in outcome.failures]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.semantics for c in CASES])
def test_suite_passes_at_every_threshold(
    request: pytest.FixtureRequest, gx_dir: str, case: Case, engine: str
) -> None:
    # topic duplicates are allowed when the producer is not declared idempotent
    cfg = _cfg(case.semantics, case.tolerances, idempotent=False)
    rows = _rows(case.passing, case.passing_topic_duplicates)
    contract = evaluate_contract(
        case.semantics,
        _counts(case.passing, case.passing_topic_duplicates),
        case.tolerances,
        idempotent_producer=False,
    )
    outcome = _validate(request, engine, gx_dir, cfg, rows, f"pass-{case.semantics}-{engine}")

    assert contract.passed, contract.violations
    assert outcome.passed, outcome.failures
    assert outcome.failures == []
    assert os.path.isfile(outcome.data_docs_path)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[c.semantics for c in CASES])
def test_suite_breaks_on_every_forbidden_verdict(
    request: pytest.FixtureRequest, gx_dir: str, case: Case, engine: str
) -> None:
    cfg = _cfg(case.semantics, case.tolerances, idempotent=True)
    rows = _rows(case.broken, case.broken_topic_duplicates)
    contract = evaluate_contract(
        case.semantics,
        _counts(case.broken, case.broken_topic_duplicates),
        case.tolerances,
        idempotent_producer=True,
    )
    run_id = f"broken-{case.semantics}-{engine}"
    outcome = _validate(request, engine, gx_dir, cfg, rows, run_id)

    assert not outcome.passed
    assert _gx_failures(outcome) == case.expected
    # the pure-Python contract agrees, verdict by verdict, count by count
    assert not contract.passed
    assert _violations(contract) == _gx_failures(outcome)
    assert {f["expectation"] for f in outcome.failures} <= {
        "expect_column_values_to_not_be_in_set",
        "expect_column_values_to_be_in_set",
        "expect_table_row_count_to_be_between",
    }
    page = Path(outcome.data_docs_path).read_text(encoding="utf-8")
    assert run_id in page


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_run_passes_and_revalidation_replaces_the_run(
    request: pytest.FixtureRequest, gx_dir: str, engine: str
) -> None:
    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name=f"empty_{engine}")
    first = _validate(request, engine, gx_dir, cfg, [], "again")
    second = _validate(request, engine, gx_dir, cfg, [], "again")

    assert first.passed and second.passed
    assert first.validation_id != second.validation_id  # a new validation time
    assert not os.path.exists(first.data_docs_path)
    assert os.path.isfile(second.data_docs_path)
    stored = list(Path(gx_dir, "uncommitted", "validations").rglob(f"*empty_{engine}.json"))
    assert len(stored) == 1, stored
    assert "again" in Path(second.data_docs_index).read_text(encoding="utf-8")
    assert second.validation_id.startswith("exactly_once/again/")


def test_replacing_a_validation_reads_only_that_runs_stored_results(
    request: pytest.FixtureRequest, gx_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's earlier validation is found in its own folders, not by listing every result ever
    stored: the replacement's cost does not grow with the history."""
    from recon.validation.checkpoint import _context, _forget_run

    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="history")
    older = _validate(request, "pandas", gx_dir, cfg, [], "older")
    kept = _validate(request, "pandas", gx_dir, cfg, [], "kept")
    context = _context(gx_dir)

    def every_key(self: Any) -> list[Any]:
        raise AssertionError("listed every stored validation")

    monkeypatch.setattr(type(context.validation_results_store), "list_keys", every_key)
    _forget_run(context, "history", "kept")

    assert not os.path.exists(kept.data_docs_path) and os.path.isfile(older.data_docs_path)
    stored = list(Path(gx_dir, "uncommitted", "validations").rglob("*-history.json"))
    assert [p.parent.parent.name for p in stored] == ["older"], stored


def test_the_data_docs_index_lists_only_the_newest_validations(
    request: pytest.FixtureRequest, gx_dir: str
) -> None:
    """GX reads back every result the index lists, on every run: the index is bounded, so a
    run's cost does not grow with every run ever validated."""
    import yaml

    from recon.validation.checkpoint import INDEX_LIMIT

    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="bounded_index")
    _validate(request, "pandas", gx_dir, cfg, [], "bounded")
    project = yaml.safe_load(Path(gx_dir, "great_expectations.yml").read_text(encoding="utf-8"))
    index = project["data_docs_sites"]["local_site"]["site_index_builder"]
    assert index["validation_results_limit"] == INDEX_LIMIT


def _lock_is_free(gx_dir: str, name: str, *, shared: bool = False) -> bool:
    """Whether another open of the lock file ``name`` could take it (exclusive or shared) now:
    another open file description is blocked if this process holds it."""
    import fcntl

    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with open(os.path.join(gx_dir, name), "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True


def test_runs_validate_side_by_side_and_nothing_shared_is_rewritten_meanwhile(
    request: pytest.FixtureRequest, gx_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a run validates, other runs may validate too (the project lock is held shared), but
    none may rewrite what it reads: GX rewrites the suites in place on every checkpoint update,
    and a CI run once failed reading an empty suite file. The Data Docs build rewrites the index
    whole: one build at a time, under its own lock."""
    from great_expectations.checkpoint.checkpoint import Checkpoint
    from great_expectations.data_context.data_context.abstract_data_context import (
        AbstractDataContext,
    )

    from recon.validation.checkpoint import _DOCS_LOCK_FILE, _LOCK_FILE

    run, build = Checkpoint.run, AbstractDataContext.build_data_docs
    seen: dict[str, list[tuple[bool, bool, bool]]] = {"run": [], "build": []}

    def probe() -> tuple[bool, bool, bool]:
        return (
            _lock_is_free(gx_dir, _LOCK_FILE, shared=True),
            _lock_is_free(gx_dir, _LOCK_FILE),
            _lock_is_free(gx_dir, _DOCS_LOCK_FILE),
        )

    def run_and_probe(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["run"].append(probe())
        return run(self, *args, **kwargs)

    def build_and_probe(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["build"].append(probe())
        return build(self, *args, **kwargs)

    monkeypatch.setattr(Checkpoint, "run", run_and_probe)
    monkeypatch.setattr(AbstractDataContext, "build_data_docs", build_and_probe)
    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="side_by_side")
    outcome = _validate(request, "pandas", gx_dir, cfg, _rows({"delivered": 2}), "side-by-side")

    assert outcome.passed and os.path.isfile(outcome.data_docs_path)
    assert "side-by-side" in Path(outcome.data_docs_index).read_text(encoding="utf-8")
    # (another run may share the project lock, may not take it exclusive, docs lock free)
    assert seen["run"] == [(True, False, True)]
    assert seen["build"] == [(True, False, False)]


def test_a_suite_installed_by_another_run_meanwhile_does_not_stop_the_validation(
    request: pytest.FixtureRequest, gx_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between a run's install (exclusive lock) and its validation (shared lock), a run of
    another pipeline with the same semantic may install the suite again; GX gives the
    expectations new ids on every update, and refused to run a checkpoint read before it
    ("ExpectationSuite has changed since it has last been saved": a CI run failed so)."""
    from recon.validation import checkpoint as module
    from recon.validation.suites import load_suite

    real_lock = module._project_lock
    other = _cfg("exactly_once", Tolerances(), idempotent=True, name="meanwhile_other")
    raced: list[bool] = []

    @contextlib.contextmanager
    def lock(root: str, *, shared: bool = False) -> Any:
        if shared and not raced:
            raced.append(True)
            with module._installed(root, other.name, load_suite("exactly_once"), "pandas"):
                pass  # the other run's install, as run_checkpoint makes it
        with real_lock(root, shared=shared):
            yield

    monkeypatch.setattr(module, "_project_lock", lock)
    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="meanwhile")
    outcome = _validate(request, "pandas", gx_dir, cfg, _rows({"delivered": 2, "lost": 1}), "m1")

    assert raced == [True]
    assert not outcome.passed and _gx_failures(outcome) == [("lost", 1, 0.0)]


def test_revalidation_on_the_other_engine_replaces_the_run(
    request: pytest.FixtureRequest, gx_dir: str
) -> None:
    """A pipeline that switches engines keeps one validation per run: the new one."""
    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="switching")
    rows = _rows({"delivered": 3, "lost": 1})
    on_spark = _validate(request, "spark", gx_dir, cfg, rows, "switched")
    on_pandas = _validate(request, "pandas", gx_dir, cfg, _rows({"delivered": 4}), "switched")
    again_on_spark = _validate(request, "spark", gx_dir, cfg, rows, "switched")

    assert not on_spark.passed and on_pandas.passed and not again_on_spark.passed
    assert not os.path.exists(on_spark.data_docs_path)
    assert not os.path.exists(on_pandas.data_docs_path)
    stored = list(Path(gx_dir, "uncommitted", "validations").rglob("*-switching.json"))
    assert [p.parent.parent.name for p in stored] == ["switched"], stored
    assert stored[0].name == "recon_results-switching.json"


def test_pandas_validation_reads_only_the_suite_columns_lean_and_starts_no_jvm(
    tmp_path: Path,
) -> None:
    """Without Spark: the suite's columns only, verdict as a categorical, strings in Arrow."""
    from recon.validation import load_suite, read_results, suite_columns

    columns = suite_columns(load_suite("exactly_once"))
    assert columns == ["message_id", "topic_duplicate", "verdict"]
    path = _write_results(_rows({"delivered": 5, "lost": 2, "invalid": 1}), tmp_path / "r")
    frame = read_results(path, columns)
    assert list(frame.columns) == columns and len(frame) == 8
    assert str(frame["verdict"].dtype) == "category"
    assert str(frame["message_id"].dtype) == "string[pyarrow]"
    assert int(frame["message_id"].isna().sum()) == 1
    # In a fresh interpreter: a whole validation starts no JVM (GX may import pyspark's Python
    # modules when they are installed; neither a gateway nor a java child may appear).
    code = (
        "import sys, json, os, pathlib\n"
        "from recon.config import KafkaSource, MessageIdSpec, PipelineConfig, SinkSpec\n"
        "from recon.validation import validate_results_file\n"
        "cfg = PipelineConfig(name='nojvm', semantics='exactly_once', schedule=None,\n"
        "    settle_seconds=0, kafka=KafkaSource('k', 't', 'g', MessageIdSpec('header', 'id')),\n"
        "    sink=SinkSpec('s', 'public.t', 'message_id'))\n"
        f"out = validate_results_file(cfg, 'r1', {path!r}, gx_dir={str(tmp_path / 'gx')!r})\n"
        "context = sys.modules.get('pyspark.core.context') or sys.modules.get('pyspark.context')\n"
        "gateway = getattr(getattr(context, 'SparkContext', None), '_gateway', None)\n"
        "pid = os.getpid()\n"
        "children = pathlib.Path(f'/proc/{pid}/task/{pid}/children').read_text().split()\n"
        "print(json.dumps([out.passed, [f['verdict'] for f in out.failures],\n"
        "    [gateway is not None, children]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    passed, failed, jvm = json.loads(done.stdout.strip().splitlines()[-1])
    assert (passed, failed, jvm) == (False, ["lost", "invalid"], [False, []])


# --- without Spark ------------------------------------------------------------------------------


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, dict):
        if "$PARAMETER" in value:
            return {value["$PARAMETER"]}
        return set().union(*(_placeholders(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value))
    return set()


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_suite_files_express_the_contract_table(semantics: str) -> None:
    from recon.validation import load_suite, suite_parameters

    suite = load_suite(semantics)
    rules = {e["meta"].get("verdict"): e for e in suite["expectations"] if "verdict" in e["meta"]}
    tolerated = {"at_most_once": "lost", "at_least_once": "duplicated"}.get(semantics)

    assert set(rules) == {v for v in (*ROW_VERDICTS, Verdict.TOPIC_DUPLICATE.value)} - {
        Verdict.DELIVERED.value,
        Verdict.PENDING.value,
    }
    for verdict in (Verdict.LOST, Verdict.DUPLICATED, Verdict.PHANTOM, Verdict.ABORTED_READ):
        kwargs = rules[verdict]["kwargs"]
        assert kwargs["value_set"] == [verdict]
        if verdict == tolerated:
            assert kwargs["mostly"] == {"$PARAMETER": f"{verdict}_mostly"}
            assert kwargs["row_condition"]["parameter"] == list(RATIO_BASE)
        else:
            assert "mostly" not in kwargs, f"{semantics} must forbid {verdict}"
    # late: a share of the judged messages under every semantic (latency is no delivery claim)
    late = rules[Verdict.LATE]
    assert late["kwargs"]["value_set"] == [Verdict.LATE]
    assert late["kwargs"]["mostly"] == {"$PARAMETER": "late_mostly"}
    assert late["kwargs"]["row_condition"]["parameter"] == list(RATIO_BASE)
    assert late["meta"] == {
        "recon_rule": "late_ratio",
        "verdict": "late",
        "tolerance": "max_late_ratio",
    }
    # mismatched: forbidden under exactly_once, a share of the judged messages under the others
    mismatched = rules[Verdict.MISMATCHED]["kwargs"]
    if semantics == "exactly_once":
        assert "mostly" not in mismatched
    else:
        assert mismatched["mostly"] == {"$PARAMETER": "mismatched_mostly"}
    assert len(suite["expectations"]) <= 13  # each costs a Spark aggregate
    cfg = _cfg(semantics, Tolerances(), idempotent=True)
    used = _placeholders(suite["expectations"])
    assert used == set(suite_parameters(cfg))
    assert used == set(suite["meta"]["recon"]["parameters"])


def test_suite_parameters_follow_the_pipeline() -> None:
    from recon.validation import suite_parameters

    tolerances = Tolerances(
        max_loss_ratio=0.1, max_unverifiable=3, max_invalid=4, max_late_ratio=0.2,
        max_mismatched_ratio=0.25, max_unpublished_ratio=0.05,
    )  # fmt: skip
    # only the placeholders of the pipeline's own suite: at_most_once tolerates no duplicates
    assert suite_parameters(_cfg("at_most_once", tolerances, idempotent=False)) == {
        "lost_mostly": 0.9,
        "late_mostly": 0.8,
        "mismatched_mostly": 0.75,
        "out_of_order_mostly": 1.0,
        "unpublished_mostly": 0.95,
        "topic_duplicate_allowed": [False, True],
        "max_unverifiable": 3,
        "max_invalid": 4,
    }
    at_least = Tolerances(max_duplicate_ratio=0.07)
    assert suite_parameters(_cfg("at_least_once", at_least, idempotent=False)) == {
        "duplicated_mostly": 0.93,
        "late_mostly": 1.0,
        "mismatched_mostly": 1.0,
        "out_of_order_mostly": 1.0,
        "topic_duplicate_allowed": [False, True],
        "max_unverifiable": 0,
        "max_invalid": 0,
    }
    idempotent = suite_parameters(_cfg("exactly_once", Tolerances(), idempotent=True))
    assert idempotent == {
        "late_mostly": 1.0,
        "topic_duplicate_allowed": [False],
        "max_unverifiable": 0,
        "max_invalid": 0,
    }


def test_mostly_decides_like_the_contract_at_every_threshold() -> None:
    """GX's own ``mostly`` test with our parameter agrees with the contract's exact rule."""
    from great_expectations.expectations.expectation import _mostly_success

    from recon.validation import _mostly

    ratios = [i / 1000 for i in range(0, 1001, 7)] + [0.29, 0.07, 0.1, 0.3, 0.333, 1 / 3]
    for ratio in ratios:
        mostly = _mostly(ratio)
        exact = Fraction(str(ratio))
        for judged in range(1, 700):
            threshold = int(exact * judged)
            for count in {max(threshold - 1, 0), threshold, min(threshold + 1, judged)}:
                expected = count <= exact * judged
                assert _mostly_success(judged, count, mostly) == expected, (ratio, judged, count)


def test_unknown_or_stale_suites_are_refused(tmp_path: Path, monkeypatch: Any) -> None:
    from recon.validation import ValidationError, load_suite

    with pytest.raises(ValidationError, match="unknown semantics"):
        load_suite("maybe_once")
    stale = {"name": "exactly_once", "meta": {"recon": {"suite_version": 0}}, "expectations": []}
    (tmp_path / "exactly_once.json").write_text(json.dumps(stale), encoding="utf-8")
    monkeypatch.setenv("RECON_EXPECTATIONS_DIR", str(tmp_path))
    with pytest.raises(ValidationError, match="suite_version"):
        load_suite("exactly_once")


# --- the suites are generated from the contract table --------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _regenerate_command() -> str:
    spec = importlib.util.spec_from_file_location("gen_suites", ROOT / "scripts" / "gen_suites.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.COMMAND)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_committed_suite_is_the_generated_one(semantics: str) -> None:
    """The files in expectations/ are generated: a hand edit, or a table edit without
    regenerating, fails here with the command that fixes it."""
    from recon.validation import render_suite

    path = ROOT / "expectations" / f"{semantics}.json"
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    generated = render_suite(semantics)
    if committed != generated:
        diff = difflib.unified_diff(
            committed.splitlines(keepends=True),
            generated.splitlines(keepends=True),
            f"{path.relative_to(ROOT)} (committed)",
            "generated from recon.contract.table.CONTRACT",
        )
        pytest.fail(
            f"{path.relative_to(ROOT)} differs from the suite generated from the contract table "
            f"(src/recon/contract/table.py); regenerate it from the repository root with: "
            f"{_regenerate_command()}\n" + "".join(list(diff)[:40]),
            pytrace=False,
        )


@pytest.mark.parametrize(
    ("semantics", "verdict", "rule", "counts", "tolerances"),
    [
        # exactly_once tolerating loss: 1 lost of 10 judged is within 10 %, 2 of 10 are not
        ("exactly_once", "lost", "ratio", {"delivered": 9, "lost": 1}, Tolerances(0.1)),
        ("exactly_once", "lost", "ratio", {"delivered": 8, "lost": 2}, Tolerances(0.1)),
        # at_least_once forbidding duplicates, even within max_duplicate_ratio
        ("at_least_once", "duplicated", "forbidden", {"delivered": 9, "duplicated": 1},
         Tolerances(max_duplicate_ratio=0.5)),
        # invalid rows allowed up to max_unverifiable instead of max_invalid
        ("at_most_once", "invalid", "count", {"delivered": 3, "invalid": 2},
         Tolerances(max_unverifiable=2)),
        # exactly_once refusing late messages, even within max_late_ratio
        ("exactly_once", "late", "forbidden", {"delivered": 9, "late": 1},
         Tolerances(max_late_ratio=0.5)),
    ],
    ids=["loss-within", "loss-over", "no-duplicates", "invalid-by-another-count", "no-late"],
)  # fmt: skip
def test_one_cell_of_the_table_drives_both_the_contract_and_the_suite(
    request: pytest.FixtureRequest,
    gx_dir: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    semantics: str,
    verdict: str,
    rule: str,
    counts: dict[str, int],
    tolerances: Tolerances,
) -> None:
    """Edit one cell of the table: the Python contract and the generated suite, run by GX on
    pandas, change their decision together and still agree, count by count."""
    from recon.contract.table import CONTRACT, Allowance, forbidden, up_to_count, up_to_ratio
    from recon.validation import build_suite, render_suite, suite_parameters

    cfg = _cfg(semantics, tolerances, idempotent=False, name=f"edited_{semantics}")
    before = evaluate_contract(semantics, counts, tolerances)
    suite_before = build_suite(semantics)
    cell = {
        "ratio": up_to_ratio("max_loss_ratio"),
        "forbidden": forbidden("{semantics} forbids {verdict} messages"),
        "count": up_to_count("max_unverifiable"),
    }[rule]
    assert CONTRACT[semantics][verdict] != cell, "the edit must change the table"
    monkeypatch.setitem(CONTRACT[semantics], verdict, cell)  # type: ignore[index]

    contract = evaluate_contract(semantics, counts, tolerances)
    suite = build_suite(semantics)
    (expectation,) = [e for e in suite["expectations"] if e["meta"].get("verdict") == verdict]
    assert contract != before  # the Python judgement follows the cell
    assert suite != suite_before  # and so does the generated suite
    assert expectation["meta"]["recon_rule"] == f"{verdict}_{cell.allowance.value}"
    if cell.allowance is Allowance.FORBIDDEN:
        assert "tolerance" not in expectation["meta"]
    else:
        assert expectation["meta"]["tolerance"] == cell.tolerance
    assert set(suite["meta"]["recon"]["parameters"]) == set(suite_parameters(cfg))

    # GX runs the generated suite, loaded from its file as in production
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / f"{semantics}.json").write_text(render_suite(semantics), "utf-8")
    monkeypatch.setenv("RECON_EXPECTATIONS_DIR", str(tmp_path / "suites"))
    outcome = _validate(request, "pandas", gx_dir, cfg, _rows(counts), f"edited-{verdict}")
    assert outcome.passed == contract.passed
    assert _gx_failures(outcome) == _violations(contract)
