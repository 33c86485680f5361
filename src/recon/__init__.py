"""Delivery reconciliation for Kafka -> consumer -> PostgreSQL pipelines.

The domain package: verdict rules, windows, the contract, configuration. It never imports Airflow,
so the CLI, the DAGs and the Spark jobs share it.
"""

from __future__ import annotations

__version__ = "0.1.0"
