"""The GX project and the one checkpoint builder both engines use.

A checkpoint per pipeline runs the pipeline's semantic suite over one dataframe asset named after
the pipeline, in the data source of the engine's kind: :data:`DATASOURCES` (a Spark DataFrame for
``engine: spark``, a pandas DataFrame for ``engine: local``). Everything else (suite, parameters,
result format, Data Docs site, the replacement of a run's earlier validation, the failures) is the
same for both kinds.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from recon import settings
from recon.config import PipelineConfig
from recon.validation.suites import ValidationError, load_suite, suite_parameters

log = logging.getLogger(__name__)
# GX logs, at INFO, each of its API functions it leaves out of its docs while it is imported:
# 214 lines of "Skipping registering function" at the top of every validate task's log.
logging.getLogger("great_expectations._docs_decorators").setLevel(logging.WARNING)

#: The kinds of GX data source a run's results are validated in.
SourceKind = Literal["spark", "pandas"]
#: The GX data source of each kind; each holds one dataframe asset per pipeline.
DATASOURCES: dict[str, str] = {"spark": "recon_results", "pandas": "recon_results_pandas"}
#: Kept for callers of the Spark data source's name.
DATASOURCE = DATASOURCES["spark"]
BATCH_DEFINITION = "run_results"
SITE_NAME = "local_site"
#: BASIC gives unexpected counts and observed values; the sample of unexpected values would only
#: repeat the verdict name, and each sample costs a Spark job, so none is taken.
RESULT_FORMAT: dict[str, Any] = {"result_format": "BASIC", "partial_unexpected_count": 0}
_LOCK_FILE = ".recon-validation.lock"
_DOCS_LOCK_FILE = ".recon-data-docs.lock"
#: The Data Docs index lists the newest validations only: GX reads every listed result back on each
#: run, so an unbounded index costs each run time in proportion to every run ever validated
#: (0.7 s per run at 200 results here). Older runs keep their pages, linked from the UI page,
#: which lists every run.
INDEX_LIMIT = 50


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
    :param data_docs_index: the site's ``index.html``, listing the newest :data:`INDEX_LIMIT`
        validated runs.
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


def default_gx_dir() -> str:
    """``$RECON_STATE/gx`` (``<repo>/.state/gx`` when ``RECON_STATE`` is unset)."""
    return os.path.join(settings.state_dir(), "gx")


def data_docs_dir(gx_dir: str | None = None) -> str:
    """The Data Docs site folder: serve it as static files to link runs from a UI."""
    return os.path.join(gx_dir or default_gx_dir(), "uncommitted", "data_docs", SITE_NAME)


@contextlib.contextmanager
def _file_lock(gx_dir: str, name: str, *, shared: bool = False) -> Iterator[None]:
    """Hold the lock file ``name`` of the project folder, exclusive or shared (``flock``)."""
    os.makedirs(gx_dir, exist_ok=True)
    with open(os.path.join(gx_dir, name), "a+", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _project_lock(gx_dir: str, *, shared: bool = False) -> contextlib.AbstractContextManager[None]:
    """The project's lock: exclusive to write what runs share, shared to read it."""
    return _file_lock(gx_dir, _LOCK_FILE, shared=shared)


def _docs_lock(gx_dir: str) -> contextlib.AbstractContextManager[None]:
    """The Data Docs site's lock: each build rewrites the index whole."""
    return _file_lock(gx_dir, _DOCS_LOCK_FILE)


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
    if site is not None:
        index = site.setdefault("site_index_builder", {"class_name": "DefaultSiteIndexBuilder"})
        if site.get("show_how_to_buttons", True) or index.get("validation_results_limit") != (
            INDEX_LIMIT
        ):
            site["show_how_to_buttons"] = False
            index["validation_results_limit"] = INDEX_LIMIT
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


def _checkpoint(context: Any, pipeline: str, suite: Any, kind: SourceKind) -> None:
    """Store the pipeline's checkpoint over its dataframe asset in the data source of ``kind``."""
    import great_expectations as gx

    name = DATASOURCES[kind]
    try:
        source = context.data_sources.get(name)
    except KeyError:
        # add_spark / add_pandas: both give dataframe assets with whole-dataframe batches.
        source = getattr(context.data_sources, f"add_{kind}")(name=name)
    try:
        asset = source.get_asset(pipeline)
    except LookupError:
        asset = source.add_dataframe_asset(name=pipeline)
    try:
        batch_definition = asset.get_batch_definition(BATCH_DEFINITION)
    except KeyError:
        batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION)
    # A pipeline that switches engines points its definition at the other kind's asset.
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=pipeline, data=batch_definition, suite=suite)
    )
    # No actions: the Data Docs page is built under its own lock (:func:`_build_page`).
    context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=pipeline, validation_definitions=[definition], actions=[],
            result_format=RESULT_FORMAT,
        )
    )  # fmt: skip


