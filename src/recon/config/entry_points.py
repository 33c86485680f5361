"""What other installed packages plug into ``recon`` through entry points: Airflow's connection
lookup (``recon.connection_resolvers``) and its provider hooks for alerts
(``recon.alert_transports``), both registered by the wheel's ``recon_airflow``. ``recon`` itself
never imports Airflow; a package installed without the ``airflow`` extra has neither."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)


@contextlib.contextmanager
def plugin_output() -> Iterator[None]:
    """While ``recon`` calls into an installed plugin, what it prints goes to stderr.

    Airflow configures logging as it is imported, its root handler and its structlog loggers
    writing to whatever ``sys.stdout`` is when they are made; ``recon run --json`` prints its
    summary on stdout, which a log line there would break. Loading the plugin (the import) and
    each call into it run inside this block, so what Airflow makes then writes to stderr.
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield


def first_loadable(group: str, without: str) -> Any | None:
    """The object of the first entry point of ``group`` (by name) whose module imports, or None.

    :param group: the entry point group.
    :param without: what the caller does without one (said in the warning of one that fails).
    """
    from importlib.metadata import entry_points

    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        try:
            with plugin_output():
                return point.load()
        except ImportError as exc:  # the package without its extra: Airflow not installed
            log.debug("entry point %s not usable: %s", point.value, exc)
        except Exception as exc:  # noqa: BLE001 - e.g. an unreadable Airflow configuration
            log.warning(
                "entry point %s failed to load, %s: %s: %s",
                point.value, without, type(exc).__name__, exc,
            )  # fmt: skip
    return None
