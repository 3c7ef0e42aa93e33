"""proofflow as an Airflow provider, as Airflow itself finds it: the ProvidersManager reads the
installed ``apache_airflow_provider`` entry point (reinstall with ``pip install -e .`` after
changing pyproject.toml's entry points), validates it against the schema Airflow ships, maps
connection type ``proofflow_timing`` to TimingStoreHook and lists the notifications."""
import importlib
import json
from importlib import metadata, resources

import jsonschema
import pytest

from proofflow import settings
from proofflow.airflow.get_provider_info import get_provider_info
from proofflow.airflow.hooks.timing import TimingStoreHook

HOOK = "proofflow.airflow.hooks.timing.TimingStoreHook"
NOTIFICATIONS = {"proofflow.airflow.notifications.run_state.RunStateNotifier",
                 "proofflow.airflow.notifications.alerts.H2DEmailNotifier",
                 "proofflow.airflow.notifications.alerts.H2DWebhookNotifier"}


def _entry_point(group: str, name: str):
    found = [ep for ep in metadata.entry_points(group=group, name=name) if ep.dist.name == "proofflow"]
    assert found, f"no {group} entry point {name!r} installed for proofflow: reinstall it (pip install -e .)"
    return found[0]


def _schema(name: str) -> dict:
    return json.loads(resources.files("airflow").joinpath(name).read_text())


@pytest.fixture(scope="module")
def providers():
    from airflow.providers_manager import ProvidersManager
    return ProvidersManager()


def test_the_provider_is_found_through_its_entry_point(providers):
    assert _entry_point("apache_airflow_provider", "provider_info").load() is get_provider_info
    info = providers.providers["proofflow"]
    assert info.version == metadata.version("proofflow")
    assert {k: v for k, v in info.data.items() if k != "documentation-url"} == get_provider_info()


def test_the_provider_info_is_valid_for_airflow():
    info = get_provider_info()
    jsonschema.validate(info, _schema("provider_info.schema.json"))  # what the ProvidersManager checks
    # the runtime schema leaves the connection form unchecked; provider.yaml's schema checks it
    jsonschema.validate(info["connection-types"], _schema("provider.yaml.schema.json")["properties"]["connection-types"])
    for entry in info["hooks"] + info["operators"]:
        for module in entry["python-modules"]:
            importlib.import_module(module)


def test_proofflow_timing_connections_get_the_timing_store_hook(monkeypatch):
    from airflow.sdk import BaseHook
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime
    hook = ProvidersManagerTaskRuntime().hooks["proofflow_timing"]  # what Connection.get_hook looks up
    assert (hook.hook_class_name, hook.connection_id_attribute_name, hook.hook_name, hook.package_name) == \
        (HOOK, "proofflow_conn_id", "proofflow timing store", "proofflow")
    assert TimingStoreHook.default_conn_name == settings.TIMING_CONN_ID

    monkeypatch.delenv("PROOFFLOW_DB_URL", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_TIMING", json.dumps(
        {"conn_type": "proofflow_timing", "host": "db.example", "port": 5433, "login": "u", "schema": "timing"}))
    got = BaseHook.get_connection(settings.TIMING_CONN_ID).get_hook()
    assert isinstance(got, TimingStoreHook) and got.proofflow_conn_id == settings.TIMING_CONN_ID
    assert got.get_url() == "postgresql+psycopg2://u@db.example:5433/timing"
    monkeypatch.setenv("AIRFLOW_CONN_PROOFFLOW_TIMING", json.dumps(
        {"conn_type": "proofflow_timing", "host": "ignored", "extra": {"url": "sqlite:////srv/timing.db"}}))
    assert TimingStoreHook().get_url() == "sqlite:////srv/timing.db"


def test_the_connection_form_is_the_providers():
    """The API server's connection form metadata (what the UI renders) for proofflow_timing."""
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
    (meta,) = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "proofflow_timing"]
    assert meta.hook_class_name == HOOK and meta.hook_name == "proofflow timing store"
    assert meta.standard_fields.url_schema.title == "Database" and not meta.standard_fields.host.hidden
    assert meta.extra_fields["url"]["schema"]["title"] == "SQLAlchemy URL"


def test_the_notifications_are_listed(providers):
    from airflow.sdk import BaseNotifier
    from airflow.sdk.module_loading import import_string
    assert NOTIFICATIONS <= set(providers.notification)
    assert all(issubclass(import_string(name), BaseNotifier) for name in NOTIFICATIONS)


def test_the_ui_plugin_keeps_its_own_entry_point(providers):
    from proofflow.airflow.plugins.plugin import ProofflowPlugin
    assert _entry_point("airflow.plugins", "proofflow").load() is ProofflowPlugin
    assert not [p for p in providers.plugins if p.provider_name == "proofflow"], "it would load twice"


def test_the_cluster_policy_is_registered_through_its_entry_point():
    """A run's priority reaches its task instances through the policy (proofflow/airflow/
    policy.py): Airflow loads it from the entry point and calls it as it creates them."""
    from airflow import settings as airflow_settings
    from proofflow.airflow import policy
    assert _entry_point("airflow.policy", "proofflow").load() is policy
    hook = airflow_settings.get_policy_plugin_manager().hook.task_instance_mutation_hook
    assert policy in [impl.plugin for impl in hook.get_hookimpls()]
    assert airflow_settings.task_instance_mutation_hook.is_noop is False  # else new runs' instances skip it
