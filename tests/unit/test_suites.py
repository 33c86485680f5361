"""The Great Expectations suites decide exactly as ``recon.contract.evaluate.evaluate_contract``.

For each claimed semantic: a results fixture that passes with every tolerance exactly at its
threshold, and one that breaks every rule (each tolerance just past its threshold, every
forbidden verdict present, each with a distinct count), both run through the real checkpoint on
pandas over the results Parquet (``engine: local``, no JVM), and cross-checked against the
pure-Python contract on the same counts (on Spark, ``engine: spark``, in
``tests/integration/test_suites_on_spark.py``: it needs a JVM); and the GX project the runs
share: a run validated again replaces its validation, runs validate side by side.

The suite files themselves, and their generation from the contract table, are tested without
Spark in ``tests/unit/test_suite_files.py``; the rows and validations both use are in
``fixtures.suite_runs``, the ``gx_dir`` fixture in ``tests/unit/conftest.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.suite_cases import CASES, Case, _counts
from fixtures.suite_runs import (
    RESULT_COLUMNS,
    _cfg,
    _gx_failures,
    _rows,
    _validate,
    _violations,
    _write_results,
)

from recon.config import Tolerances
from recon.contract.evaluate import evaluate_contract
from recon.model.verdicts import ROW_VERDICTS

pytestmark = pytest.mark.unit


#: The unit tier validates on pandas only (no JVM): ``tests/integration/test_suites_on_spark.py``
#: holds Spark's validation of the same cases to pandas's.
ENGINES = ("pandas",)


def test_the_fixture_rows_have_the_results_layout() -> None:
    """The rows here are ``schemas.RESULT`` tuples: a column added there must be added here."""
    from recon.model import schemas

    assert [name for name, _ in RESULT_COLUMNS] == schemas.RESULT.fieldNames()
    assert {len(row) for row in _rows({v: 1 for v in ROW_VERDICTS})} == {len(RESULT_COLUMNS)}


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
