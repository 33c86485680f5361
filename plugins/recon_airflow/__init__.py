"""Airflow side of delivery reconciliation: hooks that own connections, thin operators around
``recon.engine``, and the DAG factory. Heavy imports (Spark, Kafka, GX) happen inside execute()."""
