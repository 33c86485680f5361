"""Delivery reconciliation for Kafka -> consumer -> PostgreSQL pipelines.

The domain package: verdict rules, windows, the contract, configuration. It never imports Airflow,
so the CLI, the DAGs and the Spark jobs share it.

Its folders, in the order a run uses them: ``config`` (the pipeline declarations), ``snapshot``
(offsets and windows), ``read`` (Kafka records and sink rows), ``rules`` (the verdicts, in SQL),
``engines`` (what runs the rules), ``ledger`` (earlier runs' conclusions), ``store`` (the results
in PostgreSQL), ``contract`` and ``validation`` (the run judged by its contract), ``alert``.
"""

from __future__ import annotations

__version__ = "0.1.0"
