"""docker-compose.yml, checked without a Docker engine: its services, their commands against
the topology the native test runs (tests/helpers/topology.py), the GPU reservation, health
checks, pinned images, no committed secret; and ``docker compose config`` where a compose
client is installed (it needs no daemon). What it exposes: tests/security/test_deployment_exposure.py."""
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

import topology

ROOT = Path(__file__).resolve().parents[2]
MULTI_HOST = ROOT / "deploy" / "compose.multi-host.yml"  # the override that publishes the receiver
SERVICES = {"postgres", "redis", "airflow-init", "api-server", "scheduler", "dag-processor", "triggerer",
            "worker-cpu", "worker-gpu", "staging-receiver", "statsd-exporter", "prometheus", "grafana"}
# compose variables whose values are secrets: required (${VAR:?...}), never given a default
SECRETS = {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "AIRFLOW_JWT_SECRET", "AIRFLOW_API_SECRET_KEY",
           "AIRFLOW_FERNET_KEY", "AIRFLOW_ADMIN_PASSWORD", "GRAFANA_ADMIN_PASSWORD", "GRAFANA_DB_PASSWORD"}
# a compose variable reference (``$${...}`` is an escaped, container-side one)
REF = re.compile(r"(?<!\$)\$\{(?P<name>\w+)(?P<op>:?[-?])?(?P<arg>[^}]*)\}")


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _strings(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def _env_example() -> dict:
    pairs = [line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    return {k.strip(): v.strip() for k, v in pairs}


def test_services_and_their_commands_are_the_topologys(compose):
    services = compose["services"]
    assert set(services) == SERVICES
    assert set(topology.SERVICES) <= SERVICES
    for name, command in topology.SERVICES.items():
        assert services[name]["command"] == command, name


def test_gpu_reservation_only_on_the_gpu_worker(compose):
    def devices(svc):
        return (((svc.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    with_gpus = {n for n, s in compose["services"].items() if any("gpu" in d.get("capabilities", []) for d in devices(s))}
    assert with_gpus == {"worker-gpu"}
    (dev,) = devices(compose["services"]["worker-gpu"])
    assert dev["driver"] == "nvidia"
    gpu_env = compose["services"]["worker-gpu"]["environment"]
    assert gpu_env["CUDA_VISIBLE_DEVICES"].startswith("${PROOFFLOW_GPU_DEVICES")
    # CuPy's compiled kernels persist in the worker's data volume, across containers
    volume_dirs = [v.split(":")[1] for v in compose["services"]["worker-gpu"]["volumes"]]
    assert any(gpu_env["CUPY_CACHE_DIR"].startswith(d + "/") for d in volume_dirs)
    assert "CUDA_VISIBLE_DEVICES" not in compose["services"]["worker-cpu"]["environment"]


def test_every_long_running_service_has_a_healthcheck(compose):
    for name, svc in compose["services"].items():
        if name == topology.INIT:
            assert svc["restart"] == "no" and "healthcheck" not in svc
        else:
            assert svc.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"


def test_services_start_after_what_they_need(compose):
    services = compose["services"]
    for name in topology.SERVICES.keys() - {topology.INIT}:
        deps = services[name]["depends_on"]
        assert deps[topology.INIT]["condition"] == "service_completed_successfully", name
        assert deps["postgres"]["condition"] == deps["redis"]["condition"] == "service_healthy", name
    for worker in ("worker-cpu", "worker-gpu"):
        assert services[worker]["depends_on"]["api-server"]["condition"] == "service_healthy"


def test_images_are_pinned(compose):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for name, svc in compose["services"].items():
        image = svc["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and "${" not in image, f"{name}: {image}"
        if "build" in svc:  # the project's own image, tagged with the project's version
            assert tag == version, f"{name}: {image} (pyproject.toml says {version})"
    (base,) = re.findall(r"^FROM\s+(\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-[\w.-]+", base), base


def test_airflow_3_celery_settings(compose):
    port_ref = "${AIRFLOW_API_PORT:-8080}"
    for name in topology.SERVICES:
        env = compose["services"][name]["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == f"http://api-server:{port_ref}/execution/", name
        assert env["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://") and "@redis:6379/" in env["AIRFLOW__CELERY__BROKER_URL"]
        assert env["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql")
        for key in ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY", "PROOFFLOW_DB_URL"):
            assert key in env, (name, key)
        # the queues the DAGs route to are the ones the workers serve
        assert env["PROOFFLOW_CPU_QUEUE"] == "${PROOFFLOW_CPU_QUEUE:-cpu}"
        assert env["PROOFFLOW_GPU_QUEUE"] == "${PROOFFLOW_GPU_QUEUE:-gpu}"
    assert compose["services"]["api-server"]["ports"] == [f"${{AIRFLOW_API_BIND:-127.0.0.1}}:{port_ref}:{port_ref}"]


def test_no_secret_is_committed(compose):
    refs = [m for s in _strings(compose) for m in REF.finditer(s)]
    assert {m["name"] for m in refs} >= SECRETS
    for m in refs:
        if m["name"] in SECRETS:
            assert m["op"] == ":?", f"secret {m['name']} must be required, without a default: {m[0]}"
    # every value that holds a secret holds nothing but references to it (a URL's password part)
    for s in _strings(compose):
        named = REF.sub(lambda m: f"<{m['name']}>", s)
        for password in re.findall(r"://[^:/@]*:([^@/]*)@", named):
            assert password[1:-1] in SECRETS, s
    for name, svc in compose["services"].items():
        for key, value in (svc.get("environment") or {}).items():
            if re.search(r"PASSWORD|SECRET|FERNET|_AUTH$", key):
                assert REF.fullmatch(str(value)) and REF.fullmatch(value)["name"] in SECRETS, (name, key, value)
    example = _env_example()
    assert {k: example[k] for k in SECRETS} == dict.fromkeys(SECRETS, "")
    assert ".env" in (ROOT / ".gitignore").read_text().split()
    assert ".env" in (ROOT / ".dockerignore").read_text().split()


def test_env_example_documents_every_variable(compose):
    files = (compose, yaml.safe_load(MULTI_HOST.read_text()))
    used = {m["name"] for f in files for s in _strings(f) for m in REF.finditer(s)} | topology.variables()
    assert used == set(_env_example())


def test_topology_expands_like_compose():
    env = {"PROOFFLOW_GPU_WORKER_SLOTS": "8", "PROOFFLOW_GPU_QUEUE": ""}
    assert topology.command("worker-gpu", env) == ["airflow", "celery", "worker", "--queues", "gpu", "--concurrency",
                                                   "8", "--celery-hostname", "gpu@%h"]
    assert topology.expand("a${X}b", {"X": "1"}) == "a1b"
    with pytest.raises(KeyError, match="X is not set"):
        topology.expand("${X}", {})
    assert topology.expand("${X:?set X}", {"X": "2"}) == "2"
    with pytest.raises(KeyError, match="X is not set"):
        topology.expand("${X:?set X}", {"X": ""})
    with pytest.raises(KeyError, match="unknown service"):
        topology.command("flower", {})


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if standalone and subprocess.run([standalone, "version"], capture_output=True).returncode == 0:
        return [standalone]
    return None


def test_docker_compose_config_accepts_the_file(tmp_path):
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose client here")
    values = {**_env_example(), **{k: f"test-{k.lower()}" for k in SECRETS}, "PROOFFLOW_GPU_WORKER_SLOTS": "6"}

    def env_file(name: str, **extra: str) -> Path:
        path = tmp_path / name
        path.write_text("".join(f"{k}={v}\n" for k, v in {**values, **extra}.items()))
        return path

    clean = {k: v for k, v in os.environ.items() if k not in values}

    def config(env_path: Path, *files: Path):
        flags = [a for f in (ROOT / "docker-compose.yml", *files) for a in ("-f", str(f))]
        return subprocess.run(cli + ["--env-file", str(env_path), *flags, "--profile", "multi-host", "config",
                                     "--format", "json"], capture_output=True, text=True, env=clean, timeout=60)
    out = config(env_file("test.env"))
    assert out.returncode == 0, out.stderr
    rendered = json.loads(out.stdout)["services"]
    for name in topology.SERVICES:
        assert rendered[name]["command"] == topology.command(name, values), name
    assert "ports" not in rendered["staging-receiver"]
    # the override publishes the receiver only on the address it is given
    refused = config(env_file("multi.env", PROOFFLOW_STAGING_TOKEN="t"), MULTI_HOST)
    assert refused.returncode != 0 and "PROOFFLOW_STAGING_BIND" in refused.stderr
    out = config(env_file("multi.env", PROOFFLOW_STAGING_TOKEN="t", PROOFFLOW_STAGING_BIND="10.0.0.5"), MULTI_HOST)
    assert out.returncode == 0, out.stderr
    (port,) = json.loads(out.stdout)["services"]["staging-receiver"]["ports"]
    assert port["host_ip"] == "10.0.0.5" and str(port["published"]) == "7017"
    # without the secrets compose refuses the file, naming what to set
    empty = tmp_path / "empty.env"
    empty.write_text("")
    refused = config(empty)
    assert refused.returncode != 0 and "in .env" in refused.stderr


def test_monitoring_is_wired_end_to_end(compose):
    """Airflow's StatsD reaches statsd-exporter, Prometheus scrapes it and the GPU worker's
    prover service on the ports they listen on, Grafana's data sources are those services
    and the timing store as its read-only role, and the dashboard uses only those sources."""
    services = compose["services"]
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts {source}, which is not in the repository"
    exporter = dict(a.lstrip("-").split("=", 1) for a in services["statsd-exporter"]["command"])
    udp_port = exporter["statsd.listen-udp"].rsplit(":", 1)[1]
    web_port = exporter["web.listen-address"].rsplit(":", 1)[1]
    for name in topology.SERVICES:
        env = services[name]["environment"]
        assert (env["AIRFLOW__METRICS__STATSD_ON"], env["AIRFLOW__METRICS__STATSD_HOST"],
                env["AIRFLOW__METRICS__STATSD_PORT"]) == ("True", "statsd-exporter", udp_port), name
        assert "statsd" in services[name]["build"]["args"]["PROOFFLOW_EXTRAS"].split(","), name  # the StatsD client
    gpu_env = services["worker-gpu"]["environment"]
    assert gpu_env["PROOFFLOW_METRICS_ADDR"] == "0.0.0.0" and "ports" not in services["worker-gpu"]
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = {j["job_name"]: j["static_configs"][0]["targets"] for j in prometheus["scrape_configs"]}
    assert targets == {"proofflow": [f"worker-gpu:{gpu_env['PROOFFLOW_METRICS_PORT']}"],
                       "airflow": [f"statsd-exporter:{web_port}"]}
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]

    provisioning = ROOT / "deploy" / "grafana" / "provisioning"
    sources = {d["uid"]: d for d in yaml.safe_load((provisioning / "datasources" / "proofflow.yml").read_text())["datasources"]}
    assert sources["proofflow-prometheus"]["url"] == "http://prometheus:9090"
    timing = sources["proofflow-timing"]
    init_sql = (ROOT / "deploy" / "postgres-init.sql").read_text()
    reader_sh = (ROOT / "deploy" / "postgres-grafana.sh").read_text()
    assert f"CREATE DATABASE {timing['jsonData']['database']};" in init_sql
    assert f"CREATE ROLE {timing['user']} LOGIN PASSWORD :'pw';" in reader_sh
    assert timing["url"] == "postgres:5432" and timing["secureJsonData"]["password"] == "$GRAFANA_DB_PASSWORD"
    assert REF.fullmatch(services["grafana"]["environment"]["GRAFANA_DB_PASSWORD"])["name"] == "GRAFANA_DB_PASSWORD"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "proofflow.yml").read_text())["providers"]
    mounts = dict(v.split(":")[:2] for v in services["grafana"]["volumes"] if v.startswith("./"))
    assert mounts["./deploy/grafana/dashboards"] == provider["options"]["path"]
    board = json.loads((ROOT / "deploy" / "grafana" / "dashboards" / "proofflow.json").read_text())
    used = {t["datasource"]["uid"] for p in board["panels"] for t in p["targets"]} | \
        {v["datasource"]["uid"] for v in board["templating"]["list"]}
    assert used == set(sources)
    for p in board["panels"]:
        for t in p["targets"]:
            assert t["datasource"]["type"] == sources[t["datasource"]["uid"]]["type"], p["title"]
