"""Every ``RECON_*`` environment variable the product reads, read here and nowhere else.

``recon``, the Airflow plugins (``plugins/``), the DAG files (``dags/``) and the Spark apps
(``spark_apps/``) ask this module; none of them reads a ``RECON_*`` variable itself
(``tests/unit/test_settings.py`` checks it). Each setting is one function that reads the
environment when called, never at import: a test, a DAG run or a child process may change it.
``scripts/env.sh`` exports most of them for the local stack (its values are noted below where
they differ from the product's own default).

============================== ============================== ======================================
variable                       default                        what it does
============================== ============================== ======================================
RECON_ROOT                     the checkout (``src/..``)      the repository: the default pipeline
                                                              file, ``expectations/``, ``.state``
RECON_STATE                    ``$RECON_ROOT/.state``         everything generated at run time
                               (installed, without            (data, jars, the GX project)
                               ``RECON_ROOT``: ``kafka-recon``
                               in ``$XDG_STATE_HOME``)
RECON_DATA_DIR                 ``$RECON_STATE/data``          windows, verdict Parquet and the
                                                              ledger of every pipeline
RECON_JARS_SPARK               ``$RECON_STATE/jars/spark``    Spark's extra jars (Kafka source,
                                                              PostgreSQL JDBC)
RECON_PIPELINES                ``$RECON_ROOT/pipelines.yaml`` the pipeline YAML (env.sh:
                                                              ``demo/pipelines.yaml``)
RECON_PIPELINES_DIR            unset: none                    a folder whose ``*.yaml`` files
                                                              declare more pipelines (env.sh:
                                                              ``$RECON_STATE/pipelines.d``)
RECON_EXPECTATIONS_DIR         ``$RECON_ROOT/expectations``   the GX suite files, one per claimed
                               (installed: the package's      semantic
                               copy, see :func:`shipped`)
RECON_RESULTS_CONN_ID          ``postgres_recon``             connection id of the results database
                                                              (schema ``recon``)
RECON_ALERT_WEBHOOK_CONN_ID    ``recon_alert_webhook``        connection id of the alert webhook
                                                              (also the task failure notices)
RECON_ALERT_SMTP_CONN_ID       ``smtp_default``               connection id of the alert mail server
RECON_AIRFLOW_BASE_URL         unset: no run link             the Airflow UI, to link an alert to
                                                              its DAG run (env.sh: the local
                                                              Airflow)
RECON_DATA_DOCS_BASE_URL       unset: ``file://`` links       where the Data Docs site is served
                                                              (env.sh: the Airflow page's
                                                              ``/recon/docs``)
RECON_DATA_DOCS_DIR            ``$RECON_STATE/gx/uncommitted/ the Data Docs folder the Airflow page
                               data_docs/local_site``         serves
RECON_SPARK_MASTER             ``local[*]``                   the master of ``recon run``'s
                                                              SparkSession
RECON_SPARK_UI                 ``false``                      ``spark.ui.enabled`` of every Spark
                                                              driver
RECON_SPARK_SHUFFLE_PARTITIONS ``8``                          ``spark.sql.shuffle.partitions``
RECON_SPARK_DRIVER_MEMORY      ``1g``                         ``spark.driver.memory`` of a run's
                                                              own Spark driver
RECON_SPARK_CONNECT_MEMORY     ``1g``                         ``spark.driver.memory`` of the
                                                              Spark Connect server (runs share
                                                              it)
RECON_SPARK_JAVA_OPTIONS       unset: none                    JVM options added to every Spark
                                                              driver's and executor's (``make
                                                              test``: ``-XX:TieredStopAtLevel=1``)
RECON_SPARK_CLASS_ARCHIVE      ``true``                       ``false``: no Spark driver or executor
                                                              maps the class-data archive of
                                                              Spark's classes that ``make setup``
                                                              makes (``recon.spark.class_archive``)
RECON_SPARK_REMOTE             unset: a Spark of its own      a Spark Connect server
                                                              (``sc://localhost:PORT``) every
                                                              ``engine: spark`` run attaches to
                                                              instead of starting a JVM; its
                                                              token in pyspark's
                                                              ``SPARK_CONNECT_AUTHENTICATE_TOKEN``
                                                              (``scripts/spark-connect.sh``;
                                                              env.sh: the project's server;
                                                              empty: a Spark of its own)
RECON_SPARK_DRIVER_READ        ``250000``; unset, a local     a Spark engine's run whose window
                               master's driver reads every    holds at most this many offsets,
                               window                         its data directory on the driver's
                                                              machine, is read by the driver (the
                                                              local engine's reader) and validated
                                                              on pandas, not by Spark tasks; ``0``:
                                                              no run with records
RECON_SPARK_PYTHON_IDLE        ``60``                         seconds a Python daemon of the Spark
                                                              Connect server stays without a
                                                              worker before it exits
                                                              (``recon.spark.daemon``)
RECON_SPARK_POOL               ``default_pool``               the Airflow pool of the Spark steps
                                                              (env.sh: ``recon_spark``)
RECON_LOCAL_READERS            one per core                   Kafka reader processes of the local
                                                              engine
RECON_LOCAL_MEMORY_LIMIT       ``1GB``                        DuckDB's ``memory_limit`` in the local
                                                              engine's judging (past it, DuckDB
                                                              spills to ``$RECON_DATA_DIR/duckdb-
                                                              spill``)
RECON_APPLIED_BY               unset: ``user@host``           who ``recon repair apply`` records as
                                                              having applied a plan
============================== ============================== ======================================

A variable set to the empty string counts as unset, except where the function says otherwise
(the Spark settings, the pool and the alert connection ids pass an empty value through, as they
always did).
"""

