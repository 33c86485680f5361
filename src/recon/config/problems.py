"""The problems of one pipeline file, collected and reported together.

Each problem is one line ``file: pipeline 'name': key.path: message``; :class:`Problems` gathers
them while a file is read and raises one :class:`~recon.errors.ConfigError` listing them all (at
most ``MAX_REPORTED_ERRORS`` lines in the message, every one in ``ConfigError.errors``).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticCustomError

from recon.errors import ConfigError

MAX_REPORTED_ERRORS = 50

#: The error type of every message this package writes itself (pydantic's own are translated).
RECON_ERROR = "recon"


class Problems:
    """Collects problems as ``file: pipeline 'name': key.path: message`` lines.

    :param source: the file name every line starts with.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, pipeline: str | None, path: str, message: str) -> None:
        """Record one problem.

        :param pipeline: the pipeline's name; ``None`` for the file's own shape.
        :param path: the dotted key path inside the pipeline (or the file); ``""`` for the whole.
        :param message: what is wrong.
        """
        parts = [self.source]
        if pipeline is not None:
            parts.append(f"pipeline '{pipeline}'")
        if path:
            parts.append(path)
        self.items.append(": ".join([*parts, message]))

    def raise_if_any(self) -> None:
        """Raise one :class:`ConfigError` naming every problem recorded, if there is any."""
        if not self.items:
            return
        if len(self.items) == 1:
            raise ConfigError(self.items[0], self.items)
        shown = self.items[:MAX_REPORTED_ERRORS]
        lines = [f"{self.source}: {len(self.items)} problems in the pipeline declarations:"]
        lines += [f"  {item}" for item in shown]
        if len(self.items) > len(shown):
            lines.append(f"  ... and {len(self.items) - len(shown)} more")
        raise ConfigError("\n".join(lines), self.items)


def invalid(message: str) -> PydanticCustomError:
    """A validation error whose message is ``message`` as written, for pydantic to report.

    :param message: the whole message; braces in it are not format fields.
    """
    return PydanticCustomError(RECON_ERROR, "{message}", {"message": message})


def kind_of(value: Any) -> str:
    """How a message names the type of a YAML value: ``a string``, ``a list``, ``null`` ...

    :param value: a value as the YAML loader made it.
    """
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    kinds.update({list: "a list", dict: "a mapping"})
    return kinds.get(type(value), f"a {type(value).__name__}")
