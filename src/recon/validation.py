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
        validations/<semantic>/<run id>/<time>/recon_results-<pipeline>.html

GX validates the run's results DataFrame where it lives (a Spark dataframe asset named after the
pipeline); nothing is copied to pandas. Validating a run id again replaces that run's earlier
validation result and page, so a retried task leaves one verdict per run. Validations of one
project are serialised by a file lock: GX rewrites its config and index files on every run.

This module does not import Airflow.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recon.config import PipelineConfig
from recon.errors import ReconError
from recon.verdicts import SEMANTICS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Environment variable naming the folder of the suite files (default: ``<repo>/expectations``).
EXPECTATIONS_ENV = "RECON_EXPECTATIONS_DIR"
#: The GX Spark data source that holds one dataframe asset per pipeline.
DATASOURCE = "recon_results"
BATCH_DEFINITION = "run_results"
SITE_NAME = "local_site"
#: BASIC gives unexpected counts and observed values; the sample of unexpected values would only
#: repeat the verdict name, and each sample costs a Spark job, so none is taken.
RESULT_FORMAT: dict[str, Any] = {"result_format": "BASIC", "partial_unexpected_count": 0}
#: The suite file format this module understands (``meta.recon.suite_version``).
SUITE_VERSION = 1
_LOCK_FILE = ".recon-validation.lock"


class ValidationError(ReconError):
    """A suite cannot be loaded, or Great Expectations could not evaluate it."""


@dataclass(frozen=True)
class ValidationOutcome:
    """What the checkpoint decided for one run.

    :param passed: the run keeps the claimed semantic (every expectation succeeded).
    :param failures: one dict per failed expectation: ``expectation`` (the GX type), ``rule``
        (the suite's name for it, e.g. ``lost_ratio``), ``verdict`` (``None`` for checks of the
        results' shape), ``observed`` (rows found) and ``allowed`` (a ratio of judged messages
        for ``lost_ratio`` / ``duplicated_ratio``, else a count).
    :param data_docs_path: the run's Data Docs page (an HTML file inside the site, on disk).
    :param validation_id: ``<suite>/<run id>/<run time>/<batch id>``: the stored result's key.
    :param data_docs_index: the site's ``index.html``, listing every validated run.
    :param suite_name: the suite that was run (the claimed semantic).
    :param parameters: the values given to the suite's ``$PARAMETER`` placeholders.
    """

    passed: bool
    failures: list[dict[str, Any]]
    data_docs_path: str
    validation_id: str
    data_docs_index: str = ""
    suite_name: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


def _repo_root() -> str:
    return os.environ.get("RECON_ROOT") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )


def expectations_dir() -> str:
    """``$RECON_EXPECTATIONS_DIR``, else ``expectations/`` at the repository root."""
    return os.environ.get(EXPECTATIONS_ENV) or os.path.join(_repo_root(), "expectations")


def default_gx_dir() -> str:
    """``$RECON_STATE/gx`` (``<repo>/.state/gx`` when ``RECON_STATE`` is unset)."""
    from recon.spark import _state_dir

    return os.path.join(_state_dir(), "gx")


def data_docs_dir(gx_dir: str | None = None) -> str:
    """The Data Docs site folder: serve it as static files to link runs from a UI."""
    return os.path.join(gx_dir or default_gx_dir(), "uncommitted", "data_docs", SITE_NAME)


