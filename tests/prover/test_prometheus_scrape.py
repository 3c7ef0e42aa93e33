"""Debian's real ``prometheus`` scrapes a running CPU prover service's metrics endpoint
(PROOFFLOW_METRICS_PORT) and its HTTP API gives the series back with the values of the
proofs sent: their count, their phases, the bytes their uploads copied, the failed job,
the resident key and the staging they hold. Prometheus runs on the deployment's own
configuration (deploy/prometheus/prometheus.yml, its proofflow target pointed at the service),
and every PromQL query of the Grafana dashboard (deploy/grafana/dashboards/proofflow.json)
returns series there. A slow case opens Prometheus's graph of the dashboard's "GPU busy" query
during a run's partitions in headless chromium (the README's docs/prometheus-busy.png, written
with PROOFFLOW_SCREENSHOTS=docs). Skips without the binary (.ci/run installs it where it can)."""
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from proofflow.phases import DEVICE_PHASES
from proofflow.prover.service.client import ServiceClient, ServiceError
from proofflow.prover.staging.shared import SharedStaging
from browser import CHROMEDRIVER, CHROMIUM, MISSING, chromium, shot
from service_inputs import job as _job
from service_inputs import partition as _partition
from service_inputs import verifies as _verifies

PROMETHEUS = shutil.which("prometheus")
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "proofflow.json"
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus is not installed (.ci/run installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def service(tmp_path, monkeypatch):
    """A CPU service (device 0) serving metrics on a port of its own."""
    port = _free_port()
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    monkeypatch.setenv("PROOFFLOW_METRICS_PORT", str(port))
    client = ServiceClient("cpu", 0, idle_s=60)
    client.ensure_running()
    yield client, port
    client.stop()


@pytest.fixture
def prometheus(tmp_path):
    """Start Debian's prometheus scraping ``target`` every second; returns its API's base URL."""
    procs = []

    def start(target: str) -> str:
        port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps(_deployment_config(target)))  # JSON is YAML
        log = open(tmp_path / "prometheus.log", "wb")
        procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log, stdin=subprocess.DEVNULL))
        log.close()
        return f"http://127.0.0.1:{port}"
    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _deployment_config(target: str) -> dict:
    """deploy/prometheus/prometheus.yml with its proofflow job scraping ``target`` every
    second; its airflow job (statsd-exporter, not run here) left out."""
    config = yaml.safe_load(CONFIG.read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "proofflow"]
    job["static_configs"] = [{"targets": [target]}]
    config["scrape_configs"] = [job]
    return config


