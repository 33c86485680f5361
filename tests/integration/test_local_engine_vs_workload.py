"""Every workload scenario through the local engine (``engine: local``): each verdict equals the
ground truth, message by message; the same run id re-run gives identical rows.

The same check as ``test_engine_vs_workload`` (whose helpers this reuses), with the pipeline
declared ``engine: local``: the window is read by the Kafka reader processes, the sink copied out
with ``COPY``, the verdicts judged and the results Parquet written by DuckDB. The results are read
back with Spark, as the validation step reads them: that Spark can read them is part of the test.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_engine_vs_workload import (
    PIPELINE_YAML,
    SEMANTICS,
    _actual,
    _discrepancy_rows,
    _expected,
)

from recon.config import load_pipelines
from recon.engine import results_db, run_pipeline, window_path
from recon.store import forget_pipeline
from recon_workload import SCENARIOS, remove_run, run_scenario

pytestmark = pytest.mark.integration

LOCAL_PIPELINE_YAML = PIPELINE_YAML + "    engine: local\n"


def assert_local_layout(data_dir: str, pipeline: str, run_id: str) -> None:
    """The run's window directory is the local engine's: three parts made visible at once."""
    run_dir = os.path.dirname(window_path(data_dir, pipeline, run_id, "committed"))
    for part in ("committed", "pending", "sink"):
        assert os.path.isdir(os.path.join(run_dir, part)), f"{run_dir}: no {part}/"
    assert os.path.exists(os.path.join(run_dir, "_SUCCESS")), f"{run_dir}: no _SUCCESS"


@pytest.mark.parametrize("scenario", list(SEMANTICS))
def test_local_engine_verdicts_equal_the_ground_truth(
    scenario: str, spark: Any, pg_kwargs: dict[str, Any], tmp_path: Path
) -> None:
    assert scenario in SCENARIOS
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(scenario, messages=120, partitions=3, seed=11, run_tag=tag, progress=False)
    semantics, idempotent = SEMANTICS[scenario]
    name = f"wl_local_{scenario}_{tag}"
    yaml_path = tmp_path / "pipelines.yaml"
    yaml_path.write_text(
        LOCAL_PIPELINE_YAML.format(
            name=name, semantics=semantics, topic=truth.topic, group=truth.consumer_group,
            table=truth.sink_table, idempotent=json.dumps(idempotent),
        )
    )  # fmt: skip
    cfg = load_pipelines(yaml_path)[name]
    assert cfg.engine == "local"
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        assert_local_layout(data_dir, name, "run-1")
        expected = _expected(pg_kwargs, truth.scenario_run)
        actual, invalid_sink_positions = _actual(
            spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table
        )
        # Each sink row without an id comes from a record the ledger holds as invalid.
        for position in invalid_sink_positions:
            assert expected.get(position, ("?",))[0] == "invalid", position
        wrong = {
            k: (expected.get(k), actual.get(k))
            for k in set(expected) | set(actual)
            if expected.get(k) != actual.get(k)
        }
        assert not wrong, (
            f"{scenario}: {len(wrong)} verdicts differ from the ground truth "
            f"(key: (expected, actual)): {dict(sorted(wrong.items())[:10])}"
        )
        expected_counts = {v: n for v, n in truth.counts.items() if n}
        actual_counts = {v: n for v, n in summary.counts.items() if n and v != "topic_duplicate"}
        if invalid_sink_positions:
            actual_counts["invalid"] -= len(invalid_sink_positions)
        assert actual_counts == expected_counts

        # The same run id again: the same snapshot, the same verdicts, the same rows.
        before = _discrepancy_rows(name, "run-1")
        again = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        assert again.counts == summary.counts
        assert _discrepancy_rows(name, "run-1") == before
    finally:
        remove_run(scenario, tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
