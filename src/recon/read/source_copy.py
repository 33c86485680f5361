"""A run's source rows (``recon.read.source``) copied out of PostgreSQL into Parquet, for both
engines: one ``COPY`` streamed through Arrow while the window is read from Kafka, instead of a
second read over JDBC by the Spark engine (P7 at 10M rows: the JDBC read in four slices and its
cache cost the three-way Spark run about 45 s more than the two-way one).

The copy's directory holds ``part-0.parquet`` and, beside it, the :class:`SourceTimes` the rows
were read for (``times.json``): the rows a run reads depend only on its record, so a later step
(or a re-judged run) uses the copy only when those times match.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os

from recon.config import PipelineConfig
from recon.read.source import SourceTimes

#: Beside a run's source rows: the :class:`SourceTimes` they were read for.
TIMES_FILE = "times.json"
#: The Parquet file of the copied rows inside the copy's directory.
ROWS_FILE = "part-0.parquet"


def copy_source_rows(
    cfg: PipelineConfig, times: SourceTimes, time_type: str | None, directory: str
) -> int:
    """The run's source rows into ``directory`` (``part-0.parquet``, then ``times.json``).

    :param time_type: the source's time column's type, as step 1 read it from the catalog
        (``recon.read.source.inspect_source``); None: step 1 saw no source table (the pipeline
        declared it since), and the catalog is asked now.

    :returns: the number of rows copied.
    """
    from recon.read.sink_arrow import copy_to_parquet
    from recon.read.source import inspect_source, source_query, source_schema
    from recon.run.services import source_db

    os.makedirs(directory, exist_ok=True)
    # A copy for other times, from an earlier read of the run id, stops counting first.
    with contextlib.suppress(FileNotFoundError):
        os.remove(f"{directory}/{TIMES_FILE}")
    with source_db(cfg) as pg:
        if time_type is None:
            time_type = inspect_source(pg, cfg).time_type
        query = source_query(pg, cfg, times, time_type)
        # Arrow's CSV reader takes no 't'/'f': the flag comes out as 1/0.
        n = copy_to_parquet(
            pg, f"SELECT message_id, source_key, judge::int FROM ({query}) q",
            source_schema(), f"{directory}/{ROWS_FILE}", unique=("message_id", "source_key"),
        )  # fmt: skip
    # Written last: a copy that stopped half way is never taken for a whole one.
    with open(f"{directory}/{TIMES_FILE}", "w", encoding="utf-8") as fh:
        json.dump(times_json(times), fh)
    return n


def times_json(times: SourceTimes) -> dict[str, str | None]:
    return {k: None if v is None else v.isoformat() for k, v in dataclasses.asdict(times).items()}


def copied_for(directory: str, times: SourceTimes) -> bool:
    """Whether ``directory`` holds the source rows read for ``times``."""
    try:
        with open(f"{directory}/{TIMES_FILE}", encoding="utf-8") as fh:
            return bool(json.load(fh) == times_json(times))
    except FileNotFoundError:
        return False
