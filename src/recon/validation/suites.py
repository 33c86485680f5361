"""The suite files of ``expectations/`` and the values of their ``$PARAMETER`` placeholders."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from recon.config import PipelineConfig
from recon.errors import ReconError
from recon.verdicts import SEMANTICS

#: Environment variable naming the folder of the suite files (default: ``<repo>/expectations``).
EXPECTATIONS_ENV = "RECON_EXPECTATIONS_DIR"
#: The suite file format this module understands (``meta.recon.suite_version``).
SUITE_VERSION = 1


class ValidationError(ReconError):
    """A suite cannot be loaded, or Great Expectations could not evaluate it."""


def _repo_root() -> str:
    return os.environ.get("RECON_ROOT") or str(Path(__file__).resolve().parents[3])


def expectations_dir() -> str:
    """``$RECON_EXPECTATIONS_DIR``, else ``expectations/`` at the repository root."""
    return os.environ.get(EXPECTATIONS_ENV) or os.path.join(_repo_root(), "expectations")


def load_suite(semantics: str) -> dict[str, Any]:
    """The suite file for a claimed semantic, as a dict in GX's suite JSON format.

    :raises ValidationError: unknown semantic, unreadable file, or a file of another version.
    """
    if semantics not in SEMANTICS:
        raise ValidationError(
            f"unknown semantics {semantics!r}: expected one of {', '.join(SEMANTICS)}"
        )
    path = os.path.join(expectations_dir(), f"{semantics}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            document: dict[str, Any] = json.load(handle)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the suite ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    version = document.get("meta", {}).get("recon", {}).get("suite_version")
    if document.get("name") != semantics or version != SUITE_VERSION:
        raise ValidationError(
            f"{path}: expected suite '{semantics}' with meta.recon.suite_version "
            f"{SUITE_VERSION}, got '{document.get('name')}' version {version}"
        )
    return document


def suite_columns(document: dict[str, Any]) -> list[str]:
    """The results' columns a suite reads: each expectation's ``column`` and the columns of its
    ``row_condition`` (a validation without Spark reads only these)."""
    found: set[str] = set()

    def condition(value: Any) -> None:
        if isinstance(value, dict):
            column = value.get("column")
            if isinstance(column, dict) and isinstance(column.get("name"), str):
                found.add(column["name"])
            for item in value.values():
                condition(item)
        elif isinstance(value, list):
            for item in value:
                condition(item)

    for expectation in document.get("expectations", []):
        kwargs = expectation.get("kwargs", {})
        if isinstance(kwargs.get("column"), str):
            found.add(kwargs["column"])
        condition(kwargs.get("row_condition"))
    return sorted(found)


def _mostly(max_ratio: float) -> float:
    # The contract compares ``count <= ratio * judged`` exactly, on the decimal the user wrote.
    # GX succeeds when ``(judged - count) / judged >= mostly``, in floating point. Both sides
    # round correctly from exact values, so at the threshold they are the same float and pass.
    return float(1 - Fraction(str(max_ratio)))


def suite_parameters(cfg: PipelineConfig) -> dict[str, Any]:
    """The values of the suites' ``$PARAMETER`` placeholders for one pipeline."""
    tol = cfg.tolerances
    return {
        "lost_mostly": _mostly(tol.max_loss_ratio),
        "duplicated_mostly": _mostly(tol.max_duplicate_ratio),
        "topic_duplicate_allowed": [False] if cfg.idempotent_producer else [False, True],
        "max_unverifiable": int(tol.max_unverifiable),
        "max_invalid": int(tol.max_invalid),
    }
