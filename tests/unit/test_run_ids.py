"""One run-id rule (``recon.run.ids``) before any path is built from a run id, and no removal
outside its folder (``recon.run.paths``); property-based over generated run ids (issue 77,
item 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.run.ids import MAX_RUN_ID_LENGTH, InvalidRunId, check_run_id
from recon.run.paths import (
    pipeline_windows,
    publish_results,
    remove_tree,
    results_path,
    safe_name,
    version_name,
    window_path,
)

pytestmark = pytest.mark.unit

PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


@pytest.mark.parametrize(
    "run_id", [".", "..", "...", "", "a/b", "../x", "a\\b", "a\x00b", "tab\there", "x" * 251]
)
def test_ids_that_could_leave_their_folder_are_refused_naming_the_pipeline(run_id: str) -> None:
    with pytest.raises(InvalidRunId, match="pipeline 'p1': run id .* cannot be used"):
        check_run_id(run_id, "p1")
    for build in (
        lambda: window_path("/d", "p1", run_id, "committed"),
        lambda: results_path("/d", "p1", run_id),
        lambda: version_name(run_id),
    ):
        with pytest.raises(InvalidRunId):
            build()


@pytest.mark.parametrize(
    "run_id",
    ["manual__2026-12-06T03:00:00+00:00", "scheduled__2026-12-06T03:00:00.123456+00:00",
     "r1", "a.b", ".hidden", "x" * MAX_RUN_ID_LENGTH, "ünï-cödé", "with space"],
)  # fmt: skip
def test_airflow_and_everyday_ids_are_accepted(run_id: str) -> None:
    assert check_run_id(run_id) == run_id
    assert window_path("/d", "p1", run_id, "sink").startswith("/d/windows/p1/")


@given(st.text(max_size=300))
@PROPERTY
def test_no_run_id_makes_a_path_outside_its_pipeline_folder(run_id: str) -> None:
    try:
        check_run_id(run_id)
    except InvalidRunId:
        return
    for path, parent in (
        (window_path("/d", "p1", run_id, "sink"), "/d/windows/p1"),
        (results_path("/d", "p1", run_id), "/d/results/p1"),
    ):
        normal = os.path.normpath(path)
        assert normal.startswith(parent + "/"), (run_id, path)
        assert os.path.dirname(normal.rstrip("/")) in (parent, f"{parent}/{safe_name(run_id)}")


@given(st.text(max_size=50))
@PROPERTY
def test_a_safe_name_never_names_a_folder_or_its_parent(run_id: str) -> None:
    name = safe_name(run_id)
    assert name not in ("", ".", "..") and "/" not in name, (run_id, name)


def test_a_removal_outside_its_parent_is_refused_and_removes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    mine = Path(pipeline_windows(str(data), "p1"))
    other = Path(pipeline_windows(str(data), "p2")) / "r1"
    (mine / "r1").mkdir(parents=True)
    other.mkdir(parents=True)
    (other / "part-0.parquet").write_bytes(b"theirs")
    for climbing in (mine / "..", mine / "r1" / ".." / "..", mine):
        with pytest.raises(ValueError, match="refusing to remove"):
            remove_tree(str(climbing), str(mine))
    assert (other / "part-0.parquet").read_bytes() == b"theirs"
    remove_tree(str(mine / "r1"), str(mine))
    assert not (mine / "r1").exists()


def test_publishing_results_never_removes_a_sibling_run(tmp_path: Path) -> None:
    written = tmp_path / "ledger" / "v1.parquet"
    written.parent.mkdir()
    written.write_bytes(b"results")
    sibling = Path(results_path(str(tmp_path), "p1", "r0"))
    sibling.mkdir(parents=True)
    out = results_path(str(tmp_path), "p1", "r1")
    publish_results(str(written), out)
    publish_results(str(written), out)  # a re-run replaces its own folder only
    assert sibling.exists() and (Path(out) / "part-00000.parquet").read_bytes() == b"results"


PIPELINE = """pipelines:
  {name}:
    semantics: exactly_once
    schedule: null
    kafka: {{connection: kafka_default, topic: t, consumer_group: g, message_id: {{header: id}}}}
    sink: {{connection: postgres_sink, table: public.t, message_id_column: message_id}}
"""


@given(st.text(min_size=1, max_size=40))
@PROPERTY
def test_a_pipeline_name_is_refused_in_one_error_or_names_a_folder_of_its_own(
    tmp_path: Path, name: str
) -> None:
    from recon.config import load_pipelines
    from recon.errors import ConfigError

    path = tmp_path / "pipelines.yaml"
    path.write_text(PIPELINE.format(name=json.dumps(name)), encoding="utf-8")
    try:
        (declared,) = load_pipelines(path)
    except ConfigError:
        return  # a user mistake, named: never a crash
    assert declared == name
    for folder in (pipeline_windows("/d", name), results_path("/d", name, "r1")):
        assert os.path.normpath(folder).startswith("/d/"), (name, folder)
        assert os.path.normpath(folder).split("/")[3] == name, (name, folder)
