"""Removing validations from the GX project: a pruned run's (:func:`forget_validations`), or
everything of a pipeline that no longer exists (:func:`forget_pipeline_validations`). Both
rebuild the Data Docs index, which would otherwise link to removed pages."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterable
from typing import Any

from recon.config import PipelineConfig
from recon.validation.checkpoint import (
    DATASOURCES,
    SITE_NAME,
    _batch_identifiers,
    _context,
    _forget_run,
    _page_path,
    _project_lock,
    data_docs_dir,
    default_gx_dir,
)


def forget_validations(cfg: PipelineConfig, run_ids: list[str], gx_dir: str | None = None) -> None:
    """Remove the pipeline's validations of ``run_ids`` (stored results and pages)
    (``recon prune``).

    :param gx_dir: the GX project folder (default :func:`default_gx_dir`).
    """
    root = os.path.abspath(gx_dir or default_gx_dir())
    if not run_ids or not os.path.isdir(root):
        return
    with _project_lock(root):
        context = _context(root)
        for run_id in run_ids:
            _forget_run(context, cfg.name, run_id)
        _tidy(context, root, run_ids, [cfg.semantics])


def forget_pipeline_validations(pipeline: str, gx_dir: str | None = None) -> int:
    """Remove every validation of ``pipeline`` (stored results and pages), its checkpoint, its
    validation definition and its dataframe assets (``recon forget``).

    :returns: the number of stored validation results removed.
    """
    from great_expectations.exceptions.exceptions import DataContextError

    root = os.path.abspath(gx_dir or default_gx_dir())
    if not os.path.isdir(root):
        return 0
    with _project_lock(root):
        context = _context(root)
        store = context.validation_results_store
        batches = _batch_identifiers(pipeline)
        # Every stored result is listed, once, for a pipeline that goes: its runs are unknown.
        keys = [k for k in store.list_keys() if k.batch_identifier in batches]
        for key in keys:
            page = _page_path(context, key)
            if page and os.path.isfile(page):
                os.remove(page)
            store.remove_key(key)
        for collection in (context.checkpoints, context.validation_definitions):
            with contextlib.suppress(DataContextError):  # never made, or already gone
                collection.delete(name=pipeline)
        for source_name in DATASOURCES.values():
            try:
                source = context.data_sources.get(source_name)
            except KeyError:
                continue
            with contextlib.suppress(LookupError):
                source.delete_asset(name=pipeline)
        suites = sorted({k.expectation_suite_identifier.name for k in keys})
        _tidy(context, root, sorted({k.run_id.run_name for k in keys}), suites)
    return len(keys)


def _tidy(context: Any, root: str, run_ids: Iterable[str], suites: list[str]) -> None:
    """The run folders left empty removed, and the index rebuilt (with the suites' pages, not a
    page per stored result; the index builder drops its links to removed results)."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    store = getattr(context.validation_results_store.store_backend, "full_base_directory", None)
    for base in (store, data_docs_dir(root)):
        _remove_empty_run_folders(base, list(run_ids))
    if suites:
        identifiers = [ExpectationSuiteIdentifier(name=s) for s in suites]
        context.build_data_docs(site_names=[SITE_NAME], resource_identifiers=identifiers)


def _remove_empty_run_folders(base: str | None, run_ids: list[str]) -> None:
    """Every ``<suite>/<run id>/`` folder under ``base`` (``validations`` under a Data Docs site)
    of ``run_ids``, with what is under it, when it holds no file."""
    if not base:
        return
    for suites in (base, os.path.join(base, "validations")):
        for run_id in run_ids:
            for folder in glob.glob(os.path.join(glob.escape(suites), "*", glob.escape(run_id))):
                for parent, _, _ in sorted(os.walk(folder), reverse=True):
                    with contextlib.suppress(OSError):  # not empty: a file of another pipeline
                        os.rmdir(parent)
