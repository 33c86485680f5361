"""The manual keeps its word (issue 71, item 4): README.md stays short, every relative link of the
README and of ``docs/*.md`` reaches a file of the repository, and every YAML example that
declares pipelines loads through ``recon``'s own loader.

The convention for examples (also in ``docs/pipelines.md``): a ```yaml block that starts with
``pipelines:`` is a whole file; one whose first line is ``# fragment`` holds keys of one
pipeline, merged into :data:`MINIMAL_PIPELINE` before it is loaded; one whose first line is
``# not a pipeline`` declares none and is left alone. Any other YAML block fails, so that a new
example is never skipped without someone deciding it.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from recon.config import load_pipelines

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

FRAGMENT = "# fragment"
NOT_A_PIPELINE = "# not a pipeline"

#: What a ``# fragment`` example is merged into: the fewest keys a pipeline must declare.
MINIMAL_PIPELINE: dict[str, Any] = {
    "semantics": "at_least_once",
    "schedule": None,
    "settle_seconds": 60,
    "kafka": {
        "connection": "kafka_default",
        "topic": "docs",
        "consumer_group": "docs-sink",
        "message_id": {"header": "message_id"},
    },
    "sink": {
        "connection": "postgres_sink",
        "table": "public.docs",
        "message_id_column": "message_id",
    },
}

# A fence may be indented (a block inside a list item): the closing fence has the same indent.
_YAML_BLOCK = re.compile(r"^([ \t]*)```ya?ml[ \t]*\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Code spans and fenced blocks may show link syntax without being links.
_FENCED = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _yaml_blocks(page: Path) -> list[tuple[int, str]]:
    """Every ```yaml block of a page, dedented, with the line its fence is on."""
    text = page.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, textwrap.dedent(match.group(2)))
        for match in _YAML_BLOCK.finditer(text)
    ]


def _merged(base: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each mapping of ``keys`` merged into its own, and each other value replacing
    the base's."""
    merged = dict(base)
    for key, value in keys.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def _declaration(block: str) -> str | None:
    """The pipeline file an example stands for, or ``None`` for a block marked as no pipeline.

    :raises AssertionError: a block that follows none of the conventions.
    """
    first = next((line.strip() for line in block.splitlines() if line.strip()), "")
    if first == NOT_A_PIPELINE:
        return None
    if first == FRAGMENT:
        keys = yaml.safe_load(block)
        assert isinstance(keys, dict), "a fragment holds keys of one pipeline"
        return yaml.safe_dump({"pipelines": {"docs_example": _merged(MINIMAL_PIPELINE, keys)}})
    document = yaml.safe_load(block)
    assert isinstance(document, dict) and "pipelines" in document, (
        f"a YAML example starts with 'pipelines:', '{FRAGMENT}' or '{NOT_A_PIPELINE}'"
    )
    return block


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_yaml_examples_load(page: Path, tmp_path: Path) -> None:
    """Each pipeline example of the page is accepted by the loader ``recon check-config`` uses."""
    for line, block in _yaml_blocks(page):
        declaration = _declaration(block)
        if declaration is None:
            continue
        path = tmp_path / f"line{line}.yaml"
        path.write_text(declaration, encoding="utf-8")
        assert load_pipelines(path), f"{_page_id(page)}:{line}: declares no pipeline"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_relative_links_reach_files(page: Path) -> None:
    """Every link that is not a URL or an anchor of the page names a file or folder that exists."""
    text = _CODE_SPAN.sub("", _FENCED.sub("", page.read_text(encoding="utf-8")))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{_page_id(page)}: links to nothing: {broken}"


def test_readme_is_short() -> None:
    """README.md is what the product is and a tour; the manual is ``docs/``."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail to docs/"
    )


def test_the_docs_index_lists_every_page() -> None:
    """``docs/index.md`` links each page of ``docs/``, so that none is found only by chance."""
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    pages = {page.name for page in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"docs/index.md does not list {sorted(pages - linked)}"


def test_fragments_are_merged_not_replaced() -> None:
    """The fragment convention keeps the minimal pipeline's other keys (a fragment naming
    ``sink.time_column`` still has the sink's table), so a fragment tests only what it shows."""
    declaration = _declaration(f"{FRAGMENT}\nsink:\n  time_column: written_at\n")
    assert declaration is not None
    sink = yaml.safe_load(declaration)["pipelines"]["docs_example"]["sink"]
    assert sink == {**MINIMAL_PIPELINE["sink"], "time_column": "written_at"}
