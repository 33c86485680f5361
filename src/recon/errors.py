"""One error class per failure a user can cause or meet; each message says what and where."""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (drivers add hints and context lines below it)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else repr(exc)


class ReconError(Exception):
    """Base of every error the product raises on purpose."""


class ServiceUnavailable(ReconError):
    """A service the run needs failed or went away (a broker down, the results database
    restarting, the Spark driver dead). Unlike a user mistake, trying again later can succeed:
    Airflow retries these, and a retry of the run id finishes or replaces what it left."""


class ConnectionNotFound(ReconError):
    """A connection id that resolves to nothing usable."""


class ConfigError(ReconError):
    """The pipeline declarations (YAML) are unreadable or invalid.

    ``errors`` holds every problem found, each naming the file, the pipeline and the key path.
    """

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors: list[str] = list(errors) if errors is not None else [message]


class SinkTableError(ReconError):
    """The sink table, or a column the pipeline declares in it (``sink``, ``payload``,
    ``order``), is missing or of a type its check cannot read."""


class SourceTableError(ReconError):
    """The pipeline's source table (``source``), or a column it declares there, is missing or of
    a type the run cannot read."""


class InputSchemaError(ReconError):
    """A DataFrame handed to the reconciler lacks a column it needs."""


class SparkDriverLost(ServiceUnavailable):
    """The Spark driver (the JVM a run talks to) died while the run was using it."""


class SparkConnectUnavailable(ServiceUnavailable):
    """The Spark Connect server a run attaches to (``RECON_SPARK_REMOTE``) cannot be reached, or
    refused the client (its token, ``SPARK_CONNECT_AUTHENTICATE_TOKEN``)."""


class RunFailed(ReconError):
    """A run stopped on an error nobody planned for (a bug, a corrupt file, a full disk). The run
    is marked ``error`` in ``recon.runs`` and committed nothing; its message is redacted."""
