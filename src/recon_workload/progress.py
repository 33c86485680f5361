"""Progress lines on stderr, at most one every few seconds, so long runs show they are alive."""

from __future__ import annotations

import sys
import time


class Progress:
    """Throttled progress reporter.

    :param label: printed in front of every line (the scenario run).
    :param every: minimum seconds between two throttled lines.
    :param enabled: ``False`` silences it (tests that want quiet output).
    """

    def __init__(self, label: str, every: float = 3.0, enabled: bool = True) -> None:
        self.label = label
        self.every = every
        self.enabled = enabled
        self._start = time.monotonic()
        self._last = 0.0

    def step(self, message: str) -> None:
        """A phase change: always printed."""
        self._emit(message)

    def tick(self, message: str) -> None:
        """A progress update: printed only if the last line is older than ``every`` seconds."""
        if time.monotonic() - self._last >= self.every:
            self._emit(message)

    def _emit(self, message: str) -> None:
        self._last = time.monotonic()
        if self.enabled:
            elapsed = self._last - self._start
            print(f"[{self.label} +{elapsed:5.1f}s] {message}", file=sys.stderr, flush=True)