@contextlib.contextmanager
def _installed(
    root: str, pipeline: str, document: dict[str, Any], kind: SourceKind
) -> Iterator[Any]:
    """Install what a validation of ``pipeline`` needs and runs of other pipelines share (the
    project's settings, the suite, the pipeline's asset, definition and checkpoint), and yield
    the context while the exclusive project lock is still held."""
    with _project_lock(root):
        context = _context(root)
        suite = _install_suite(context, document)
        _checkpoint(context, pipeline, suite, kind)
        yield context


def _build_page(context: Any, key: Any, suite_name: str) -> None:
    """Build the run's validation page, the suite's page and the index."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    context.build_data_docs(
        site_names=[SITE_NAME],
        resource_identifiers=[key, ExpectationSuiteIdentifier(name=suite_name)],
        build_index=True,
    )


def _batch_identifiers(pipeline: str) -> set[str]:
    """The batch ids a validation of the pipeline is stored under, one per data source kind."""
    return {f"{source}-{pipeline}" for source in DATASOURCES.values()}


def _page_path(context: Any, key: Any) -> str | None:
    urls = context.get_docs_sites_urls(resource_identifier=key, site_name=SITE_NAME)
    url = urls[0].get("site_url") if urls else None
    if not url:
        return None
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path)


def _run_keys(store: Any, run_id: str) -> list[Any]:
    """The stored validation results of run ``run_id``, of any suite. The project's store is a
    folder, ``<suite>/<run id>/<run time>/<batch>.json``: only the run's folders are read, where
    ``store.list_keys()`` walks every result ever stored (a cost per run that grows with the
    history: 0.2 s at 500 stored results here)."""
    backend = store.store_backend
    base = getattr(backend, "full_base_directory", None)
    if not base or not os.path.isdir(base):
        return list(store.list_keys())
    keys: list[Any] = []
    for suite in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, suite, run_id)):
            keys += [store.tuple_to_key(key) for key in backend.list_keys((suite, run_id))]
    return keys


def _forget_run(context: Any, pipeline: str, run_id: str) -> None:
    """Remove earlier validations of this pipeline's run (results and pages), whichever kind of
    data source made them: one validation per run."""
    store = context.validation_results_store
    batches = _batch_identifiers(pipeline)
    for key in _run_keys(store, run_id):
        if key.run_id.run_name != run_id or key.batch_identifier not in batches:
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


def run_checkpoint(
    cfg: PipelineConfig,
    run_id: str,
    kind: SourceKind,
    dataframe: Any,
    *,
    document: dict[str, Any] | None = None,
    gx_dir: str | None = None,
) -> ValidationOutcome:
    """Run the pipeline's checkpoint over one run's results and build its Data Docs page.

    :param kind: the data source kind ``dataframe`` belongs to (``spark`` or ``pandas``).
    :param dataframe: the run's results (at least the suite's columns).
    :param document: the suite (default: the one of the pipeline's semantic).
    :param gx_dir: the GX project folder (default :func:`default_gx_dir`); created when absent.
    :raises ValidationError: the suite is unusable or an expectation could not be evaluated.
    """
    from great_expectations.core.run_identifier import RunIdentifier

    document = document or load_suite(cfg.semantics)
    parameters = suite_parameters(cfg)
    root = os.path.abspath(gx_dir or default_gx_dir())
    # What runs of other pipelines share (the project's YAML, one asset per pipeline in it; the
    # suites, which GX rewrites in place, truncate then write, on every add_or_update of a
    # checkpoint) is written under the exclusive lock and read under the shared one: runs
    # validate side by side, and none reads a suite another is rewriting (a CI run once failed
    # on GX reading an empty suite file). The Data Docs index is rewritten whole by each run:
    # its own lock. Another run's result read while it is being written is skipped by GX.
    with _installed(root, cfg.name, document, kind) as context:
        _forget_run(context, cfg.name, run_id)
    with _project_lock(root, shared=True):
        # Read again: GX gives a suite's expectations new ids on every update, so the objects
        # above are stale once another run has installed the suite since (GX then refuses to
        # run them); under the shared lock, what is read stays as stored.
        checkpoint = context.checkpoints.get(cfg.name)
        checkpoint_result = checkpoint.run(
            batch_parameters={"dataframe": dataframe},
            expectation_parameters=parameters,
            run_id=RunIdentifier(run_name=run_id),
        )
        ((key, validation),) = checkpoint_result.run_results.items()
        with _docs_lock(root):
            _build_page(context, key, document["name"])
    failures = _failures(validation, cfg)
    page = _page_path(context, key) or ""
    passed = bool(validation.success)
    log.info(
        "pipeline %s run %s: %s suite %s on %s (%d failed expectations); Data Docs %s",
        cfg.name, run_id, "passed" if passed else "FAILED", cfg.semantics, kind, len(failures),
        page,
    )  # fmt: skip
    return ValidationOutcome(
        passed=passed,
        failures=failures,
        data_docs_path=page,
        validation_id="/".join(str(part) for part in key.to_tuple()),
        data_docs_index=os.path.join(data_docs_dir(root), "index.html"),
        suite_name=cfg.semantics,
        parameters=parameters,
    )
