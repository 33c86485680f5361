"""A validate task's log starts with what the validation did, not with Great Expectations'
import-time chatter: GX logs, at INFO, one line per API function it leaves out of its docs
(214 lines with GX 1.x here), and Airflow's task log records INFO. Each case imports GX in a
fresh interpreter, as a task does, with the root logger at INFO.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

CHATTER = "Skipping registering function"


def _logged_on_import(first: str) -> str:
    code = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr)\n"
        f"{first}\n"
        "import great_expectations\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stderr


def test_gx_alone_logs_its_chatter_at_info() -> None:
    """The control: without the product's setting, GX does log it (if this fails, GX stopped,
    and the setting in ``recon.validation.checkpoint`` can go)."""
    assert _logged_on_import("pass").count(CHATTER) > 10


def test_the_validation_module_keeps_it_out_of_the_log() -> None:
    logged = _logged_on_import("import recon.validation.checkpoint")
    assert logged.count(CHATTER) == 0
