"""Finding 8: the compose file published the API on all interfaces under Airflow's
development auth manager (SimpleAuthManager), whose generated password file was on no
volume, so recreating the container silently broke the ``proofflow_airflow_api``
connection; the staging receiver's port was published on 0.0.0.0 too.

docker-compose.yml and its multi-host override, parsed (no Docker engine here): nothing is
published beyond loopback by default, the receiver only through the override and on an
address the operator names, the FAB auth manager with its admin's password a required .env
secret, and the API connection's credentials from that same secret, made a user again by
every init (``proofflow setup``), so nothing they depend on is generated in a container.
Where the FAB provider is installed (the image; not the test venv, whose python-dateutil is
newer than the provider allows), the last test runs the init natively and has FAB issue the
connection's user a token."""
import contextlib
import re
import secrets
import sys
import tomllib
import types
from pathlib import Path

import pytest
import yaml

import topology
from local_stack import airflow_env, free_port, request, run_service, running

ROOT = Path(__file__).resolve().parents[2]
FAB = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
CONN_ENV = "AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API"
LOOPBACK = {"127.0.0.1", "::1"}
REQUIRED = "<required>"  # a variable without a default: the operator must name the address
# a compose variable reference (``$${...}`` is an escaped, container-side one)
REF = re.compile(r"(?<!\$)\$\{(?P<name>\w+)(?::(?P<op>[-?])(?P<arg>[^}]*))?\}")


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _airflow_services(compose) -> dict:
    """The services that run Airflow: the project's image."""
    return {n: s for n, s in compose["services"].items() if s["image"].startswith("proofflow")}


def _default(value: str) -> str:
    """``value`` as compose renders it when .env sets none of its variables; a required
    variable becomes REQUIRED."""
    return REF.sub(lambda m: m["arg"] if m["op"] == "-" else REQUIRED if m["op"] == "?" else "", value)


def _bind(entry) -> str:
    """The host address a ``ports`` entry publishes on by default ('' = all interfaces)."""
    if isinstance(entry, dict):
        return _default(str(entry.get("host_ip", "")))
    spec = _default(str(entry)).split("/")[0]
    if spec.startswith("["):
        return spec[1:spec.index("]")]
    parts = spec.split(":")
    return parts[0] if len(parts) == 3 else ""


def test_no_service_publishes_beyond_loopback_by_default(compose):
    # how _bind reads each form compose accepts
    assert _bind("8080:8080") == _bind("8080") == _bind("${B:-}:1:1") == _bind({"target": 1}) == ""
    assert _bind("${B:-0.0.0.0}:${P:-1}:1/tcp") == "0.0.0.0" and _bind("[::1]:1:1") == "::1"
    assert _bind("${B:?set B}:1:1") == REQUIRED and _bind({"host_ip": "${B:-127.0.0.1}", "target": 1}) == "127.0.0.1"
    assert compose["services"]["api-server"]["ports"]  # the API is published: on loopback
    for name, svc in compose["services"].items():
        assert svc.get("network_mode") != "host", f"{name} shares the host's network"
        for entry in svc.get("ports", []):
            bind = _bind(entry)
            assert bind in LOOPBACK, f"{name} publishes {entry!r} on {bind or 'all interfaces'} by default"


def test_the_receiver_is_published_only_on_an_address_the_operator_names(compose):
    receiver = compose["services"]["staging-receiver"]
    assert "ports" not in receiver, "the staging receiver's port is published by default"
    override = yaml.safe_load((ROOT / "deploy" / "compose.multi-host.yml").read_text())["services"]
    assert set(override) == {"staging-receiver"}
    ports = override["staging-receiver"]["ports"]
    assert ports and all(_bind(p) == REQUIRED for p in ports), ports
    token_ref = REF.fullmatch(override["staging-receiver"]["environment"]["PROOFFLOW_STAGING_TOKEN"])
    assert token_ref and token_ref["op"] == "?", "published, the receiver must be given a token"


def test_compose_runs_the_fab_auth_manager(compose):
    services = _airflow_services(compose)
    assert set(topology.SERVICES) <= set(services)
    for name, svc in services.items():
        env = svc["environment"]
        assert env.get("AIRFLOW__CORE__AUTH_MANAGER") == FAB, f"{name} runs another auth manager than FAB's"
        assert not [k for k in env if "SIMPLE_AUTH_MANAGER" in k], name
        # the image it runs installs the provider, at the version pyproject.toml pins
        assert "fab" in svc["build"]["args"]["PROOFFLOW_EXTRAS"].split(","), name
    (pin,) = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["fab"]
    assert re.fullmatch(r"apache-airflow-providers-fab==\d+\.\d+\.\d+", pin)


def test_the_admin_password_is_a_required_secret_shared_with_the_api_connection(compose):
    """The connection the tasks reach the REST API by logs in as the admin, both from .env:
    the user's password is a required variable, with no default anywhere in the repo."""
    api_port = REF.search(compose["services"]["api-server"]["command"][-1])["name"]
    for name, svc in _airflow_services(compose).items():
        value = svc["environment"].get(CONN_ENV, "")
        refs = {m["name"]: m for m in REF.finditer(value)}
        shape = REF.sub(lambda m: f"<{m['name']}>", value)
        assert shape == f"http://<AIRFLOW_ADMIN_USER>:<AIRFLOW_ADMIN_PASSWORD>@api-server:<{api_port}>", name
        assert refs["AIRFLOW_ADMIN_PASSWORD"]["op"] == "?", f"{name}: the admin's password has a default"
    text = (ROOT / "docker-compose.yml").read_text()
    for m in REF.finditer(text):
        if m["name"] == "AIRFLOW_ADMIN_PASSWORD":
            assert m["op"] == "?", m[0]
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert example["AIRFLOW_ADMIN_PASSWORD"] == ""


