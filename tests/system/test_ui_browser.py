"""The reconciliation page in a real browser: log into Airflow's UI, open the page, see the data.

Headless Chromium (Debian's package) driven by Node's playwright-core (``ui_check.mjs``); the
screenshots land in ``test-artifacts/`` at the repository root.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOT = ARTIFACTS / "recon-page.png"
SCREENSHOT_FULL = ARTIFACTS / "recon-page-full.png"


def test_reconciliation_page_in_the_airflow_ui(
    airflow_url: str, browser_deps: dict[str, str], seeded_pipeline: tuple[str, list[str]]
) -> None:
    pipeline, _ = seeded_pipeline
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in (SCREENSHOT, SCREENSHOT_FULL):
        shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="recon-chromium-") as profile:
        env = {
            **os.environ,
            "RECON_UI_BASE_URL": airflow_url,
            "RECON_UI_USER": "admin",
            "RECON_UI_PASSWORD": os.environ.get("RECON_AIRFLOW_ADMIN_PASSWORD", ""),
            "RECON_UI_PIPELINE": pipeline,
            "RECON_UI_SCREENSHOT": str(SCREENSHOT),
            "RECON_UI_SCREENSHOT_FULL": str(SCREENSHOT_FULL),
            "RECON_UI_USER_DATA_DIR": profile,
            "RECON_NODE_DIR": browser_deps["node_dir"],
            "CHROMIUM": browser_deps["chromium"],
        }
        done = subprocess.run(
            ["node", str(Path(__file__).with_name("ui_check.mjs"))],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"ui_check.mjs printed no result (exit {done.returncode}):\n{done.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result["ok"], f"browser check failed at step {result['step']!r}: {result.get('error')}"

    assert result["cookie"], "the login form did not set Airflow's _token cookie"
    assert "/plugin/recon" in result["ui_url"]
    assert pipeline in result["heading"] and "failed" in result["heading"].lower()
    # 8 runs: delivered and pending in every bar of the first chart, lost/duplicated on top.
    assert result["bars"] >= 8 * 2, result
    assert {"delivered", "lost", "duplicated", "pending"} <= set(result["verdicts"]), result
    assert result["legend_items"] >= 8, result
    assert result["discrepancy_rows"] == 12, result
    assert result["direct_bars"] == result["bars"], result
    assert SCREENSHOT.stat().st_size > 10_000
    assert SCREENSHOT_FULL.stat().st_size > 10_000
