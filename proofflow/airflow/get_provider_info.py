"""What Airflow's ProvidersManager learns about proofflow from the ``apache_airflow_provider``
entry point (pyproject.toml): the ``proofflow_timing`` connection type and its form, the hook,
operator and notification modules. The UI plugin keeps its own ``airflow.plugins`` entry
point and is not listed here: Airflow would load it twice and report the second as an error.
"""
from __future__ import annotations

_INTEGRATION = "proofflow"


def get_provider_info() -> dict:
    return {
        "package-name": "proofflow",
        "name": "proofflow",
        "description": "Batch Groth16 proving on GPUs, orchestrated by Apache Airflow, measured end to end.\n",
        "integrations": [{"integration-name": _INTEGRATION, "tags": ["service"]}],
        "operators": [{
            "integration-name": _INTEGRATION,
            "python-modules": ["proofflow.airflow.operators.proof", "proofflow.airflow.operators.check_h2d",
                               "proofflow.airflow.operators.summary"],
        }],
        "hooks": [{
            "integration-name": _INTEGRATION,
            "python-modules": ["proofflow.airflow.hooks.timing", "proofflow.airflow.hooks.api",
                               "proofflow.airflow.hooks.webhook"],
        }],
        "connection-types": [{
            "connection-type": "proofflow_timing",
            "hook-class-name": "proofflow.airflow.hooks.timing.TimingStoreHook",
            "hook-name": "proofflow timing store",
            # declared here, not by the hook's get_ui_field_behaviour (deprecated since Airflow 3.2)
            "ui-field-behaviour": {
                "relabeling": {"schema": "Database"},
                "placeholders": {"host": "postgres.example.com", "port": "5432", "login": "proofflow",
                                 "schema": "proofflow"},
            },
            "conn-fields": {
                "url": {
                    "label": "SQLAlchemy URL",
                    "description": "Any SQLAlchemy URL, e.g. sqlite:////var/lib/proofflow/timing.db; when set, "
                                   "it wins over the fields above (a PostgreSQL password belongs in Password).",
                    "schema": {"type": ["string", "null"]},
                },
            },
        }],
        "notifications": [
            "proofflow.airflow.notifications.run_state.RunStateNotifier",
            "proofflow.airflow.notifications.alerts.H2DEmailNotifier",
            "proofflow.airflow.notifications.alerts.H2DWebhookNotifier",
        ],
    }