def test_what_the_api_connection_needs_survives_recreated_containers(compose):
    """Nothing the connection needs is generated in a container: its credentials come from
    .env, FAB keeps its users in the metadata DB on a named volume, and the init that makes
    the connection's login a user again runs before every service that calls the API."""
    services = compose["services"]
    (data,) = [v for v in services["postgres"]["volumes"] if v.endswith(":/var/lib/postgresql/data")]
    assert data.split(":")[0] in compose["volumes"], f"the metadata DB is not on a named volume: {data}"
    assert services[topology.INIT]["command"][:2] == ["proofflow", "setup"]
    for name in ("api-server", "worker-cpu", "worker-gpu"):
        env = services[name]["environment"]
        assert REF.search(env.get(CONN_ENV, "")), f"{name}: no API connection from .env"
        assert env["AIRFLOW__CORE__AUTH_MANAGER"] == FAB, f"{name}: the users are not in the metadata DB"
        assert "@postgres:5432/airflow" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"], name
        assert services[name]["depends_on"][topology.INIT]["condition"] == "service_completed_successfully"


class _FakeSecurityManager:
    """FAB's security manager as ``ensure_api_user`` uses it, users in a dict."""

    def __init__(self):
        self.users: dict[str, dict] = {}

    def find_user(self, username):
        return types.SimpleNamespace(id=username) if username in self.users else None

    def find_role(self, name):
        return name

    def add_user(self, username, first_name, last_name, email, role, password):
        self.users[username] = {"role": role, "password": password, "email": email}
        return True

    def reset_password(self, user_id, password):
        self.users[user_id]["password"] = password
        return True


def _fake_fab(monkeypatch) -> _FakeSecurityManager:
    """The FAB provider's modules that ``ensure_api_user`` imports, standing in for it (Airflow
    imported first: its provider discovery would load the real one's metadata)."""
    import airflow.api_fastapi.app  # noqa: F401
    sm = _FakeSecurityManager()
    manager = types.ModuleType("fab_auth_manager")
    manager.FabAuthManager = type("FabAuthManager", (), {})

    @contextlib.contextmanager
    def get_application_builder():
        yield types.SimpleNamespace(sm=sm)
    utils = types.ModuleType("utils")
    utils.get_application_builder = get_application_builder
    monkeypatch.setitem(sys.modules, "airflow.providers.fab.auth_manager.fab_auth_manager", manager)
    monkeypatch.setitem(sys.modules, "airflow.providers.fab.auth_manager.cli_commands.utils", utils)
    return sm


def test_every_init_makes_the_connections_login_a_user_with_its_password(monkeypatch):
    from proofflow.airflow import bootstrap
    sm = _fake_fab(monkeypatch)
    monkeypatch.setenv(CONN_ENV, "http://admin:first-secret@api-server:8080")
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", "airflow.api_fastapi.auth.managers.simple."
                       "simple_auth_manager.SimpleAuthManager")
    assert bootstrap.ensure_api_user() is None and not sm.users  # the simple auth manager has its own users
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", FAB)
    assert bootstrap.ensure_api_user() == "admin"
    assert sm.users["admin"]["role"] == "Admin" and sm.users["admin"]["password"] == "first-secret"
    assert bootstrap.ensure_api_user() == "admin"  # a recreated init container: the same user, unchanged
    monkeypatch.setenv(CONN_ENV, "http://admin:second-secret@api-server:8080")  # the secret changed in .env
    bootstrap.ensure_api_user()
    assert list(sm.users) == ["admin"] and sm.users["admin"]["password"] == "second-secret"


@pytest.mark.slow
def test_fab_issues_the_connections_user_a_token(tmp_path, pg_new_database, monkeypatch):
    """The compose init's way, natively: FAB from compose's environment, the connection from
    compose's with a password of this test, ``proofflow setup``; then the API server serves
    the tasks' client of that connection (its token from FAB), refuses anyone else, and still
    serves it after the init runs again (a recreated init container)."""
    from proofflow.airflow.hooks.api import AirflowApiHook
    pytest.importorskip("airflow.providers.fab")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    compose_env = compose["services"]["api-server"]["environment"]
    port, password = free_port(), secrets.token_urlsafe(16)  # as .env.example says to make it
    values = {"AIRFLOW_ADMIN_USER": "admin", "AIRFLOW_ADMIN_PASSWORD": password, "AIRFLOW_API_PORT": str(port)}
    conn = topology.expand(compose_env[CONN_ENV], values).replace("@api-server:", "@127.0.0.1:")
    env = airflow_env(tmp_path / "airflow", pg_new_database("airflow"), port,
                      AIRFLOW__CORE__AUTH_MANAGER=compose_env["AIRFLOW__CORE__AUTH_MANAGER"],
                      PROOFFLOW_HOME=str(tmp_path / "proofflow"), PROOFFLOW_DB_URL=pg_new_database("timing"),
                      **{CONN_ENV: conn})
    monkeypatch.setenv(CONN_ENV, conn)  # as the workers have it
    run_service(topology.INIT, env)
    with running(env, tmp_path / "logs", services=("api-server",)) as (base, _procs):
        assert request(base, "/api/v2/dags")[0] == 401
        assert request(base, "/auth/token", {"username": "admin", "password": "wrong"})[0] == 401
        assert "dags" in AirflowApiHook().get_conn().call("GET", "/api/v2/dags")
        run_service(topology.INIT, env)  # a recreated init container
        assert "dags" in AirflowApiHook().get_conn().call("GET", "/api/v2/dags")
