"""Airflow side of delivery reconciliation: thin operators around ``recon.run.steps``, the DAG
factory, and connection ids resolved through Airflow (``hooks``: functions, no Hook classes).
Heavy imports (Spark, Kafka, GX) happen inside execute()."""
