"""The one place that says how a SparkSession is built: master, extra jars, settings."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from recon import settings
from recon.errors import SparkConnectUnavailable, first_line

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The storage level of every DataFrame the product caches, by its ``pyspark.StorageLevel`` name
#: (resolved at use: importing this module starts no pyspark). Deserialised: pyspark's
#: MEMORY_AND_DISK is the serialised level, whose blocks that spilled are read back as one
#: buffer of the whole block: at 10M sink rows with payloads, 509 MiB per block and an
#: OutOfMemoryError in a 2 GiB driver (P6, 2026-11-26).
CACHE_LEVEL = "MEMORY_AND_DISK_DESER"

#: The storage level of a kept rule step (a local checkpoint), by its ``pyspark.StorageLevel``
#: name: local disk only, streamed back from the page cache at each read. Spark's default for a
#: local checkpoint (memory and disk, deserialised) held a 10M window's joined rows as 1.4 GB of
#: objects in the 2 GiB heap's storage share: the join's sorts and the aggregations after it
#: spilled and the collector ran (a 10M run's rule steps 92-106 s -> 79-86 s on the Connect
#: server; bench/engine_changes.md). A disk-only block is never read back as one buffer (the
#: serialised level's OutOfMemoryError, :data:`CACHE_LEVEL`).
CHECKPOINT_LEVEL = "DISK_ONLY"

#: The JVM options of every Spark driver and executor of the product (and, after them,
#: ``settings.spark_java_options()``).
JVM_OPTIONS = "-XX:+UseParallelGC"

#: The address every listener of a product driver binds to.
LOOPBACK = "127.0.0.1"

#: The environment every Spark driver of the product starts with. Spark binds its UI to
#: ``$SPARK_LOCAL_IP``, else to every address: no setting names the UI's address
#: (``WebUI.initServer`` in Spark 4.1.1), and ``spark.driver.bindAddress`` does not reach it.
DRIVER_ENV = {"SPARK_LOCAL_IP": LOOPBACK}


def persist(frame: DataFrame) -> DataFrame:
    """``frame`` persisted at :data:`CACHE_LEVEL` (the caller unpersists it)."""
    from pyspark import StorageLevel

    return frame.persist(getattr(StorageLevel, CACHE_LEVEL))


def checkpoint(frame: DataFrame) -> DataFrame:
    """``frame`` computed now and kept at :data:`CHECKPOINT_LEVEL`, its plan cut (a local
    checkpoint). ``unpersist()`` does not release its blocks: Spark's cleaner does once nothing
    references it (the session's views gone), at the latest at :func:`spark_settings`' forced
    collection."""
    from pyspark import StorageLevel

    return frame.localCheckpoint(eager=True, storageLevel=getattr(StorageLevel, CHECKPOINT_LEVEL))


def spark_settings() -> dict[str, str]:
    """Every setting a Spark driver of the product runs with, whoever starts it (``recon run``'s
    session, spark-submit from Airflow, ``spark_apps/``): bound to loopback, no UI unless
    ``RECON_SPARK_UI=true``, credentials redacted from plans, logs and the event log; Spark's
    classes mapped from the class archive when ``make setup`` made one."""
    from recon.spark.classes import java_options as class_archive

    # The user's options last: they can override (``-Xshare:off``).
    java_options = " ".join(
        part for part in (JVM_OPTIONS, class_archive(), settings.spark_java_options()) if part
    )
    return {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": settings.spark_ui(),
        "spark.sql.shuffle.partitions": settings.spark_shuffle_partitions(),
        "spark.sql.adaptive.enabled": "true",
        # AQE merges shuffle partitions up to this much shuffled (compressed) data: at its 64 MB
        # a 10M window's join ran in 4 partitions whose sorts spilled in a 2 GiB heap (117 MB);
        # at 16 MB in 8, without spilling (the join's stage 15.4 s -> 11.6 s). Small windows
        # are merged as before: 1M shuffles about 22 MB.
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Kafka SASL credentials travel as a JAAS option: keep them out of plans, logs and UI.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas",
        "spark.sql.redaction.options.regex": "(?i)url|jaas|password|secret",
        "spark.driver.memory": settings.spark_driver_memory(),
        # Kept steps' blocks (CHECKPOINT_LEVEL) are written and read with this serializer
        # (Spark SQL's shuffles have their own): Kryo reads them back faster than Java's (a
        # 10M run's rule steps 79-80 s -> 67-68 s). Its buffer may grow to the largest value
        # one task hands back whole (a partition's collected rows), not Kryo's default 64 MB.
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryoserializer.buffer.max": "1g",
        # A local checkpoint's blocks (a kept rule step's rows, on disk: CHECKPOINT_LEVEL) go
        # when the collector finds them unreferenced, at the latest at this interval's forced
        # collection (Spark's default: 30 minutes): a Spark Connect server that runs 10M
        # windows would keep 1.4 GB of files per run until then.
        "spark.cleaner.periodicGC.interval": "2min",
        # The throughput collector: a run is a batch job, and G1's concurrent work competes
        # for the two cores (10M window: 137 s -> 125 s, peak memory 3.4 -> 3.3 GB; tried
        # and left: C1 only, which saved 1.6 s at 1M and cost 52 s at 10M).
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
    }


def spark_session(app_name: str = "recon", master: str | None = None) -> SparkSession:
    """Build (or reuse) a SparkSession with the project's jars on its classpath
    (``recon.spark.jars``: the fetched files, else Spark resolves them from Maven Central); with
    ``RECON_SPARK_REMOTE`` set, a session of its own on that Spark Connect server instead
    (:func:`remote_session`; ``master`` is then the server's).

    :param app_name: shown in the Spark UI and logs.
    :param master: ``local[*]`` (the default, from ``RECON_SPARK_MASTER``) or ``spark://host:port``.
    """
    from pyspark.sql import SparkSession

    from recon.spark.jars import spark_jar_settings

    remote = settings.spark_remote()
    if remote:
        return remote_session(app_name, remote)
    # The Python workers (the messageId extraction runs in them) use this process's interpreter,
    # which has the package and its dependencies, not whatever "python3" is on the PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The driver JVM pyspark starts inherits this environment (its UI's address).
    os.environ.update(DRIVER_ENV)
    builder = SparkSession.builder.appName(app_name).master(master or settings.spark_master())
    for key, value in {**spark_jar_settings(), **spark_settings()}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _quiet_accumulator_server(session)
    return session


def _quiet_accumulator_server(session: SparkSession) -> None:
    """pyspark's accumulator server (a thread of this process) prints a traceback to stderr when
    the driver JVM dies mid-update; the run reports the lost driver in one line instead."""
    import logging

    server = getattr(session.sparkContext, "_accumulatorServer", None)
    if server is None:
        return

    def handle_error(_request: object, client_address: object) -> None:
        logging.getLogger(__name__).debug(
            "accumulator update from %s failed (the driver went away)", client_address,
            exc_info=True,
        )  # fmt: skip

    server.handle_error = handle_error


#: What a run sets on its own session of a shared Spark Connect server: the SQL settings of
#: :func:`spark_settings` (a session may change them); the rest (JVM, jars, UI, driver memory)
#: is the server's, fixed when it started (:func:`connect_server_command`).
SESSION_SETTINGS = (
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.session.timeZone",
    "spark.sql.redaction.options.regex",
)

#: The class of Spark's Connect server, in the ``spark-connect`` jar that pyspark ships.
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def is_remote(session: SparkSession) -> bool:
    """Whether ``session`` is a Spark Connect client's (it has no SparkContext, no JVM here)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def driver_gone(pipeline: str, remote: str | None, during: str, exc: BaseException) -> str:
    """The head of the one line that says a run's Spark driver went away: the Spark Connect
    server at ``remote``, or (``remote`` None) the run's own driver JVM.

    :param during: what was running (``run 'r1'``, ``step 'reconcile' of run 'r1'``).
    """
    driver = f"Spark Connect server at {remote} went away" if remote else "Spark driver died"
    return f"pipeline '{pipeline}': the {driver} during {during} ({type(exc).__name__})"


def server_unreachable(exc: BaseException) -> bool:
    """Whether a failed call of a Spark Connect session (or anything it was raised from) found
    its server unreachable: gRPC's UNAVAILABLE, once the client's retries gave up."""
    import grpc

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        code = getattr(cause, "getGrpcStatusCode", None) or getattr(cause, "code", None)
        if callable(code) and code() == grpc.StatusCode.UNAVAILABLE:
            return True
        if type(cause).__name__ == "RetriesExceeded":
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def remote_session(app_name: str, remote: str, timeout: float = 5.0) -> SparkSession:
    """A session of its own on the Spark Connect server at ``remote`` (its temporary views,
    caches and settings are not another run's), with :data:`SESSION_SETTINGS`.

    The token is pyspark's ``SPARK_CONNECT_AUTHENTICATE_TOKEN``, never part of ``remote``.

    :param timeout: seconds to wait for the server's port; pyspark itself would retry an
        unreachable server for about ten minutes before it gives up.
    :raises SparkConnectUnavailable: nothing answers at ``remote``, or the server refused the
        session (a wrong or missing token).
    """
    from pyspark.sql import SparkSession

    _reachable(remote, timeout)
    try:
        session: SparkSession = SparkSession.builder.remote(remote).appName(app_name).create()
        _configure(session)  # the first calls to the server: the token is checked here
    except Exception as exc:  # noqa: BLE001 - pyspark's gRPC errors share no narrower base
        raise SparkConnectUnavailable(
            f"the Spark Connect server at {remote} refused the session: {_grpc_details(exc)} "
            "(its token is SPARK_CONNECT_AUTHENTICATE_TOKEN, in $RECON_STATE/secrets.env for "
            "the project's own server)"
        ) from None
    return session


def sibling_session(session: SparkSession) -> SparkSession:
    """A session with temporary views of its own beside ``session``: on the same SparkContext,
    or on the same Spark Connect server with :data:`SESSION_SETTINGS` (a session of the server's
    that the caller stops; unlike :func:`remote_session`'s, it does not become the process's
    default session, which stopping it would clear)."""
    if not is_remote(session):
        return session.newSession()
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # The client's channel builder: the same server and token; the new client picks a session
    # id of its own.
    client: Any = getattr(session, "client")  # noqa: B009 - a Connect session's, not a classic one's
    sibling: Any = ConnectSession(connection=client._builder)
    _configure(sibling)
    made: SparkSession = sibling
    return made


def _configure(session: Any) -> None:
    """A Spark Connect session of the product's: :data:`SESSION_SETTINGS`, and calls that retry
    a server that stopped answering for about 14 s in all (50 ms, then 4x longer each time, at
    most 5 s): a network blip. pyspark's own policy waits ten minutes, but a server that died
    took the run's session (its views and caches) with it, so a run that waits longer only
    reports its loss later."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    policy = DefaultPolicy(max_retries=6, initial_backoff=50, backoff_multiplier=4.0,
                           max_backoff=5000)  # fmt: skip
    session.client.set_retry_policies([policy])
    ours = spark_settings()
    for key in SESSION_SETTINGS:
        session.conf.set(key, ours[key])


def _reachable(remote: str, timeout: float) -> None:
    """Raise :class:`SparkConnectUnavailable` unless something listens at ``remote``'s port."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(remote)
    host, port = url.hostname or "localhost", url.port or 15002
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise SparkConnectUnavailable(
            f"no Spark Connect server answers at {remote} ({exc.strerror or exc}): start it "
            "(scripts/spark-connect.sh start) or set RECON_SPARK_REMOTE empty to run Spark in "
            "the run's own process"
        ) from None


def _grpc_details(exc: BaseException) -> str:
    """The one line of a gRPC error that says why (pyspark's message is the RPC's repr)."""
    details = getattr(exc, "details", None)
    if callable(details):
        return str(details())
    for line in str(exc).splitlines():
        if line.strip().startswith("details ="):
            return line.split("=", 1)[1].strip().strip('"')
    return first_line(exc)


def connect_server_command(port: int, master: str | None = None) -> list[str]:
    """spark-submit's command line for a Spark Connect server of the product on loopback
    ``port``: the settings every driver of the product has (:func:`spark_settings`, the jars),
    with a heap of its own size (``RECON_SPARK_CONNECT_MEMORY``: the runs attached share it).
    Its token is read from ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` in its environment, never put on
    a command line that ``ps`` shows."""
    from recon.spark.jars import spark_jar_settings

    settings.spark_python_idle()  # its daemons read it: a bad value stops the start, not a task
    confs = {
        **spark_jar_settings(),
        **spark_settings(),
        "spark.driver.memory": settings.spark_connect_memory(),
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(int(port)),
        # A daemon per session, which Spark 4.1 keeps until the server stops (recon.spark.daemon).
        "spark.python.daemon.module": "recon.spark.daemon",
    }
    # env(1): the server's UI address is an environment variable (DRIVER_ENV), not a setting.
    command = ["env", *(f"{key}={value}" for key, value in DRIVER_ENV.items()),
               "spark-submit", "--class", CONNECT_SERVER_CLASS, "--name", "recon-connect",
               "--master", master or settings.spark_master()]  # fmt: skip
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]
