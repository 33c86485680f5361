"""Finding the real process a fault test kills: by its parent and its command line, from /proc."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Argv = list[bytes]


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name in field 2 may hold spaces and parentheses: split after the last.
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    return children


def _argv(pid: int) -> Argv | None:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None


def find_process(
    parent: int, matches: Callable[[Argv], bool], *, depth: int | None = None
) -> int | None:
    """The first process below ``parent`` whose argv ``matches``, searched at most ``depth``
    levels down (``None``: the whole tree); ``None`` when there is none."""
    children = _children()
    todo = [(pid, 1) for pid in children.get(parent, [])]
    while todo:
        pid, level = todo.pop()
        argv = _argv(pid)
        if argv is None:
            continue
        if matches(argv):
            return pid
        if depth is None or level < depth:
            todo.extend((child, level + 1) for child in children.get(pid, []))
    return None