def load_suite(semantics: str) -> dict[str, Any]:
    """The suite file for a claimed semantic, as a dict in GX's suite JSON format.

    :raises ValidationError: unknown semantic, unreadable file, or a file of another version.
    """
    if semantics not in SEMANTICS:
        raise ValidationError(
            f"unknown semantics {semantics!r}: expected one of {', '.join(SEMANTICS)}"
        )
    path = os.path.join(expectations_dir(), f"{semantics}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            document: dict[str, Any] = json.load(handle)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the suite ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    version = document.get("meta", {}).get("recon", {}).get("suite_version")
    if document.get("name") != semantics or version != SUITE_VERSION:
        raise ValidationError(
            f"{path}: expected suite '{semantics}' with meta.recon.suite_version "
            f"{SUITE_VERSION}, got '{document.get('name')}' version {version}"
        )
    return document


def _mostly(max_ratio: float) -> float:
    # The contract compares ``count <= ratio * judged`` exactly, on the decimal the user wrote.
    # GX succeeds when ``(judged - count) / judged >= mostly``, in floating point. Both sides
    # round correctly from exact values, so at the threshold they are the same float and pass.
    return float(1 - Fraction(str(max_ratio)))


def suite_parameters(cfg: PipelineConfig) -> dict[str, Any]:
    """The values of the suites' ``$PARAMETER`` placeholders for one pipeline."""
    tol = cfg.tolerances
    return {
        "lost_mostly": _mostly(tol.max_loss_ratio),
        "duplicated_mostly": _mostly(tol.max_duplicate_ratio),
        "topic_duplicate_allowed": [False] if cfg.idempotent_producer else [False, True],
        "max_unverifiable": int(tol.max_unverifiable),
        "max_invalid": int(tol.max_invalid),
    }


@contextlib.contextmanager
def _project_lock(gx_dir: str) -> Iterator[None]:
    os.makedirs(gx_dir, exist_ok=True)
    with open(os.path.join(gx_dir, _LOCK_FILE), "a+", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _context(gx_dir: str) -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="file", context_root_dir=gx_dir)
    changed = False
    bars = context.variables.progress_bars
    # A config read back from the YAML file holds a dict, a fresh one the config object.
    current = bars if isinstance(bars, dict) else vars(bars) if bars is not None else {}
    if current.get("globally") is not False or current.get("metric_calculations") is not False:
        # Progress bars would fill task logs with carriage returns.
        context.variables.progress_bars = ProgressBarsConfig(
            globally=False, metric_calculations=False
        )
        changed = True
    sites = context.variables.data_docs_sites or {}
    site = sites.get(SITE_NAME)
    if site is not None and site.get("show_how_to_buttons", True):
        site["show_how_to_buttons"] = False
        context.variables.data_docs_sites = sites
        changed = True
    if changed:
        context.variables.save()
    return context


def _install_suite(context: Any, document: dict[str, Any]) -> Any:
    import great_expectations as gx

    expected = len(document.get("expectations", []))
    suite = gx.ExpectationSuite(
        name=document["name"],
        expectations=document.get("expectations", []),
        meta=document.get("meta"),
        notes=document.get("notes"),
    )
    # GX logs and drops an expectation it cannot build; a contract with a hole is not a contract.
    if len(suite.expectations) != expected:
        raise ValidationError(
            f"suite '{document['name']}': {expected - len(suite.expectations)} of {expected} "
            "expectations could not be built (see the log above)"
        )
    return context.suites.add_or_update(suite)


def _checkpoint(context: Any, pipeline: str, suite: Any) -> Any:
    import great_expectations as gx
    from great_expectations.checkpoint.actions import UpdateDataDocsAction

    try:
        source = context.data_sources.get(DATASOURCE)
    except KeyError:
        source = context.data_sources.add_spark(name=DATASOURCE)
    try:
        asset = source.get_asset(pipeline)
    except LookupError:
        asset = source.add_dataframe_asset(name=pipeline)
    try:
        batch_definition = asset.get_batch_definition(BATCH_DEFINITION)
    except KeyError:
        batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION)
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=pipeline, data=batch_definition, suite=suite)
    )
    return context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=pipeline,
            validation_definitions=[definition],
            actions=[UpdateDataDocsAction(name="update_data_docs", site_names=[SITE_NAME])],
            result_format=RESULT_FORMAT,
        )
    )


def _batch_identifier(pipeline: str) -> str:
    return f"{DATASOURCE}-{pipeline}"


def _page_path(context: Any, key: Any) -> str | None:
    urls = context.get_docs_sites_urls(resource_identifier=key, site_name=SITE_NAME)
    url = urls[0].get("site_url") if urls else None
    if not url:
        return None
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path)


def _forget_run(context: Any, pipeline: str, run_id: str) -> None:
    """Remove earlier validations of this pipeline's run (results and pages): one per run."""
    store = context.validation_results_store
    for key in store.list_keys():
        if key.run_id.run_name != run_id or key.batch_identifier != _batch_identifier(pipeline):
            continue
        page = _page_path(context, key)
        if page and os.path.isfile(page):
            os.remove(page)
        store.remove_key(key)


def _failures(result: Any, cfg: PipelineConfig) -> list[dict[str, Any]]:
    failures: list[dict[str, Any]] = []
    errors: list[str] = []
    for item in result.results:
        if item.success:
            continue
        config = item.expectation_config
        meta = config.meta or {}
        info = item.exception_info or {}
        if info.get("raised_exception"):
            errors.append(f"{meta.get('recon_rule', config.type)}: {info.get('exception_message')}")
            continue
        outcome = item.result or {}
        observed = outcome.get("unexpected_count", outcome.get("observed_value"))
        tolerance = meta.get("tolerance")
        allowed = getattr(cfg.tolerances, tolerance) if tolerance else 0
        failures.append(
            {
                "expectation": config.type,
                "rule": meta.get("recon_rule", config.type),
                "verdict": meta.get("verdict"),
                "observed": int(observed) if observed is not None else None,
                "allowed": allowed,
            }
        )
    if errors:
        raise ValidationError(
            f"pipeline '{cfg.name}': Great Expectations could not evaluate "
            f"{len(errors)} expectation(s): " + "; ".join(errors)
        )
    return failures


