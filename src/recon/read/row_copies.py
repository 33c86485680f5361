"""Step 2's copies out of PostgreSQL, for both engines: the run's sink rows
(``recon.read.sink_copy``) and a declared table source's rows (``recon.read.source_copy``), each
on a thread of the calling process while the window is read from Kafka, so the two reads
overlap. The local engine always copies them so; the Spark engine where its data directory is
on the driver's disk (``recon.engines.copies`` makes a run's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RowCopies:
    """Copies run on threads: :meth:`start` them, read the window, then :meth:`wait`.

    A copy's failure is raised by :meth:`wait` in the caller's thread; when the window's read
    fails first, :meth:`join` lets the copies end and the window's failure is the one reported.

    :param copies: what is copied (``sink``, ``source``) and the call that copies it, returning
        the number of rows copied.
    """

    def __init__(self, copies: dict[str, Callable[[], int]]) -> None:
        self.copied: dict[str, int] = {}
        #: Seconds from :meth:`start` to the end of each copy that ended.
        self.took: dict[str, float] = {}
        self._failures: list[BaseException] = []
        self._started = 0.0
        self._threads = [
            threading.Thread(target=self._copy, args=(what, copy), name=f"recon-{what}-copy")
            for what, copy in copies.items()
        ]

    def start(self) -> RowCopies:
        self._started = time.monotonic()
        for thread in self._threads:
            thread.start()
        return self

    def _copy(self, what: str, copy: Callable[[], int]) -> None:
        try:
            self.copied[what] = copy()
            self.took[what] = time.monotonic() - self._started
        except BaseException as exc:  # re-raised in the caller's thread by wait()
            self._failures.append(exc)

    def join(self) -> None:
        """Wait for the started copies to end, whatever they did."""
        for thread in self._threads:
            if thread.ident is not None:  # started: one never started cannot be joined
                thread.join()

    def wait(self) -> dict[str, int]:
        """Wait for the copies; the rows each copied.

        :raises BaseException: the first copy's failure, as it was raised.
        """
        self.join()
        if self._failures:
            raise self._failures[0]
        return self.copied