from __future__ import annotations

import os

# The variables' names: for code that passes one to a child process (writing, not reading).
RECON_ROOT = "RECON_ROOT"
RECON_STATE = "RECON_STATE"
RECON_DATA_DIR = "RECON_DATA_DIR"
RECON_JARS_SPARK = "RECON_JARS_SPARK"
RECON_PIPELINES = "RECON_PIPELINES"
RECON_PIPELINES_DIR = "RECON_PIPELINES_DIR"
RECON_EXPECTATIONS_DIR = "RECON_EXPECTATIONS_DIR"
RECON_RESULTS_CONN_ID = "RECON_RESULTS_CONN_ID"
RECON_ALERT_WEBHOOK_CONN_ID = "RECON_ALERT_WEBHOOK_CONN_ID"
RECON_ALERT_SMTP_CONN_ID = "RECON_ALERT_SMTP_CONN_ID"
RECON_AIRFLOW_BASE_URL = "RECON_AIRFLOW_BASE_URL"
RECON_DATA_DOCS_BASE_URL = "RECON_DATA_DOCS_BASE_URL"
RECON_DATA_DOCS_DIR = "RECON_DATA_DOCS_DIR"
RECON_SPARK_MASTER = "RECON_SPARK_MASTER"
RECON_SPARK_UI = "RECON_SPARK_UI"
RECON_SPARK_SHUFFLE_PARTITIONS = "RECON_SPARK_SHUFFLE_PARTITIONS"
RECON_SPARK_DRIVER_MEMORY = "RECON_SPARK_DRIVER_MEMORY"
RECON_SPARK_CONNECT_MEMORY = "RECON_SPARK_CONNECT_MEMORY"
RECON_SPARK_JAVA_OPTIONS = "RECON_SPARK_JAVA_OPTIONS"
RECON_SPARK_CLASS_ARCHIVE = "RECON_SPARK_CLASS_ARCHIVE"
RECON_SPARK_POOL = "RECON_SPARK_POOL"
RECON_SPARK_REMOTE = "RECON_SPARK_REMOTE"
RECON_SPARK_DRIVER_READ = "RECON_SPARK_DRIVER_READ"
RECON_SPARK_PYTHON_IDLE = "RECON_SPARK_PYTHON_IDLE"
RECON_LOCAL_READERS = "RECON_LOCAL_READERS"
RECON_LOCAL_MEMORY_LIMIT = "RECON_LOCAL_MEMORY_LIMIT"
RECON_APPLIED_BY = "RECON_APPLIED_BY"

