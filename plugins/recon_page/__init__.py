"""The "Delivery reconciliation" page: a FastAPI app that Airflow's api-server mounts at /recon.

Registered by :mod:`.plugin` (the package's ``airflow.plugins`` entry point). Modules: :mod:`.app`
(routes), :mod:`.auth` (the Airflow token check every route makes), :mod:`.data` (reads
``recon.*`` with psycopg2), :mod:`.render` and :mod:`.chart` (server-side HTML and SVG),
:mod:`.discrepancies` and :mod:`.hints` (what to do about each verdict), :mod:`.latency`,
:mod:`.funnel` (source → topic → sink), :mod:`.repairs` (repair plans, read-only), :mod:`.docs`
(the Data Docs site).
Nothing here imports Spark or Great Expectations; Airflow is imported lazily, inside requests
(:mod:`.plugin` alone imports it, being what Airflow loads).
"""
