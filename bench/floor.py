"""The raw I/O floor: what no reconciler can beat on this machine.

    python -m bench.floor kafka|copy --dataset NAME

``kafka``: a plain read of the window as fast as the broker serves it (confluent-kafka batch
consume, values touched but not parsed). ``copy``: ``COPY`` of the sink's messageIds to a sink that
only counts the bytes. The floor of a run is the sum of the two.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


class _Counting:
    """A file-like object that keeps nothing but the number of bytes written."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: Any) -> int:
        self.bytes += len(data)
        return len(data)


def read_kafka(topic: str, ends: dict[int, int]) -> dict[str, int]:
    import gc

    from bench.peers import read_window

    # As fast as the broker serves it: without the cyclic collector scanning every batch of
    # message objects (the product's readers run so too).
    gc.disable()
    records = size = 0
    # A short wait: the last, partial batch is not held back for the peers' one second.
    for batch in read_window(topic, ends, timeout=0.05):
        records += len(batch)
        size += sum(len(m.value() or b"") for m in batch)
    return {"records": records, "bytes": size}


def copy_ids(table: str) -> dict[str, int]:
    from bench.generate import sink_connect

    out = _Counting()
    with sink_connect() as pg, pg.cursor() as cur:
        cur.copy_expert(f"COPY (SELECT message_id FROM public.{table}) TO STDOUT", out)
    return {"bytes": out.bytes}


def main(argv: list[str] | None = None) -> int:
    from bench.generate import Dataset, end_offsets

    parser = argparse.ArgumentParser(prog="bench.floor")
    parser.add_argument("what", choices=("kafka", "copy"))
    parser.add_argument("--dataset", required=True)
    args = parser.parse_args(argv)
    ds = Dataset(args.dataset)
    if args.what == "kafka":
        result = read_kafka(ds.topic, end_offsets(ds.topic))
    else:
        result = copy_ids(ds.table)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
