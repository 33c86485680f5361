"""Searching what a DAG run left behind for the stack's secrets, raw, URL-quoted or JSON-escaped."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote


def _forms(secret: str) -> set[bytes]:
    """The secret as written raw, URL-quoted (a DSN) or JSON-escaped."""
    return {form.encode() for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1])}


def find_secrets(secrets: dict[str, str], where: str, data: bytes) -> list[str]:
    return [
        f"{name} in {where}"
        for name, secret in secrets.items()
        if any(form in data for form in _forms(secret))
    ]


def files_under(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


def scan(secrets: dict[str, str], places: Iterable[tuple[str, bytes]]) -> tuple[int, list[str]]:
    count, found = 0, []
    for where, data in places:
        count += 1
        found += find_secrets(secrets, where, data)
    return count, found
