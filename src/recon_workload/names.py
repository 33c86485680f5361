"""Names of everything one scenario run creates: topic, consumer group, sink tables, ledger key.

A run is ``<scenario>-<run tag>``; the tag makes the run's topic, group and tables unique, so runs
never see each other's data, and re-running a tag replaces that run's leftovers.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from recon_workload.errors import WorkloadError

_TAG = re.compile(r"^[a-z0-9_]{1,24}$")
# PostgreSQL truncates identifiers beyond 63 bytes, which would silently merge two runs' tables.
_PG_MAX_IDENT = 63


def new_run_tag() -> str:
    """A fresh tag: month-day-time plus a few random hex digits (two runs a second apart differ)."""
    return time.strftime("%m%d%H%M%S") + os.urandom(2).hex()[:3]


@dataclass(frozen=True)
class RunNames:
    """The names one run uses.

    :param scenario: scenario name, e.g. ``at_least_once``.
    :param run_tag: lowercase letters, digits and ``_``.
    """

    scenario: str
    run_tag: str

    def __post_init__(self) -> None:
        if not _TAG.match(self.run_tag):
            raise WorkloadError(
                f"run tag {self.run_tag!r}: use 1-24 lowercase letters, digits or '_'"
            )
        longest = self.aux_table("processed")
        if len(longest) > _PG_MAX_IDENT:
            raise WorkloadError(
                f"run tag {self.run_tag!r} is too long for scenario {self.scenario}: "
                f"table name {longest!r} exceeds {_PG_MAX_IDENT} characters"
            )

    @property
    def scenario_run(self) -> str:
        return f"{self.scenario}-{self.run_tag}"

    def topic(self, suffix: str = "") -> str:
        """The run's topic; ``suffix`` names a second one (read-process-write's input)."""
        return f"wl-{self.scenario}-{self.run_tag}" + (f"-{suffix}" if suffix else "")

    def group(self, suffix: str = "") -> str:
        return f"wl-{self.scenario}-{self.run_tag}" + (f"-{suffix}" if suffix else "")

    @property
    def table(self) -> str:
        """The sink table, unqualified (it lives in schema ``public``)."""
        return f"wl_{self.scenario}_{self.run_tag}"

    @property
    def qualified_table(self) -> str:
        return f"public.{self.table}"

    def aux_table(self, suffix: str) -> str:
        """A consumer's bookkeeping table beside the sink (processed ids, stored offsets)."""
        return f"{self.table}_{suffix}"

    @property
    def outbox_table(self) -> str:
        """The application's transactional outbox beside the sink (the outbox scenarios: the
        pipeline's source), unqualified (schema ``public``, like the sink)."""
        return self.aux_table("outbox")

    @property
    def qualified_outbox_table(self) -> str:
        return f"public.{self.outbox_table}"
