"""The Great Expectations suites on Spark (``engine: spark``) decide as on pandas over the results
Parquet (``engine: local``), which ``tests/unit/test_suites.py`` holds to the pure-Python contract
at every threshold; and a run validated again on the other engine keeps one validation. Here, not
in the unit tier, because they need a JVM."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.suite_cases import CASES, Case
from fixtures.suite_runs import _cfg, _gx_failures, _rows, _validate

from recon.config import Tolerances

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gx_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Great Expectations project folder of this module's own (not yet made)."""
    return str(tmp_path_factory.mktemp("gx") / "gx")


@pytest.mark.parametrize("passing", [True, False], ids=["passing", "broken"])
@pytest.mark.parametrize("case", CASES, ids=[c.semantics for c in CASES])
def test_spark_decides_as_pandas(
    request: pytest.FixtureRequest, gx_dir: str, case: Case, passing: bool
) -> None:
    cfg = _cfg(case.semantics, case.tolerances, idempotent=not passing)
    if passing:
        rows = _rows(case.passing, case.passing_topic_duplicates)
    else:
        rows = _rows(case.broken, case.broken_topic_duplicates)
    run_id = f"{'pass' if passing else 'broken'}-{case.semantics}"
    on_spark = _validate(request, "spark", gx_dir, cfg, rows, f"{run_id}-spark")
    on_pandas = _validate(request, "pandas", gx_dir, cfg, rows, f"{run_id}-pandas")
    assert (on_spark.passed, _gx_failures(on_spark)) == (on_pandas.passed, _gx_failures(on_pandas))
    assert on_spark.passed is passing
    assert f"{run_id}-spark" in Path(on_spark.data_docs_path).read_text(encoding="utf-8")


def test_an_empty_run_passes(request: pytest.FixtureRequest, gx_dir: str) -> None:
    cfg = _cfg("exactly_once", Tolerances(), idempotent=True, name="empty_spark")
    assert _validate(request, "spark", gx_dir, cfg, [], "again").passed


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
