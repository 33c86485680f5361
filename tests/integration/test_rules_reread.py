"""``RuleEngine.reread``: a defined relation, kept or not, read from then on from another of the
engine's relations with the same rows (the run's results once written), on both engines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pytest

from recon.engines.duckdb import DuckDBRules
from recon.engines.spark import SparkRules

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def _rules(engine: str, spark: SparkSession) -> tuple[Any, Any]:
    """The engine, and a relation of its own holding the rows 7 and 8 (the 'file')."""
    if engine == "duckdb":
        con = duckdb.connect()
        con.execute("CREATE TEMP TABLE written AS SELECT * FROM (VALUES (7), (8)) t(n)")
        return DuckDBRules(con), "written"
    return SparkRules(spark), spark.createDataFrame([(7,), (8,)], "n BIGINT")


@pytest.mark.parametrize("keep", [False, True], ids=["view", "kept"])
@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_relation_is_read_back_from_another(spark: SparkSession, engine: str, keep: bool) -> None:
    rules, written = _rules(engine, spark)
    rules.define("results", "SELECT 1 AS n", keep=keep)
    rules.reread("results", written)
    rules.define("after", "SELECT sum(n) AS s FROM results")
    assert rules.rows("after") == [(15,)]
    rules.close()
