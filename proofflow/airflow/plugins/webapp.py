"""The FastAPI app the proofflow plugin mounts on the API server at /proofflow:

    GET /proofflow/runs/{dag_id}/{run_id}                a run's report page (HTML, PNG inline)
    GET /proofflow/runs/{dag_id}/{run_id}/timeline.png   its timeline PNG (proofflow.timing.report)

Both need read access to the dag's runs, checked by Airflow's own auth dependency (the UI's
session cookie or a bearer token). The page inlines its PNG: the UI shows it in a sandboxed
iframe, whose own requests carry no cookie. The timing store is named as for the CLI:
PROOFFLOW_DB_URL, else the connection proofflow_timing, else the SQLite default (the API
server may read the metadata DB, so the connection comes from there: ``TimingStoreHook``).
"""
from __future__ import annotations

import base64
import io
import threading

_render_lock = threading.Lock()  # pyplot keeps global state: one figure at a time


def _store():
    from proofflow.airflow.hooks.timing import TimingStoreHook
    return TimingStoreHook(in_api_server=True).get_store()


def _png(fig: dict) -> bytes:
    from proofflow.timing.report import render_png
    buf = io.BytesIO()
    with _render_lock:
        render_png(buf, [("run", fig["report"])])
    return buf.getvalue()


def create_app():
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.responses import HTMLResponse, Response

    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag
    from proofflow.timing.summary import html_page, run_figures

    app = FastAPI(title="proofflow run reports", docs_url=None, redoc_url=None, openapi_url=None)
    can_read_runs = [Depends(requires_access_dag("GET", DagAccessEntity.RUN))]

    def figures(dag_id: str, run_id: str) -> dict:
        fig = run_figures(_store(), dag_id, run_id)
        if fig is None:
            raise HTTPException(404, f"no proofflow timings for run {run_id!r} of {dag_id!r}")
        return fig

    # Plain def: FastAPI runs them in its thread pool (SQL and matplotlib block).
    @app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse, dependencies=can_read_runs)
    def run_page(dag_id: str, run_id: str):
        fig = figures(dag_id, run_id)
        src = "data:image/png;base64," + base64.b64encode(_png(fig)).decode()
        return HTMLResponse(html_page(fig, src))

    @app.get("/runs/{dag_id}/{run_id}/timeline.png", dependencies=can_read_runs)
    def timeline_png(dag_id: str, run_id: str):
        return Response(_png(figures(dag_id, run_id)), media_type="image/png")

    return app
