"""The package keeps its shape: no import circle, no module over 450 lines (issue 16)."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "package_shape.py"


def _shape() -> object:
    loader = importlib.machinery.SourceFileLoader("package_shape", str(SCRIPT))
    module = types.ModuleType(loader.name)
    module.__file__ = str(SCRIPT)
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module


def test_no_import_circle_and_no_long_module() -> None:
    assert _shape().problems() == []  # type: ignore[attr-defined]


def test_a_circle_is_found_even_through_a_lazy_import() -> None:
    shape = _shape()
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert shape.circles(graph) == [["a", "b", "c"]]  # type: ignore[attr-defined]


def test_a_function_level_import_is_an_edge(tmp_path: Path) -> None:
    shape = _shape()
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from recon import other\n    return other\n")
    assert shape.imports("recon.m", path, {"recon.m", "recon.other"}) == {"recon.other"}  # type: ignore[attr-defined]
