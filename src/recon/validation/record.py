"""A run's validation on ``recon.runs``, and links to its Data Docs page."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

from recon import settings
from recon.validation.checkpoint import SITE_NAME, ValidationOutcome


def data_docs_url(path: str) -> str:
    """A link to a Data Docs page: under ``$RECON_DATA_DOCS_BASE_URL`` when the site is served
    (the path relative to the site folder is appended), else a ``file://`` URL."""
    if path.startswith(("http://", "https://", "file://")):
        return path  # already a link (as stored on recon.runs)
    base = settings.data_docs_base_url()
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
