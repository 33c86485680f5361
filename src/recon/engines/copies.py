"""Step 2's copies out of PostgreSQL for a planned run, for both engines
(``recon.read.row_copies``): the run's sink rows, and a declared table source's rows, each read
as the run's plan describes them (``recon.engines.plan``)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from recon.engines.plan import PlannedRun
from recon.read.row_copies import RowCopies
from recon.read.sink_copy import copy_sink_rows_for_run
from recon.read.source_copy import copy_source_rows


def row_copies(plan: PlannedRun, sink_dir: str, source_dir: str) -> RowCopies:
    """The run's sink rows into ``sink_dir``, and its source's rows into ``source_dir`` when the
    pipeline declares a table source (a topic source is read with the window)."""
    cfg, catalog = plan.cfg, plan.catalog
    copies: dict[str, Callable[[], int]] = {
        "sink": functools.partial(copy_sink_rows_for_run, cfg, plan.record, catalog.sink, sink_dir)
    }
    if plan.source_times is not None and cfg.source is not None and not cfg.source.is_topic:
        copies["source"] = functools.partial(
            copy_source_rows, cfg, plan.source_times, catalog.source_time_type, source_dir
        )
    return RowCopies(copies)