def validate_run(
    spark: SparkSession,
    results: DataFrame,
    cfg: PipelineConfig,
    run_id: str,
    *,
    gx_dir: str | None = None,
) -> ValidationOutcome:
    """Run the pipeline's checkpoint over one run's results and build its Data Docs page.

    :param spark: the session the results live in (used to label the Spark jobs).
    :param results: the run's verdicts, shaped as ``schemas.RESULT``.
    :param cfg: the pipeline: its semantic picks the suite, its tolerances fill the parameters.
    :param run_id: the run's id; the validation's run name. Validating it again replaces it.
    :param gx_dir: the GX project folder (default :func:`default_gx_dir`); created when absent.
    :raises ValidationError: the suite is unusable or an expectation could not be evaluated.
    """
    from great_expectations.core.run_identifier import RunIdentifier
    from pyspark import StorageLevel

    document = load_suite(cfg.semantics)
    parameters = suite_parameters(cfg)
    root = os.path.abspath(gx_dir or default_gx_dir())
    cached_here = not results.is_cached
    if cached_here:
        # GX computes several aggregates; without a cache each would recompute the results.
        results = results.persist(StorageLevel.MEMORY_AND_DISK)
    spark_context = None
    with contextlib.suppress(Exception):  # Spark Connect sessions have no SparkContext
        spark_context = spark.sparkContext
        spark_context.setJobDescription(f"recon: validate {cfg.name} run {run_id}")
    try:
        with _project_lock(root):
            context = _context(root)
            suite = _install_suite(context, document)
            checkpoint = _checkpoint(context, cfg.name, suite)
            _forget_run(context, cfg.name, run_id)
            checkpoint_result = checkpoint.run(
                batch_parameters={"dataframe": results},
                expectation_parameters=parameters,
                run_id=RunIdentifier(run_name=run_id),
            )
            ((key, validation),) = checkpoint_result.run_results.items()
            failures = _failures(validation, cfg)
            page = _page_path(context, key) or ""
    finally:
        if spark_context is not None:
            spark_context.setJobDescription(None)  # type: ignore[arg-type]
        if cached_here:
            results.unpersist()
    passed = bool(validation.success)
    validation_id = "/".join(str(part) for part in key.to_tuple())
    log.info(
        "pipeline %s run %s: %s suite %s (%d failed expectations); Data Docs %s",
        cfg.name, run_id, "passed" if passed else "FAILED", cfg.semantics, len(failures), page,
    )  # fmt: skip
    return ValidationOutcome(
        passed=passed,
        failures=failures,
        data_docs_path=page,
        validation_id=validation_id,
        data_docs_index=os.path.join(data_docs_dir(root), "index.html"),
        suite_name=cfg.semantics,
        parameters=parameters,
    )


def data_docs_url(path: str) -> str:
    """A link to a Data Docs page: under ``$RECON_DATA_DOCS_BASE_URL`` when the site is served
    (the path relative to the site folder is appended), else a ``file://`` URL."""
    if path.startswith(("http://", "https://", "file://")):
        return path  # already a link (as stored on recon.runs)
    base = os.environ.get("RECON_DATA_DOCS_BASE_URL")
    if base and path:
        marker = f"{os.sep}uncommitted{os.sep}data_docs{os.sep}{SITE_NAME}{os.sep}"
        _, found, relative = path.partition(marker)
        if found:
            return f"{base.rstrip('/')}/{urllib.parse.quote(relative)}"
    return Path(path).as_uri() if path else ""


def record_validation(pg: Any, pipeline: str, run_id: str, outcome: ValidationOutcome) -> bool:
    """Store the checkpoint's decision and the Data Docs link on the run's ``recon.runs`` row.

    ``contract_passed`` becomes the checkpoint's verdict; a committed run's ``status`` follows
    it (``passed`` / ``failed``); runs still ``running`` or in ``error`` keep their status.

    :returns: whether the run's row exists.
    """
    status = "passed" if outcome.passed else "failed"
    try:
        with pg.cursor() as cur:
            cur.execute(
                "UPDATE recon.runs SET validation_url = %s, contract_passed = %s, "
                "violations = %s, "
                "status = CASE WHEN status IN ('passed', 'failed') THEN %s ELSE status END "
                "WHERE pipeline = %s AND run_id = %s",
                (
                    data_docs_url(outcome.data_docs_path),
                    outcome.passed,
                    json.dumps(outcome.failures, default=str),
                    status,
                    pipeline,
                    run_id,
                ),
            )
            found = bool(cur.rowcount)
        pg.commit()
    except BaseException:
        pg.rollback()
        raise
    return found
