"""How a sink without an ingest sequence is read each run (issue 78): ``sink.incremental``, the
way each pipeline uses and why (``recon check-config``), and when the stored snapshot cannot be
trusted and the run reads the whole table. The reads themselves:
``tests/integration/test_sink_without_sequence.py``."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import parse_pipelines
from recon.read.sink_copy import read_way
from recon.snapshot.sink_changes import HORIZON_LIMIT, full_copy_reason

pytestmark = pytest.mark.unit


def way(**changes: Any) -> tuple[str, str]:
    (cfg,) = parse_pipelines(doc(**changes), source="pipelines.yaml").values()
    return read_way(cfg)


def test_each_way_and_why() -> None:
    assert way() == ("xmin", way()[1]) and "no sink.ingest_seq_column" in way()[1]
    assert way(sink__incremental="full")[0] == "full"
    assert way(sink__incremental="xmin")[0] == "xmin"
    assert way(sink__ingest_seq_column="id")[0] == "sequence"
    order = {"key_column": "k", "position_column": "p"}
    got = way(order=order)
    assert got[0] == "full" and "order is declared" in got[1]
    assert way(order=order, sink__incremental="xmin")[0] == "xmin"


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"sink__incremental": "sometimes"}, "sink.incremental: expected one of xmin, full"),
        (
            {"sink__incremental": "xmin", "sink__ingest_seq_column": "id"},
            "sink.incremental: applies only to a sink without ingest_seq_column",
        ),
        ({"sink__incremental": 3}, "sink.incremental: "),
    ],
)
def test_a_wrong_incremental_names_pipeline_and_key(changes: dict[str, Any], needle: str) -> None:
    (error,) = errors_of(doc(**changes))
    assert error.startswith("pipelines.yaml: pipeline 'payments': ")
    assert needle in error, error


def test_when_the_run_reads_the_whole_table() -> None:
    now = "5000:5010:5001"
    assert full_copy_reason("4990:4995:", now, 4000) is None
    assert "no earlier run" in (full_copy_reason(None, now, 4000) or "")
    assert "a view or a foreign table" in (full_copy_reason("4990:4995:", now, None) or "")
    assert "oldest unfrozen" in (full_copy_reason("3990:3995:", now, 4000) or "")
    assert "restored or replaced" in (full_copy_reason("6000:6000:", now, 4000) or "")
    far = 2**33
    old = f"{far - HORIZON_LIMIT - 1}:{far - HORIZON_LIMIT}:"
    assert "wraparound" in (full_copy_reason(old, f"{far}:{far}:", 0) or "")
    assert full_copy_reason(f"{far - 1000}:{far - 900}:", f"{far}:{far}:", far - 2000) is None


def test_check_config_says_each_pipelines_way(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from recon.cli import main

    path = tmp_path / "pipelines.yaml"
    path.write_text(doc(sink__incremental="full"))
    assert main(["--pipelines", str(path), "check-config"]) == 0
    out = capsys.readouterr().out
    assert "payments: new sink rows found by full: sink.incremental: full" in out, out
