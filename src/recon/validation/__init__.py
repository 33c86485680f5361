"""The contract as Great Expectations suites, run by a checkpoint per pipeline, with Data Docs.

The suites are versioned JSON files in ``expectations/`` (``$RECON_EXPECTATIONS_DIR``), one per
claimed semantic and named after it: ``at_most_once``, ``at_least_once``, ``exactly_once``. They
hold ``$PARAMETER`` placeholders that :func:`suite_parameters` fills from the pipeline at run time
(the stored suite keeps the placeholders, the validation result shows the values used):

===========================  ============================================================
parameter                    value
===========================  ============================================================
``lost_mostly``              ``1 - max_loss_ratio`` (at_most_once), computed exactly
``duplicated_mostly``        ``1 - max_duplicate_ratio`` (at_least_once), computed exactly
``topic_duplicate_allowed``  ``[false]`` when ``idempotent_producer``, else ``[false, true]``
``max_unverifiable``         ``tolerances.max_unverifiable``
``max_invalid``              ``tolerances.max_invalid``
===========================  ============================================================

The GX project is a file-mode project in ``$RECON_STATE/gx`` (or ``gx_dir``)::

    gx/expectations/<semantic>.json                 the suites, copied from expectations/ per run
    gx/validation_definitions/<pipeline>.json       results of <pipeline> x its semantic's suite
    gx/checkpoints/<pipeline>.json                  that definition + UpdateDataDocsAction
    gx/uncommitted/validations/<semantic>/<run id>/<time>/<batch>.json   validation results
    gx/uncommitted/data_docs/local_site/index.html  Data Docs; one page per validated run:
        validations/<semantic>/<run id>/<time>/<data source>-<pipeline>.html

GX validates the run's results with the pipeline's engine: ``engine: spark`` runs where the results
DataFrame lives (a dataframe asset named after the pipeline in the Spark data source
``recon_results``; nothing is copied to pandas, :func:`validate_run`); ``engine: local`` reads the
run's results Parquet, only the columns the suite uses, into a lean pandas DataFrame (categorical
verdicts, Arrow-backed strings) and runs the same checkpoint over the asset of the pandas data
source ``recon_results_pandas`` (:func:`validate_results_file`): no JVM.

Validating a run id again replaces that run's earlier validation result and page (whichever engine
made it, as a pipeline may switch engines), so a retried task leaves one verdict per run.
Validations of one project are serialised by a file lock: GX rewrites its config and index files
on every run.

Modules: ``suites`` (the suite files and their parameters), ``checkpoint`` (the GX project and
the one checkpoint builder, parameterised by the data source kind), ``runners`` (the Spark and the
pandas entry points), ``record`` (``recon.runs`` and Data Docs links). This package does not import
Airflow, and importing it imports neither Spark nor Great Expectations.
"""

from recon.validation.checkpoint import BATCH_DEFINITION as BATCH_DEFINITION
from recon.validation.checkpoint import DATASOURCE as DATASOURCE
from recon.validation.checkpoint import DATASOURCES as DATASOURCES
from recon.validation.checkpoint import RESULT_FORMAT as RESULT_FORMAT
from recon.validation.checkpoint import SITE_NAME as SITE_NAME
from recon.validation.checkpoint import ValidationOutcome as ValidationOutcome
from recon.validation.checkpoint import data_docs_dir as data_docs_dir
from recon.validation.checkpoint import default_gx_dir as default_gx_dir
from recon.validation.checkpoint import run_checkpoint as run_checkpoint
from recon.validation.record import data_docs_url as data_docs_url
from recon.validation.record import record_validation as record_validation
from recon.validation.runners import read_results as read_results
from recon.validation.runners import validate_results_file as validate_results_file
from recon.validation.runners import validate_run as validate_run
from recon.validation.suites import EXPECTATIONS_ENV as EXPECTATIONS_ENV
from recon.validation.suites import SUITE_VERSION as SUITE_VERSION
from recon.validation.suites import ValidationError as ValidationError
from recon.validation.suites import _mostly as _mostly
from recon.validation.suites import expectations_dir as expectations_dir
from recon.validation.suites import load_suite as load_suite
from recon.validation.suites import suite_columns as suite_columns
from recon.validation.suites import suite_parameters as suite_parameters
