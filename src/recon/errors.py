"""One error class per failure a user can cause or meet; each message says what and where."""

from __future__ import annotations


class ReconError(Exception):
    """Base of every error the product raises on purpose."""


class ConnectionNotFound(ReconError):
    """A connection id that resolves to nothing usable."""


class ConfigError(ReconError):
    """The pipeline declarations (YAML) are unreadable or invalid.

    ``errors`` holds every problem found, each naming the file, the pipeline and the key path.
    """

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors: list[str] = list(errors) if errors is not None else [message]


class InputSchemaError(ReconError):
    """A DataFrame handed to the reconciler lacks a column it needs."""


class SparkDriverLost(ReconError):
    """The Spark driver (the JVM a run talks to) died while the run was using it."""
