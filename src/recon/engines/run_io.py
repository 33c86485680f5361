"""What a run's step 3 asks of an engine besides its rules (``recon.engines.driver``): where the
window's parts, the sink rows and a source's rows are read from, how the ledger store's entries
are read and written, how the read_uncommitted pass reads Kafka, and how the discrepancy rows
reach PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from recon import store
from recon.ledger.versions import EntryStore
from recon.read.source import SourceTimes
from recon.rules.run import RuleEngine
from recon.run.services import Progress
from recon.snapshot.window import PartitionWindow

if TYPE_CHECKING:
    from recon.engines.plan import PlannedRun


class RunIO(Protocol):
    """One run's IO on one engine (``recon.engines.spark_run``, ``recon.engines.local_run``).

    Relations are the engine's own (a DataFrame, a DuckDB view's name): the driver only hands
    them to :attr:`rules`.
    """

    @property
    def rules(self) -> RuleEngine:
        """The engine that runs the rule steps for this run."""

    def part(self, part: str) -> Any:
        """The window part ``committed``, ``pending`` or ``inflight`` read back from disk (None:
        it has no rows)."""

    def sink_rows(self) -> Any:
        """The run's sink rows (every row of a sink scanned whole)."""

    def source_rows(self, times: SourceTimes) -> Any:
        """The run's source rows (``recon.read.source``), for a pipeline with a source."""

    @property
    def entry_store(self) -> EntryStore:
        """How this engine reads and writes ledger versions (``recon.ledger.versions``)."""

    def results_at(self, path: str) -> Any | None:
        """A run's results directory as a relation (None: not on disk)."""

    def read_every(self, windows: list[PartitionWindow]) -> Any:
        """Every record of ``[read_from, pending_to)`` of these partitions, read_uncommitted."""

    def write_version(self, base_entries: list[str], has_ledger: bool) -> str:
        """Write the run's ledger version (``recon.ledger.versions.write_version``: from
        ``ledger_next``, or ``ledger_known`` and the results) and the run's results Parquet;
        returns the version's path."""

    def discrepancy_rows(self) -> Iterable[Sequence[Any]] | store.DiscrepancyFile:
        """The relation ``discrepancies`` as ``recon.store.commit_run`` takes it."""

    def close(self) -> None:
        """Release what the run held (cached relations, connections, temporary files)."""


#: Opens a run's IO: ``(plan, progress)``. It may refuse a run whose window is not on disk
#: (``recon.store.RunNotFound``) before the run is marked running.
OpenIO = Callable[["PlannedRun", Progress], RunIO]
