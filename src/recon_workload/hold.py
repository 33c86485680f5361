"""A caller's handle on a transaction a scenario holds open (``concurrent_writers``).

The scenario sets :attr:`HoldGate.held` once the slow member's sink transaction is open, its
rows inserted but invisible, and the other member has committed all of its rows and offsets; it
then waits until the caller releases the gate (or ``release_file`` appears, or ``timeout`` runs
out) before letting the transaction commit. In between, the caller can reconcile the pipeline and
see what a run sees while a long transaction is in flight::

    gate = HoldGate()
    job = threading.Thread(target=run_scenario, args=("concurrent_writers",), kwargs={"hold": gate})
    job.start()
    gate.held.wait(120)
    ...                      # reconcile while the transaction is open
    gate.release()
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field


@dataclass
class HoldGate:
    """Keeps a held sink transaction open until the caller lets it commit.

    :param release_file: the gate also opens when this path exists (``recon-workload run
        --hold-until PATH``: another process can release it).
    :param timeout: seconds the transaction stays held at most; then it commits anyway.
    """

    release_file: str | None = None
    timeout: float = 600.0
    held: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        """Let the held transaction commit."""
        self.released.set()

    def is_released(self) -> bool:
        return self.released.is_set() or (
            self.release_file is not None and os.path.exists(self.release_file)
        )

    def hold(self) -> bool:
        """Called by the scenario with the transaction open: announce it, wait for the release.

        :returns: ``False`` when ``timeout`` ran out first.
        """
        self.held.set()
        deadline = time.monotonic() + self.timeout
        while not self.is_released():
            if time.monotonic() >= deadline:
                return False
            self.released.wait(0.2)
        return True
