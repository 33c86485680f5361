"""Pipeline declarations, read from YAML files and validated before anything runs.

The file is the argument to :func:`load_pipelines`, else ``$RECON_PIPELINES``, else
``pipelines.yaml`` at the repository root; every ``*.yaml`` of ``$RECON_PIPELINES_DIR`` declares
more, each file on its own (:func:`pipeline_files`; :func:`load_pipeline_dir`: all or none).
Every problem of a file is collected first and reported once, each line naming the file, the
pipeline and the key path, e.g.
``pipelines.yaml: pipeline 'payments': kafka.message_id: expected one of header, json_field, key``.

The file names connections (Airflow connection ids), never credentials: keys such as ``password``
or ``bootstrap.servers`` are rejected with a pointer to the connection. Whether the connections,
the topic and the table exist is checked where they are used, not here: loading stays offline.

The modules, in the order a file goes through them:

- :mod:`~recon.config.load`: where the files are, the YAML (duplicate keys refused), the file's
  shape (``pipelines:`` and ``x-...`` anchor keys);
- :mod:`~recon.config.schema`: what one pipeline may declare, as pydantic models;
- :mod:`~recon.config.schedule`: which ``schedule`` values Airflow accepts (croniter, as Airflow);
- :mod:`~recon.config.explain`: pydantic's errors worded as ``key.path: message``;
- :mod:`~recon.config.problems`: the problems of a file, reported together;
- :mod:`~recon.config.model`: the validated values (``PipelineConfig`` and its parts).
"""

from __future__ import annotations

from recon.config.load import (
    DEFAULT_FILE,
    DIR_ENV_VAR,
    ENV_VAR,
    PipelineFile,
    declared_in_file,
    declared_pipelines,
    default_pipelines_path,
    load_pipeline_dir,
    load_pipelines,
    parse_pipelines,
    pipeline_files,
)
from recon.config.model import (
    ENGINES,
    MESSAGE_ID_KINDS,
    KafkaSource,
    LatencySpec,
    MessageIdSpec,
    OrderSpec,
    PayloadSpec,
    PipelineConfig,
    RepairSpec,
    SinkSpec,
    SourceSpec,
    Tolerances,
)
from recon.config.problems import MAX_REPORTED_ERRORS
from recon.config.schedule import CRON_PRESETS, SCHEDULE_PRESETS, SPECIAL_SCHEDULES, cron_problem

__all__ = [
    "CRON_PRESETS",
    "DEFAULT_FILE",
    "DIR_ENV_VAR",
    "ENGINES",
    "ENV_VAR",
    "MAX_REPORTED_ERRORS",
    "MESSAGE_ID_KINDS",
    "SCHEDULE_PRESETS",
    "SPECIAL_SCHEDULES",
    "KafkaSource",
    "LatencySpec",
    "MessageIdSpec",
    "OrderSpec",
    "RepairSpec",
    "SourceSpec",
    "PayloadSpec",
    "PipelineConfig",
    "PipelineFile",
    "SinkSpec",
    "Tolerances",
    "cron_problem",
    "declared_in_file",
    "declared_pipelines",
    "default_pipelines_path",
    "load_pipeline_dir",
    "load_pipelines",
    "parse_pipelines",
    "pipeline_files",
]