#: The pipeline file's name at the repository root, when ``RECON_PIPELINES`` is unset.
DEFAULT_PIPELINES_FILE = "pipelines.yaml"
DEFAULT_RESULTS_CONN_ID = "postgres_recon"
DEFAULT_ALERT_WEBHOOK_CONN_ID = "recon_alert_webhook"
DEFAULT_ALERT_SMTP_CONN_ID = "smtp_default"
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_SPARK_POOL = "default_pool"

# src/recon/settings.py -> the checkout, three levels up (plugins/ and dags/ are its siblings).
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where a wheel carries the checkout's top-level folders that are read at run time (setup.py copies
# them in when it builds; a checkout has no such folder and reads its own).
_SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shipped")


def _set(name: str) -> str | None:
    """The variable's value; ``None`` when unset or empty."""
    return os.environ.get(name) or None


def root() -> str:
    """``$RECON_ROOT``, else the checkout this module was loaded from."""
    return _set(RECON_ROOT) or _CHECKOUT


def state_dir() -> str:
    """``$RECON_STATE``; else ``.state`` under :func:`root` in a checkout or under a
    ``$RECON_ROOT``; else, for an installed package, ``kafka-recon`` under ``$XDG_STATE_HOME``
    (default ``~/.local/state``). The root an installed package derives is the folder above its
    site-packages, where run-time files must never go (a shared, often read-only tree, replaced
    by the next install)."""
    state = _set(RECON_STATE)
    if state is not None:
        return state
    if _set(RECON_ROOT) is not None or not installed():
        return os.path.join(root(), ".state")
    home_state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.environ.get("XDG_STATE_HOME") or home_state, "kafka-recon")


def installed() -> bool:
    """Whether this module was loaded from an installed wheel, not a checkout: a wheel carries
    the checkout's run-time folders beside it (see :func:`shipped`)."""
    return os.path.isdir(_SHIPPED)


def data_dir() -> str:
    """``$RECON_DATA_DIR``, else ``data`` under :func:`state_dir`."""
    return _set(RECON_DATA_DIR) or os.path.join(state_dir(), "data")


def spark_jars_dir() -> str:
    """``$RECON_JARS_SPARK``, else ``jars/spark`` under :func:`state_dir` (``make setup``; when it
    holds no jar, Spark resolves them: ``recon.spark.jars``)."""
    return _set(RECON_JARS_SPARK) or os.path.join(state_dir(), "jars", "spark")


def pipelines_file() -> str:
    """``$RECON_PIPELINES``, else ``pipelines.yaml`` at :func:`root`."""
    return _set(RECON_PIPELINES) or os.path.join(root(), DEFAULT_PIPELINES_FILE)


def pipelines_dir() -> str | None:
    """``$RECON_PIPELINES_DIR``; ``None`` when unset (no more pipeline files)."""
    return _set(RECON_PIPELINES_DIR)


def shipped(folder: str) -> str:
    """A top-level folder of the checkout that is read at run time (``expectations``,
    ``spark_apps``): the one at :func:`root` when it exists (a checkout, or a ``$RECON_ROOT`` that
    holds its own), else the copy in the installed package, else the one at :func:`root` (a
    missing file is then reported under the path the user knows)."""
    at_root = os.path.join(root(), folder)
    packaged = os.path.join(_SHIPPED, folder)
    if os.path.isdir(at_root) or not os.path.isdir(packaged):
        return at_root
    return packaged


