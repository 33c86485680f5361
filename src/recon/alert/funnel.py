"""Three-way runs in an alert: the line of a run's way from source to sink, and the source row an
``unpublished`` or source ``invalid`` row's detail names.

The readers take the detail apart by the formats that wrote it (``recon.model.details.UNPUBLISHED``,
``SOURCE_WITHOUT_ID``), like ``recon.model.details.late_figures`` does for ``late``: a change of the
wording fails the tests instead of silently dropping the source row. The page reads them here
too (``recon_page.hints``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from recon.model.details import SOURCE_WITHOUT_ID, UNPUBLISHED

#: The hops of a run's way from source to sink, in order (``recon.runs.funnel``'s keys).
STAGES = ("produced", "published", "committed", "delivered")

# The source key is the user's data and may hold anything, the format's own words included: it is
# matched greedily, so only the words the reconciler wrote after it end the match.
_UNPUBLISHED_READ = re.compile(
    r"\A" + re.escape(UNPUBLISHED).replace("%s", "(.*)").replace("%d", r"(\d+)") + r"\Z",
    re.DOTALL,
)
_WITHOUT_ID_READ = re.compile(
    r"\A" + re.escape(SOURCE_WITHOUT_ID).replace("%s", "(.*)") + r"\Z", re.DOTALL
)


def unpublished_source(detail: object) -> tuple[str, int] | None:
    """``(source_key, rows)`` of an ``unpublished`` row's detail: the source row that names the
    message and how many rows name it; ``None`` for any other text. The key is data: whoever
    shows it escapes it.

    :param detail: the row's ``detail`` (``recon.model.details.UNPUBLISHED``).
    """
    found = _UNPUBLISHED_READ.match(detail) if isinstance(detail, str) else None
    return (found[1], int(found[2])) if found else None


def source_row_without_id(detail: object) -> str | None:
    """The source key of an ``invalid`` row that is a source row without a messageId
    (``recon.model.details.SOURCE_WITHOUT_ID``); ``None`` for any other text (an invalid record or
    sink row).

    :param detail: the row's ``detail``.
    """
    found = _WITHOUT_ID_READ.match(detail) if isinstance(detail, str) else None
    return found[1] if found else None


def _count(funnel: Mapping[str, Any], name: str) -> int:
    return int(funnel.get(name) or 0)


def _rows(n: int) -> str:
    return "row" if n == 1 else "rows"


def funnel_line(funnel: Mapping[str, Any] | None) -> str | None:
    """``source → topic → sink: 6 produced, 4 published, 5 committed, 5 delivered; 1 unsourced``
    from a summary's ``funnel`` (``recon.runs.funnel``), with the source rows without a messageId
    and the ids the source holds more than once when there are any; ``None`` for a run without a
    source.

    :param funnel: the summary's ``funnel``: integer counts by name, ``unsourced_sample`` aside.
    """
    if not funnel:
        return None
    try:
        hops = ", ".join(f"{_count(funnel, name)} {name}" for name in STAGES)
        findings = [f"{_count(funnel, 'unsourced')} unsourced"]
        invalid, twice = _count(funnel, "source_invalid"), _count(funnel, "source_duplicates")
    except (AttributeError, TypeError, ValueError):
        return None  # a summary of another shape: the alert goes out without the line
    if invalid:
        findings.append(f"{invalid} source {_rows(invalid)} without a message id")
    if twice:
        findings.append(f"{twice} extra source {_rows(twice)} of ids held more than once")
    return f"source → topic → sink: {hops}; {'; '.join(findings)}"
