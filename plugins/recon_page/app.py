"""The FastAPI app Airflow's api-server mounts at ``/recon`` (see :mod:`recon_page.plugin`).

Routes (each one checks the Airflow token itself, see :mod:`recon_page.auth`):

``/recon/``                           one row per pipeline; ``?pipeline=P``: the pipeline's page,
                                      ``&run=R&verdict=V&topic=T&partition=N&q=text&sort=S&dir=desc
                                      &page=N&per_page=N`` choose its discrepancies (``browse``)
``/recon/runs/<pipeline>/<run id>[?verdict=V]``  an alert's link (``recon.alert.content.page_url``):
                                      sent on to the pipeline's page filtered so
``/recon/discrepancies.csv?pipeline=P&run=R...``      every matching row as CSV
``/recon/discrepancies.parquet?pipeline=P&run=R...``  the same as Parquet
``/recon/api/pipelines``              every pipeline's latest run, JSON
``/recon/api/runs?pipeline=P``        the pipeline's latest runs (at most 50), JSON
``/recon/api/discrepancies?pipeline=P``  its latest discrepancy rows (at most 100), JSON
``/recon/api/latency?pipeline=P``     delivery latency of its latest runs (whole run), JSON
``/recon/api/funnel?pipeline=P``      the way from source to sink of its latest runs that have a
                                      source (``recon.runs.funnel``), JSON
``/recon/api/repairs?pipeline=P``     its repair plans and their state (at most 50), JSON
``/recon/repairs/<plan id>``          one repair plan, read-only (summary and JSON)
``/recon/docs/<path>``                the Great Expectations Data Docs site

Without a valid token the JSON routes answer 401; the HTML routes send a browser without a token
to Airflow's login page (and answer 401 to a bad ``Authorization`` header).
"""

from __future__ import annotations

import logging
import mimetypes
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from psycopg2 import Error as DatabaseError

from recon_page import browse, data, docs, funnel, links, render, repairs
from recon_page.auth import (
    NotAuthenticated,
    authenticate,
    dag_id,
    login_url,
    may_read_all_dags,
    readable_pipelines,
)

log = logging.getLogger(__name__)

MOUNT_PATH = "/recon"
PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
)
#: The pipeline pages: their filter form (GET) submits to the page itself.
BROWSE_CSP = PAGE_CSP.replace("form-action 'none'", "form-action 'self'")
# Data Docs pages carry GX's own scripts: run them in an opaque origin, away from Airflow's cookie.
DOCS_CSP = (
    "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; frame-ancestors 'self'"
)

app = FastAPI(title="Delivery reconciliation", docs_url=None, redoc_url=None, openapi_url=None)


class LoginRequired(Exception):
    """A browser without a (valid) Airflow session cookie: send it to Airflow's login."""


async def api_user(request: Request) -> Any:
    return await authenticate(request)


async def browser_user(request: Request) -> Any:
    try:
        return await authenticate(request)
    except NotAuthenticated as exc:
        if exc.explicit:
            raise
        raise LoginRequired(exc.reason) from None


ApiUser = Annotated[Any, Depends(api_user)]
BrowserUser = Annotated[Any, Depends(browser_user)]


@app.exception_handler(NotAuthenticated)
async def _not_authenticated(request: Request, exc: NotAuthenticated) -> Response:
    return JSONResponse(
        {"detail": exc.reason}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
    )


@app.exception_handler(LoginRequired)
async def _login_required(request: Request, exc: LoginRequired) -> Response:
    try:
        target = login_url(request)
    except Exception:  # no auth manager: refuse plainly
        log.warning("no login URL from the auth manager", exc_info=True)
        return JSONResponse({"detail": str(exc)}, status_code=401)
    return RedirectResponse(target, status_code=307)


