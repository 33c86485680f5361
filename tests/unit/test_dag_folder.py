"""Each YAML file of the pipelines folder ($RECON_PIPELINES_DIR) stands alone (issue 77,
finding 8): a file that is invalid, has a duplicate key or makes a DAG id another file makes too
loses its own DAGs only, and is an import error that names the file and the key, as Airflow's
DagBag (the dag-processor's parser) reports it; the other files' DAGs are still made, by a DAG
file with no import error (Airflow would mark them stale with one)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
MAIN = ROOT / "demo" / "pipelines.yaml"


def _pipeline(name: str, extra: str = "") -> str:
    return f"""
  {name}:
    semantics: at_least_once
    schedule: null
    settle_seconds: 0
    kafka: {{connection: kafka_default, topic: t, consumer_group: g, message_id: {{key: true}}}}
    sink: {{connection: postgres_sink, table: public.t, message_id_column: id}}{extra}
"""


def _dagbag(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Any:
    monkeypatch.setenv("RECON_PIPELINES", str(MAIN))
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(folder))
    monkeypatch.syspath_prepend(str(ROOT / "plugins"))
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def _errors_by_file(dagbag: Any) -> dict[str, str]:
    return {Path(path).name: text for path, text in dagbag.import_errors.items()}


def test_a_bad_file_is_an_import_error_naming_file_and_key_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a_good.yaml").write_text("pipelines:" + _pipeline("team_a"))
    (tmp_path / "b_invalid.yaml").write_text(
        "pipelines:" + _pipeline("team_b", "\n    retries: many")
    )
    (tmp_path / "c_duplicate.yaml").write_text(
        "pipelines:" + _pipeline("team_c") + "  team_c:\n    semantics: at_most_once\n"
    )
    (tmp_path / "d_good.yaml").write_text("pipelines:" + _pipeline("team_d"))

    dagbag = _dagbag(monkeypatch, tmp_path)

    ids = set(dagbag.dag_ids)
    assert {"recon_team_a", "recon_repair_team_a", "recon_team_d", "recon_repair_team_d"} <= ids
    assert not {"recon_team_b", "recon_team_c"} & ids
    assert "recon_orders_at_most_once" in ids  # the main file's DAGs are untouched
    errors = _errors_by_file(dagbag)
    # The file that makes the good files' DAGs has no import error: one would make them stale.
    assert "recon_pipelines_dir.py" not in errors and "recon_pipelines.py" not in errors
    (text,) = errors.values()
    assert f"{tmp_path / 'b_invalid.yaml'}: pipeline 'team_b': retries" in text
    assert f"{tmp_path / 'c_duplicate.yaml'}: line" in text and "duplicate key 'team_c'" in text
    assert "a_good.yaml" not in text and "d_good.yaml" not in text


def test_dag_ids_made_by_two_files_are_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a.yaml").write_text("pipelines:" + _pipeline("shared") + _pipeline("own_a"))
    (tmp_path / "b.yaml").write_text("pipelines:" + _pipeline("shared"))
    # The repair DAG of pipeline x is recon_repair_x, the reconciliation DAG of repair_x too.
    (tmp_path / "c.yaml").write_text("pipelines:" + _pipeline("x"))
    (tmp_path / "d.yaml").write_text("pipelines:" + _pipeline("repair_x"))
    # A name the main file declares: the main file keeps it.
    (tmp_path / "e.yaml").write_text("pipelines:" + _pipeline("orders_at_most_once"))
    (tmp_path / "f.yaml").write_text("pipelines:" + _pipeline("team_f"))

    dagbag = _dagbag(monkeypatch, tmp_path)

    ids = set(dagbag.dag_ids)
    assert {"recon_team_f", "recon_repair_team_f", "recon_orders_at_most_once"} <= ids
    assert not {"recon_shared", "recon_own_a", "recon_x", "recon_repair_x"} & ids
    (text,) = _errors_by_file(dagbag).values()
    a, b, c, d, e = (str(tmp_path / f"{n}.yaml") for n in "abcde")
    assert f"{a}: DAG id 'recon_shared' is also made by {b}" in text
    assert f"{b}: DAG id 'recon_shared' is also made by {a}" in text
    assert f"{c}: DAG id 'recon_repair_x' is also made by {d}" in text
    assert f"{e}: DAG id 'recon_orders_at_most_once' is also made by {MAIN}" in text
    assert "f.yaml" not in text


def test_a_folder_of_good_files_is_no_import_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a.yaml").write_text("pipelines:" + _pipeline("team_a"))
    dagbag = _dagbag(monkeypatch, tmp_path)
    assert dagbag.import_errors == {}
    assert {"recon_team_a", "recon_repair_team_a"} <= set(dagbag.dag_ids)
    assert dagbag.get_dag("recon_team_a").get_task("reconcile").pipelines_file == str(
        tmp_path / "a.yaml"
    )
    assert str(ROOT / "plugins") in sys.path