def expectations_dir() -> str:
    """``$RECON_EXPECTATIONS_DIR``, else ``expectations`` at :func:`root` or in the package
    (:func:`shipped`)."""
    return _set(RECON_EXPECTATIONS_DIR) or shipped("expectations")


def spark_app() -> str:
    """The ``spark-submit`` application of the Airflow Spark steps: ``spark_apps/reconcile.py``
    of the checkout or of the package (:func:`shipped`)."""
    return os.path.join(shipped("spark_apps"), "reconcile.py")


def results_conn_id() -> str:
    """``$RECON_RESULTS_CONN_ID``, else ``postgres_recon``: the results database's connection."""
    return _set(RECON_RESULTS_CONN_ID) or DEFAULT_RESULTS_CONN_ID


def alert_webhook_conn_id() -> str:
    """``$RECON_ALERT_WEBHOOK_CONN_ID`` (even when empty), else ``recon_alert_webhook``."""
    return os.environ.get(RECON_ALERT_WEBHOOK_CONN_ID, DEFAULT_ALERT_WEBHOOK_CONN_ID)


def alert_smtp_conn_id() -> str:
    """``$RECON_ALERT_SMTP_CONN_ID`` (even when empty), else ``smtp_default``."""
    return os.environ.get(RECON_ALERT_SMTP_CONN_ID, DEFAULT_ALERT_SMTP_CONN_ID)


def airflow_base_url() -> str | None:
    """``$RECON_AIRFLOW_BASE_URL`` (the Airflow UI); ``None`` when unset: alerts link no run."""
    return _set(RECON_AIRFLOW_BASE_URL)


def data_docs_base_url() -> str | None:
    """``$RECON_DATA_DOCS_BASE_URL`` (where the Data Docs site is served); ``None`` when unset:
    links are ``file://`` URLs."""
    return _set(RECON_DATA_DOCS_BASE_URL)


def data_docs_dir() -> str:
    """``$RECON_DATA_DOCS_DIR``, else the GX project's site under :func:`state_dir`
    (``gx/uncommitted/data_docs/local_site``): the folder the Airflow page serves."""
    return _set(RECON_DATA_DOCS_DIR) or os.path.join(
        state_dir(), "gx", "uncommitted", "data_docs", "local_site"
    )


def spark_master() -> str:
    """``$RECON_SPARK_MASTER`` (even when empty), else ``local[*]``."""
    return os.environ.get(RECON_SPARK_MASTER, DEFAULT_SPARK_MASTER)


def spark_ui() -> str:
    """``$RECON_SPARK_UI`` (even when empty), else ``false``: Spark's ``spark.ui.enabled``."""
    return os.environ.get(RECON_SPARK_UI, "false")


def spark_shuffle_partitions() -> str:
    """``$RECON_SPARK_SHUFFLE_PARTITIONS`` (even when empty), else ``8``."""
    return os.environ.get(RECON_SPARK_SHUFFLE_PARTITIONS, "8")


def spark_driver_memory() -> str:
    """``$RECON_SPARK_DRIVER_MEMORY`` (even when empty), else ``1g``: the heap of a run's own
    Spark driver (in local mode also its executor). A 10M window ran within 3% of its time in
    2 GiB (91-94 s; 112-115 s with the optional checks) with its JVM at 1.3 GB instead of 2.0 GB:
    the parallel collector grows the heap toward the bound when a run allocates more
    (bench/engine_changes.md)."""
    return os.environ.get(RECON_SPARK_DRIVER_MEMORY, "1g")


def spark_connect_memory() -> str:
    """``$RECON_SPARK_CONNECT_MEMORY`` (even when empty), else ``1g``: the heap of the Spark
    Connect server (``make up``), which the runs attached to it share (Airflow may run two
    pipelines' Spark steps at once; their tasks share the server's cores, so its heap need not
    grow with them). A 10M window ran as fast in 1 GiB as in 2 GiB (45-49 s) with the server at
    1.5 GB instead of 2.0-2.1 GB, and two 10M runs at once completed in it
    (bench/engine_changes.md)."""
    return os.environ.get(RECON_SPARK_CONNECT_MEMORY, "1g")


