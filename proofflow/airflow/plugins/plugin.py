"""The proofflow Airflow plugin (entry point ``airflow.plugins``): the report app at
/proofflow and a "Proof report" tab on every dag run page showing its report page.

Plugins are imported by every Airflow process, task processes included; the FastAPI app is
built only when the API server asks for it (``fastapi_apps`` is read there alone). Its
listener preloads the tasks' modules in the job processes that fork them
(``proofflow.airflow.preload``)."""
from __future__ import annotations

from functools import cached_property

from airflow.plugins_manager import AirflowPlugin

from proofflow.airflow import preload


class ProofflowPlugin(AirflowPlugin):
    name = "proofflow"
    listeners = [preload]
    external_views = [{
        "name": "Proof report",
        "href": "proofflow/runs/{DAG_ID}/{RUN_ID}",  # relative: resolved against the UI's base URL
        "destination": "dag_run",
        "url_route": "proof-report",
    }]

    @cached_property
    def fastapi_apps(self):
        from proofflow.airflow.plugins.webapp import create_app
        return [{"app": create_app(), "url_prefix": "/proofflow", "name": "proofflow run reports"}]
