"""Registers the "Delivery reconciliation" page with Airflow.

The api-server mounts the FastAPI app at ``/recon`` and the UI lists it in the navigation (an
external view shown in the UI at ``/plugin/recon``). Airflow does not authenticate plugin apps:
every route of the app checks the Airflow token itself (``plugins/recon_page/auth.py``).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from recon_page.app import app

NAME = "Delivery reconciliation"


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
