"""Registers the "Delivery reconciliation" page with Airflow.

Found through the ``airflow.plugins`` entry point of the installed package (``pyproject.toml``),
so an Airflow that has ``kafka-recon`` installed needs nothing in its plugins folder;
``plugins/recon_page_plugin.py`` registers it for an Airflow that only mounts the checkout.

The api-server mounts the FastAPI app at ``/recon`` and the UI lists it in the navigation (an
external view shown in the UI at ``/plugin/recon``). Airflow does not authenticate plugin apps:
every route of the app checks the Airflow token itself (:mod:`recon_page.auth`).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from recon_page.app import app

NAME = "Delivery reconciliation"
#: What the ``airflow.plugins`` entry point names (``pyproject.toml``).
ENTRY_POINT = "recon_page.plugin:ReconPagePlugin"


class ReconPagePlugin(AirflowPlugin):
    name = "recon_page"
    fastapi_apps = [{"app": app, "url_prefix": "/recon", "name": NAME}]
    external_views = [
        {
            "name": NAME,
            "href": "/recon/",
            "destination": "nav",
            "url_route": "recon",
            "nav_top_level": True,
        }
    ]
