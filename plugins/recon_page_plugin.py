"""Registers the "Delivery reconciliation" page for an Airflow whose plugins folder is this one.

The plugin itself is :class:`recon_page.plugin.ReconPagePlugin`. Where ``kafka-recon`` is
installed (``make setup``'s editable install, or a wheel) Airflow finds it through the package's
``airflow.plugins`` entry point, and this file exports nothing: Airflow loads the plugins folder
first and the entry points after, and a second plugin of the same name is skipped with a warning
counted as a plugin import error. Without an installed distribution (docker-compose mounts the
checkout and puts ``src`` on ``PYTHONPATH``) the entry point is missing and this file exports the
class, so the page is registered exactly once either way.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from recon_page.plugin import ENTRY_POINT

if not any(point.value == ENTRY_POINT for point in entry_points(group="airflow.plugins")):
    from recon_page.plugin import ReconPagePlugin as ReconPagePlugin
