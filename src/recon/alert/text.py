"""Text helpers of the alerts: data-derived strings made harmless, clipping, SQL literals.

MessageIds, sink keys and run ids come from the data (or from whoever triggered a run); an alert
puts them into an email and into Slack/Markdown-rendering receivers. :func:`shown` escapes what
could forge a line or hide text (control, format and line-separator characters, shown the way
``repr`` does), and backslashes and backticks; :func:`value` additionally puts any string outside
a small safe alphabet into a code span, where no receiver renders links, mentions or emphasis.
Slack's own control characters (``&``, ``<``, ``>``) are escaped where the webhook payload is
built (:func:`slack_escape`).
"""

from __future__ import annotations

import re
import unicodedata

#: Longest rendering of one data-derived value (before the code span's backticks).
VALUE_MAX = 120

_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "`": "\\x60"}
# Shown bare: letters, digits and a few signs that no receiver turns into markup or a link.
_SAFE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:+=-]*[A-Za-z0-9=])?")
_SLACK = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    category = unicodedata.category(char)
    if category[0] != "C" and category not in ("Zl", "Zp"):
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: object, limit: int = VALUE_MAX) -> str:
    """``text`` on one line: control, format and separator characters, backslashes and
    backticks escaped as ``repr`` would; longer than ``limit`` characters is cut with "…"."""
    out: list[str] = []
    size = 0
    for char in str(text):
        piece = _escaped(char)
        if size + len(piece) > limit:
            out.append("…")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


def value(text: object, limit: int = VALUE_MAX) -> str:
    """A data-derived string (messageId, sink key, run id) as an alert shows it: bare when it is
    made of letters, digits and ``_.:+=-`` only, else escaped (:func:`shown`) in a code span."""
    escaped = shown(text, limit)
    return escaped if _SAFE.fullmatch(escaped) else f"`{escaped}`"


def slack_escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as Slack requires: no link, mention or command from the text."""
    return "".join(_SLACK.get(char, char) for char in text)


def clip(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sql_literal(text: str) -> str:
    """``text`` as a PostgreSQL string literal that a reader can paste, on one line: a plain
    ``'...'`` literal, or an escape-string ``E'...'`` when the text holds a character
    :func:`shown` would escape (then written as ``\\n``, ``\\\\``, ``\\uXXXX``)."""
    if not any(_escaped(char) != char for char in text):
        return "'" + text.replace("'", "''") + "'"
    parts = []
    for char in text:
        if char == "'":
            parts.append("''")
        elif char in ("\\", "\n", "\r", "\t"):
            parts.append(_NAMED[char])
        elif _escaped(char) != char:
            code = ord(char)
            parts.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            parts.append(char)
    return "E'" + "".join(parts) + "'"