def test_promtool_accepts_the_deployments_configuration():
    promtool = shutil.which("promtool")
    out = subprocess.run([promtool, "check", "config", str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    jobs = {j["job_name"]: j["static_configs"][0]["targets"] for j in yaml.safe_load(CONFIG.read_text())["scrape_configs"]}
    # compose's GPU worker serves device 0's metrics on 9400; statsd-exporter its translation on 9102
    assert jobs == {"proofflow": ["worker-gpu:9400"], "airflow": ["statsd-exporter:9102"]}


def _query(base: str, promql: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def _query_range(base: str, promql: str, start: float, end: float) -> list[dict]:
    """``promql``'s series at every second from ``start`` to ``end``."""
    url = f"{base}/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": promql, "start": start, "end": end, "step": 1})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def _value(base: str, promql: str) -> float:
    """The one series ``promql`` returns, which must be the cpu device's."""
    result = _query(base, promql)
    assert len(result) == 1, (promql, result)
    assert result[0]["metric"]["device"] == "cpu", result
    return float(result[0]["value"][1])


def _scraped(base: str, timeout: float = 20.0) -> None:
    """Wait until prometheus is up and has scraped the service once."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if [r for r in _query(base, 'up{job="proofflow"}') if r["value"][1] == "1"] and \
                    _query(base, "proofflow_jobs_total"):
                return
        except OSError:  # not listening yet
            pass
        time.sleep(0.25)
    pytest.fail(f"prometheus did not scrape the prover service within {timeout} s")


def test_prometheus_scrapes_the_services_series(service, prometheus, mimc8_key_dir):
    client, metrics_port = service
    replies, proofs = [], 3
    for i in range(proofs):
        d, n, public = _partition(i)
        replies.append(client.prove(_job(mimc8_key_dir, d, n)))
        assert _verifies(mimc8_key_dir, replies[-1], public)
    with pytest.raises(ServiceError, match="circuit's domain"):
        client.prove(_job(mimc8_key_dir, d, n // 2))
    staging = SharedStaging.from_settings().stats()  # the three partitions' segments are still leased
    assert staging["leased"] > 0

    base = prometheus(f"127.0.0.1:{metrics_port}")
    _scraped(base)

    assert _value(base, 'proofflow_jobs_total{outcome="done"}') == proofs
    assert _value(base, 'proofflow_jobs_total{outcome="failed",error_type="InputError"}') == 1
    for phase in ("h2d", "ntt", "msm", "mutex_wait", "assemble"):
        assert _value(base, f'proofflow_phase_seconds_count{{phase="{phase}"}}') == proofs, phase
    assert _value(base, 'proofflow_phase_seconds_count{phase="key_load"}') == 1  # the first proof loaded the key
    msm = sum(s.end - s.start for r in replies for s in r.spans if s.phase == "msm")
    assert _value(base, 'proofflow_phase_seconds_sum{phase="msm"}') == pytest.approx(msm, rel=1e-9)
    busy = sum(s.end - s.start for r in replies for s in r.spans if s.phase in DEVICE_PHASES)
    assert _value(base, "proofflow_device_busy_seconds_total") == pytest.approx(busy, rel=1e-9)
    # the CPU backend's copies come from pageable memory, and say so
    h2d = sum(t.nbytes for r in replies for t in r.transfers.values())
    assert h2d >= proofs * 3 * n * 32
    assert _value(base, 'proofflow_h2d_bytes_total{memory="pageable"}') == h2d
    assert _value(base, 'proofflow_h2d_bytes_total{memory="pinned"}') == 0  # present from the start, nothing pinned
    h2d_s = sum(t.ms for r in replies for t in r.transfers.values()) / 1e3
    assert _value(base, 'proofflow_h2d_seconds_total{memory="pageable"}') == pytest.approx(h2d_s, rel=1e-9)
    assert _value(base, "proofflow_resident_keys") == 1
    assert _value(base, "proofflow_resident_key_bytes") > 0
    assert _value(base, "proofflow_key_evictions_total") == 0
    assert _value(base, "proofflow_staging_leased_bytes") == staging["leased"]
    assert _value(base, "proofflow_staging_budget_bytes") == staging["budget"]
    assert _value(base, "proofflow_jobs_queued") == 0 and _value(base, "proofflow_jobs_running") == 0


def dashboard_promql() -> list[tuple[str, str]]:
    """(panel title, expr) of every Prometheus query of the dashboard."""
    board = json.loads(DASHBOARD.read_text())
    out = [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]
           if t["datasource"]["uid"] == "proofflow-prometheus"]
    out += [(v["name"], v["definition"]) for v in board["templating"]["list"]
            if v["datasource"]["uid"] == "proofflow-prometheus"]
    return out


def _as_grafana_sends(expr: str, rate_interval: str = "1m") -> str:
    """``expr`` with the dashboard's variables as Grafana fills them in: every device, and a
    rate window (by default one that spans the proofs sent: the scrapes before them and after)."""
    expr = expr.replace('"$device"', '".*"').replace("$__rate_interval", rate_interval)
    assert "$" not in expr, f"a variable this test does not fill in: {expr}"
    return expr


def _scraped_once(base: str, timeout: float = 20.0) -> None:
    """Wait until prometheus has scraped the (idle) service once."""
    deadline = time.time() + timeout
    while not [r for r in _safe_query(base, 'up{job="proofflow"}') if r["value"][1] == "1"]:
        assert time.time() < deadline, "prometheus did not scrape the prover service"
        time.sleep(0.25)


def test_every_dashboard_query_returns_series(service, prometheus, mimc8_key_dir):
    client, metrics_port = service
    base = prometheus(f"127.0.0.1:{metrics_port}")
    _scraped_once(base)
    time.sleep(1.5)  # a scrape before the proofs: rates span them
    for i in range(3):
        d, n, public = _partition(i)
        assert _verifies(mimc8_key_dir, client.prove(_job(mimc8_key_dir, d, n)), public)
    with pytest.raises(ServiceError):
        client.prove(_job(mimc8_key_dir, d, n // 2))
    deadline = time.time() + 20
    while [r["value"][1] for r in _safe_query(base, 'proofflow_jobs_total{outcome="done"}')] != ["3"]:
        assert time.time() < deadline, "prometheus did not scrape the proofs"
        time.sleep(0.25)
    time.sleep(2)  # a few samples after them

    queries = dashboard_promql()
    titles = {t for t, _ in queries}
    assert {"GPU busy", "Proofs a minute", "Phase breakdown", "H2D GB/s by host memory", "Queue depth",
            "Failed prove jobs", "device"} <= titles
    values = {}
    for title, expr in queries:
        if expr.startswith("label_values("):  # a variable's values: the label over the metric's series
            metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)", expr).groups()
            assert {r["metric"][label] for r in _query(base, metric)} == {"cpu"}, title
            continue
        result = _query(base, _as_grafana_sends(expr))
        assert result, f"{title}: {expr} returned no series"
        values.setdefault(title, []).extend(float(r["value"][1]) for r in result)
    # what the proofs did shows: the device was busy, proofs and phases have rates, copies a GB/s
    for title in ("GPU busy", "Proofs a minute", "Phase breakdown", "H2D GB/s by host memory", "Failed prove jobs"):
        assert all(v > 0 for v in values[title]), (title, values[title])
    assert 0 < max(values["GPU busy"]) <= 1


def _safe_query(base: str, promql: str) -> list[dict]:
    try:
        return _query(base, promql)
    except OSError:  # not listening yet
        return []


RUN_S = 18  # seconds of proofs: a plateau in the graph's 1 s samples
GRAPH_RANGE_S = 32  # the idle seconds before the run, the run and after it: all there is


@pytest.mark.slow
@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=MISSING)
def test_prometheus_graphs_the_device_busy_during_a_run(service, prometheus, mimc8_key_dir, tmp_path):
    """Prometheus's own graph page, in headless chromium, of the dashboard's "GPU busy" query
    while a run's partitions go through the service (the CPU backend here: device "cpu");
    PROOFFLOW_SCREENSHOTS=docs writes the README's docs/prometheus-busy.png."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    client, metrics_port = service
    base = prometheus(f"127.0.0.1:{metrics_port}")
    _scraped_once(base)
    time.sleep(6)  # the idle service's zeros before the run
    staging, start, proofs = SharedStaging.from_settings(), time.time(), 0
    while time.time() - start < RUN_S:  # partitions as proof_run's stage hands them over
        d, n, public = _partition(proofs, run="graph")
        assert _verifies(mimc8_key_dir, client.prove(_job(mimc8_key_dir, d, n)), public)
        staging.release(d)  # as finalize_partition does
        proofs += 1
    end = time.time()
    time.sleep(6)  # the scrapes of its last proofs, and the idle device after it

    (expr,) = [e for t, e in dashboard_promql() if t == "GPU busy"]
    expr = _as_grafana_sends(expr, rate_interval="5s")  # 5 scrapes: the graph follows the run closely
    # the API, second by second: the cpu device's one series, idle before the run, busy through it
    (series,) = _query_range(base, expr, start - 4, end)
    assert series["metric"]["device"] == "cpu", series
    idle = [float(v) for t, v in series["values"] if t < start - 1]
    busy = [float(v) for t, v in series["values"] if start + 6 <= t <= end]
    assert idle and all(v == 0 for v in idle), series["values"]
    assert len(busy) >= RUN_S - 8 and all(0.2 < v <= 1 for v in busy), (proofs, series["values"])

    with chromium(tmp_path, size="1280,1060") as driver:
        driver.get(f"{base}/graph?" + urllib.parse.urlencode({
            "g0.expr": expr, "g0.tab": "0", "g0.range_input": f"{GRAPH_RANGE_S}s", "g0.step_input": "1"}))
        # the classic UI's graph: its legend names the series, its line has a point a second
        label = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, ".legend .label"))
        assert 'device="cpu"' in label.text and 'job="proofflow"' in label.text, label.text
        line = driver.find_element(By.CSS_SELECTOR, ".graph_area svg path")
        assert line.get_attribute("d").count("L") >= RUN_S + 6, line.get_attribute("d")
        assert driver.find_element(By.NAME, "expr").get_attribute("value") == expr
        shot(driver, tmp_path, "prometheus-busy.png")