def spark_java_options() -> str:
    """``$RECON_SPARK_JAVA_OPTIONS``, else none: JVM options every Spark driver and executor of
    the product gets beside its own (``recon.spark.JVM_OPTIONS``)."""
    return (_set(RECON_SPARK_JAVA_OPTIONS) or "").strip()


def spark_class_archive() -> bool:
    """``$RECON_SPARK_CLASS_ARCHIVE`` is not ``false``: Spark's JVMs map the class-data archive
    when one was made for the Spark and Java installed (``recon.spark.class_archive``)."""
    return (_set(RECON_SPARK_CLASS_ARCHIVE) or "true").strip().lower() != "false"


def spark_remote() -> str | None:
    """``$RECON_SPARK_REMOTE``, else None: the Spark Connect server a run attaches to (None: the
    run starts a Spark of its own)."""
    return _set(RECON_SPARK_REMOTE)


def spark_driver_read() -> int | None:
    """``$RECON_SPARK_DRIVER_READ``, else None (the local engine's bound for a read on a thread,
    ``recon.read.kafka_local.pool.IN_PROCESS_OFFSETS``, and every window of a local master):
    the largest window, in offsets, whose run the Spark engine's driver reads itself
    (``recon.engines.spark_snapshot.reads_on_driver``, ``window_on_driver``).

    :raises recon.errors.ConfigError: the variable is not a whole number, 0 or more.
    """
    configured = _set(RECON_SPARK_DRIVER_READ)
    if not configured:
        return None
    if not configured.strip().isdigit():
        from recon.errors import ConfigError

        raise ConfigError(
            f"{RECON_SPARK_DRIVER_READ} must be a number of offsets, 0 or more, not {configured!r}"
        )
    return int(configured)


def spark_python_idle() -> float:
    """``$RECON_SPARK_PYTHON_IDLE``, else 60: seconds a Python daemon of the Spark Connect server
    (``recon.spark.daemon``) stays without a worker before it exits.

    :raises recon.errors.ConfigError: the variable is not a number of seconds, 0 or more.
    """
    configured = _set(RECON_SPARK_PYTHON_IDLE)
    if not configured:
        return 60.0
    try:
        seconds = float(configured)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        from recon.errors import ConfigError

        raise ConfigError(
            f"{RECON_SPARK_PYTHON_IDLE} must be a number of seconds, 0 or more, not {configured!r}"
        )
    return seconds


def spark_pool() -> str:
    """``$RECON_SPARK_POOL`` (even when empty), else Airflow's ``default_pool``: the pool that
    caps concurrent Spark drivers (``scripts/airflow.sh`` creates ``recon_spark``)."""
    return os.environ.get(RECON_SPARK_POOL, DEFAULT_SPARK_POOL)


def local_memory_limit() -> str:
    """``$RECON_LOCAL_MEMORY_LIMIT``, else ``1GB``: DuckDB's ``memory_limit`` (its own syntax:
    ``512MB``, ``4GB``, ...) while the local engine judges a run; past it DuckDB spills to disk,
    so a window larger than memory still completes."""
    return _set(RECON_LOCAL_MEMORY_LIMIT) or "1GB"


def local_readers() -> int:
    """``$RECON_LOCAL_READERS``, else one per core: the local engine's Kafka reader processes.

    :raises ValueError: the variable is not an integer.
    """
    configured = _set(RECON_LOCAL_READERS)
    return int(configured) if configured else max(1, os.cpu_count() or 1)


def applied_by() -> str:
    """``$RECON_APPLIED_BY``, else ``user@host`` (the OS user at this machine): who a repair
    plan's apply is recorded as (``recon.repairs.applied_by``)."""
    import getpass
    import socket

    return _set(RECON_APPLIED_BY) or f"{getpass.getuser()}@{socket.gethostname()}"