@app.middleware("http")
async def _headers(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    response = await call_next(request)
    response.headers.setdefault("Cache-Control", "no-store")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    return response


def _links(request: Request) -> links.Links:
    prefix = str(request.scope.get("root_path") or MOUNT_PATH).rstrip("/")
    airflow = prefix[: -len(MOUNT_PATH)] if prefix.endswith(MOUNT_PATH) else ""
    return links.Links(prefix=prefix, airflow=airflow)


#: What makes a route answer 503 instead of 500.
DB_ERRORS = (data.ResultsUnavailable, DatabaseError)


def _unavailable(exc: Exception) -> HTTPException:
    # The reason goes to the log only: driver messages can name hosts and users.
    log.error("results database unavailable: %s", data.redact(str(exc)))
    return HTTPException(status_code=503, detail="the results database is not reachable")


def _visible_latest(conn: Any, user: Any) -> list[data.Run]:
    latest = data.latest_runs_by_pipeline(conn)
    allowed = readable_pipelines(user, [r.pipeline for r in latest])
    return [r for r in latest if r.pipeline in allowed]


def _run_json(run: data.Run, links: links.Links) -> dict[str, Any]:
    out = asdict(run)
    out.pop("validation_url")
    out["dag_id"] = dag_id(run.pipeline)
    out["links"] = {
        "dag_run": links.dag_run(run.pipeline, run.run_id),
        "data_docs": links.docs(run),
    }
    encoded: dict[str, Any] = jsonable_encoder(out)  # a dict of str keys stays one
    return encoded


def _view(conn: Any, latest: data.Run, chosen: browse.Filter | None = None) -> render.PipelineView:
    """A pipeline's section; with ``chosen``, one page of a run's discrepancies (the latest run's
    unless the filter names one) instead of the latest rows of every run."""
    latency = data.latency(conn, latest.pipeline)
    runs = data.runs(conn, latest.pipeline)
    page = None
    if chosen is not None:
        run_id = chosen.run_id or latest.run_id
        if run_id not in {r.run_id for r in runs} and not data.run_exists(
            conn, latest.pipeline, run_id
        ):
            raise HTTPException(status_code=404, detail="no such run of this pipeline")
        page = browse.read_page(conn, latest.pipeline, run_id, chosen)
    return render.PipelineView(
        latest=latest,
        runs=runs,
        discrepancies=[] if page is not None else data.discrepancies(conn, latest.pipeline),
        latency=latency,
        # one run's partitions only (the newest measured): the chart needs the whole-run rows
        latency_partitions=(
            data.latency_partitions(conn, latest.pipeline, latency[0].run_id) if latency else []
        ),
        repairs=repairs.list_repairs(conn, latest.pipeline),
        browse=page,
    )


def _filter(request: Request) -> browse.Filter:
    try:
        return browse.Filter.parse(request.query_params)
    except browse.BadFilter as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


@app.get("/", response_class=HTMLResponse)
def page(request: Request, user: BrowserUser, pipeline: str | None = None) -> HTMLResponse:
    links = _links(request)
    chosen = _filter(request) if pipeline is not None else None
    try:
        with data.results_db() as conn:
            latest = _visible_latest(conn, user)
            views = []
            if pipeline is not None:
                shown = [r for r in latest if r.pipeline == pipeline]
                if not shown:
                    raise HTTPException(status_code=404, detail="no such pipeline")
                views = [_view(conn, shown[0], chosen)]
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None
    html = render.page(latest, views, links, selected=pipeline)
    return HTMLResponse(html, headers={"Content-Security-Policy": BROWSE_CSP})


@app.get("/runs/{pipeline}/{run_id:path}")
def run_link(
    request: Request, user: BrowserUser, pipeline: str, run_id: str, verdict: str | None = None
) -> RedirectResponse:
    """An alert's link to one run's discrepancies: the pipeline's page, filtered so."""
    try:
        chosen = browse.Filter.parse({"run": run_id, "verdict": verdict or ""})
    except browse.BadFilter as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None
    target = _links(request).discrepancies(pipeline, run_id, chosen.verdict)
    return RedirectResponse(target, status_code=307)


def _download(request: Request, user: Any, pipeline: str, fmt: str) -> Response:
    chosen = _filter(request)
    _readable(user, pipeline)
    if not chosen.run_id:
        raise HTTPException(status_code=400, detail="run is required: whose rows to download")
    try:
        with data.results_db() as conn:
            if not data.run_exists(conn, pipeline, chosen.run_id):
                raise HTTPException(status_code=404, detail="no such run of this pipeline")
            rows = browse.export_rows(conn, pipeline, chosen.run_id, chosen)
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None
    body, media = (
        (browse.to_csv(rows), "text/csv; charset=utf-8")
        if fmt == "csv"
        else (browse.to_parquet(rows), "application/vnd.apache.parquet")
    )
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{pipeline}_{chosen.run_id}")[:150]
    return Response(
        body,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'},
    )


@app.get("/discrepancies.csv")
def download_csv(request: Request, user: BrowserUser, pipeline: str) -> Response:
    """Every discrepancy row of a run the filter matches, as CSV (at most ``browse.MAX_EXPORT``)."""
    return _download(request, user, pipeline, "csv")


@app.get("/discrepancies.parquet")
def download_parquet(request: Request, user: BrowserUser, pipeline: str) -> Response:
    """The same rows as :func:`download_csv`, as one Parquet file."""
    return _download(request, user, pipeline, "parquet")


@app.get("/api/pipelines")
def api_pipelines(request: Request, user: ApiUser) -> dict[str, Any]:
    links = _links(request)
    try:
        with data.results_db() as conn:
            latest = _visible_latest(conn, user)
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None
    return {
        "pipelines": [
            {
                "pipeline": r.pipeline,
                "semantics": r.semantics,
                "dag_id": dag_id(r.pipeline),
                "latest_run": _run_json(r, links),
                "links": {
                    "page": links.page(r.pipeline),
                    "runs": links.runs_api(r.pipeline),
                    "dag": links.dag(r.pipeline),
                },
            }
            for r in latest
        ]
    }


def _readable(user: Any, pipeline: str) -> None:
    if pipeline not in readable_pipelines(user, [pipeline]):
        raise HTTPException(status_code=404, detail="no such pipeline")


@app.get("/api/runs")
def api_runs(
    request: Request,
    user: ApiUser,
    pipeline: str,
    limit: Annotated[int, Query(ge=1, le=data.MAX_RUNS)] = data.MAX_RUNS,
) -> dict[str, Any]:
    links = _links(request)
    _readable(user, pipeline)
    try:
        with data.results_db() as conn:
            runs = data.runs(conn, pipeline, limit)
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None
    if not runs:
        raise HTTPException(status_code=404, detail="no such pipeline")
    return {"pipeline": pipeline, "runs": [_run_json(r, links) for r in runs]}


def _rows_of(user: Any, pipeline: str, read: Any, limit: int) -> list[Any]:
    """``read(conn, pipeline, limit)`` for a user allowed to read the pipeline; a database that
    does not answer is a 503."""
    _readable(user, pipeline)
    try:
        with data.results_db() as conn:
            return list(read(conn, pipeline, limit))
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None


@app.get("/api/discrepancies")
def api_discrepancies(
    user: ApiUser,
    pipeline: str,
    limit: Annotated[int, Query(ge=1, le=data.MAX_DISCREPANCIES)] = data.MAX_DISCREPANCIES,
) -> dict[str, Any]:
    rows = _rows_of(user, pipeline, data.discrepancies, limit)
    return {"pipeline": pipeline, "discrepancies": jsonable_encoder([asdict(d) for d in rows])}


@app.get("/api/latency")
def api_latency(
    user: ApiUser,
    pipeline: str,
    limit: Annotated[int, Query(ge=1, le=data.MAX_RUNS)] = data.MAX_RUNS,
) -> dict[str, Any]:
    """The whole-run latency row (ms) of each of the pipeline's latest runs that measured one."""
    rows = _rows_of(user, pipeline, data.latency, limit)
    return {"pipeline": pipeline, "latency": jsonable_encoder([asdict(r) for r in rows])}


@app.get("/api/funnel")
def api_funnel(
    user: ApiUser,
    pipeline: str,
    limit: Annotated[int, Query(ge=1, le=data.MAX_RUNS)] = data.MAX_RUNS,
) -> dict[str, Any]:
    """The stored funnel (``recon.runs.funnel``) of each of the pipeline's latest runs that has
    one, newest first."""
    rows = _rows_of(user, pipeline, funnel.funnels, limit)
    return {"pipeline": pipeline, "funnels": jsonable_encoder(rows)}


@app.get("/api/repairs")
def api_repairs(
    user: ApiUser,
    pipeline: str,
    limit: Annotated[int, Query(ge=1, le=repairs.MAX_REPAIRS)] = repairs.MAX_REPAIRS,
) -> dict[str, Any]:
    """The pipeline's repair plans, newest first, without their content (see the plan's page)."""
    rows = _rows_of(user, pipeline, repairs.list_repairs, limit)
    out = [{k: v for k, v in asdict(r).items() if k != "plan"} for r in rows]
    return {"pipeline": pipeline, "repairs": jsonable_encoder(out)}


@app.get("/repairs/{plan_id}", response_class=HTMLResponse)
def repair_plan(request: Request, user: BrowserUser, plan_id: str) -> HTMLResponse:
    """One plan, read-only: a plan of a pipeline the user may not read is "no such plan"."""
    try:
        with data.results_db() as conn:
            found = repairs.find_repair(conn, plan_id)
    except DB_ERRORS as exc:
        raise _unavailable(exc) from None
    if found is None or found.pipeline not in readable_pipelines(user, [found.pipeline]):
        raise HTTPException(status_code=404, detail="no such repair plan")
    html = render.document(
        repairs.plan_view(found, _links(request)),
        render.now_shown(),
        title=f"Repair plan {found.plan_id} · {render.TITLE}",
    )
    return HTMLResponse(html, headers={"Content-Security-Policy": PAGE_CSP})


@app.get("/docs")
def docs_root_redirect(request: Request, user: BrowserUser) -> RedirectResponse:
    return RedirectResponse(f"{_links(request).prefix}/docs/", status_code=307)


@app.get("/docs/{path:path}")
def data_docs(user: BrowserUser, path: str = "") -> FileResponse:
    if not may_read_all_dags(user):
        raise HTTPException(status_code=403, detail="reading DAGs is not allowed for this user")
    target = docs.resolve(path)
    if target is None:
        raise HTTPException(status_code=404, detail="no such Data Docs page")
    media_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return FileResponse(
        target, media_type=media_type, headers={"Content-Security-Policy": DOCS_CSP}
    )
