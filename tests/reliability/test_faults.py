"""Faults, with nothing lost: SIGKILLs at random points of every task's phases across many
runs (and at every named fault point once), the prover service killed mid-job, the device
out of memory, the staging budget full, dead callers' jobs, the timing database going away
and coming back. After retries every run completes with all its proofs verifying, no proof
is lost or duplicated, the successful tries' timing rows are complete, and no scratch or
shared staging segment is left behind (a killed writer's lease is reclaimed)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import reliability_figures as figures
from proof_tasks import OPTIONAL_PHASES, PHASES, REUSED_PHASES, Runner, commit, task_order

LOG2 = 8
MAX_TRIES = 10
ALL_TASKS = ("validate", "setup", "prepare_scratch", "synthesize", "stage", "prove_gpu", "finalize_partition",
             "finalize_run", "cleanup_scratch")
# Every named fault point once (proofflow/prover/faults.py): each task's phases, its timing-row flush
# (before and after the write), the service's side, and half-written artifacts.
HOOK_POINTS = [
    "task.validate.validate", "task.setup.lock_wait", "task.setup.setup", "task.setup.save",
    "task.setup.load_cached", "task.prepare_scratch.prepare", "task.synthesize.synthesis",
    "task.synthesize.staging_wait", "task.synthesize.witness_map", "synthesize.segment", "task.stage.register",
    "client.sent", "service.prefetch", "service.device", "task.finalize_partition.verify",
    "task.finalize_partition.publish", "task.finalize_run.manifest", "task.finalize_run.verify",
    "task.finalize_run.summary", "task.finalize_run.cleanup", "task.cleanup_scratch.cleanup",
] + [f"task.{t}.{w}" for t in ALL_TASKS for w in ("flush", "flushed")]


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _service_pids(sock: Path) -> list[int]:
    """Live processes serving this socket (a killed one is gone, not lingering)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"proofflow.prover.service" in cmd and str(sock).encode() in cmd:
                pids.append(int(d.name))
    return pids


def _wait_gone(sock: Path) -> None:
    for _ in range(100):
        if not _service_pids(sock):
            return
        time.sleep(0.05)
    raise AssertionError(f"a killed prover service lingers: {_service_pids(sock)}")


def _check_run(store, run_id: str, partitions: int, summary: dict, scratch_root: Path, succeeded: set):
    """Everything a finished run must show, whatever was killed on the way. ``succeeded``:
    the (task, map index, try) attempts that exited 0."""
    from proofflow.prover import files, layout
    from proofflow.prover.bundle import read_manifest, verify_bundle
    bundle = Path(summary["bundle_dir"])
    results = verify_bundle(bundle)
    figures.count_proofs(partitions, results)
    assert summary["proofs_verified"] == partitions
    assert sorted(r.partition for r in results) == list(range(partitions)), "a proof was lost or duplicated"
    assert all(r.ok for r in results), [r for r in results if not r.ok]
    assert sorted(p.name for p in bundle.glob("*.proof")) == [f"partition-{i:04d}.proof" for i in range(partitions)]
    assert len(read_manifest(bundle)["partitions"]) == partitions
    assert files.stale_temporaries(bundle) == [], "a killed writer's temporary file was left in the bundle"
    assert not layout.run_dir("proof_run", run_id, scratch_root).exists(), "the run's scratch was left behind"
    from proofflow.prover.staging.shared import SharedStaging
    assert SharedStaging.from_settings().leases() == [], "a partition's shared segment was left leased"
    record = store.run("proof_run", run_id)
    assert record["state"] == "success" and record["proofs_verified"] == partitions

    rows = store.timings("proof_run", run_id)
    assert max(Counter((r["task_id"], r["map_index"], r["try_number"], r["phase"]) for r in rows).values()) == 1
    tries: dict = {}
    for r in rows:
        tries.setdefault((r["task_id"], r["map_index"], r["try_number"]), set()).add(r["phase"])
    moved = {(t["task_id"], t["map_index"], t["try_number"]) for t in store.transfers("proof_run", run_id)}
    for key in succeeded:  # the successful tries' rows are complete
        need, extra = PHASES[key[0]], OPTIONAL_PHASES.get(key[0], set())
        if "reused" in tries.get(key, set()):  # a retry after a try killed once its work was written
            need, extra = REUSED_PHASES[key[0]], {"queue_wait"}
        assert need <= tries.get(key, set()) <= need | extra, (key, tries.get(key))
    for key, phases in tries.items():
        # one transaction per try: its rows come with its task row and its transfers, or not at all
        assert "task" in phases, (key, phases)
        if "h2d" in phases or (key[0] == "partition.stage" and "register" in phases):
            assert key in moved, f"{key}: timing rows without their transfers"


@pytest.mark.reliability
def test_sigkill_at_random_points_of_every_phase(tmp_path, monkeypatch, soak):
    """Runs of proof_run's tasks, attempts killed at random delays (task processes, and the
    prover service during prove_gpu) and at every named fault point once, each failed try
    retried in a fresh process under the next try number."""
    from proofflow.timing import TimingStore
    from proofflow.prover.service.client import ServiceClient, ServiceUnavailable
    random_target = 500 if soak else 30  # every named point fires regardless; --soak for the long tail
    seed = int(os.environ.get("PROOFFLOW_FAULT_SEED", time.time_ns() % 100000))
    rng = random.Random(seed)
    print(f"fault seed {seed} (PROOFFLOW_FAULT_SEED reproduces the kill schedule)")
    markers = tmp_path / "markers"
    markers.mkdir()
    specs = [f"kill:{p}:{markers / p}" for p in HOOK_POINTS]
    specs.append(f"oom:service.device:{markers / 'oom'}")
    env = _env(tmp_path, monkeypatch, PROOFFLOW_SERVICE_IDLE_S="300")
    runner = Runner(tmp_path / "xcom", {**env, "PROOFFLOW_FAULT": ",".join(specs)})  # the tasks' (and services')
    store = TimingStore(env["PROOFFLOW_DB_URL"])
    service = ServiceClient("cpu", 0)
    estimate: dict[str, list[float]] = {}
    killed = Counter()  # by task (and "service")
    attempts = completed = proofs = 0
    samples = []  # (run, service pid, rss, staging) after each run
    run = 0
    try:
        while run < 4 or sum(killed.values()) < random_target or not all((markers / p).exists() for p in HOOK_POINTS):
            assert run < 30 + random_target // 2, f"injections not reached after {run} runs: {killed}"
            run_id, partitions = f"faults-{run}", 1 + run % 2
            conf = {"log2": LOG2, "partitions": partitions, "backend": "cpu", "staging": "pinned", "seed": run % 3}
            summary, succeeded = None, set()
            for task, mi in task_order(partitions):
                for try_number in range(1, MAX_TRIES + 1):
                    est = float(np.median(estimate[task])) if task in estimate else 0.5
                    kill_task = kill_service = None
                    if try_number <= 2 and rng.random() < 0.6:
                        delay = rng.uniform(0.0, 1.2 * est)
                        if task == "partition.prove_gpu" and rng.random() < 0.2:
                            kill_service = delay
                        else:
                            kill_task = delay
                    timer = []

                    def on_start(proc, delay=kill_service):
                        if delay is None:
                            return

                        def fire():
                            try:
                                pid = service.status(timeout=1)["pid"]
                            except Exception:  # no service yet: nothing to kill
                                return
                            if proc.is_alive():
                                os.kill(pid, signal.SIGKILL)
                                killed["service"] += 1
                        timer.append(threading.Timer(delay, fire))
                        timer[0].start()
                    a = runner.attempt(run_id, task, mi, try_number, conf if task == "validate" else None,
                                       kill_after=kill_task, on_start=on_start)
                    for t in timer:
                        t.join()
                    attempts += 1
                    if a.killed:
                        killed[task] += 1
                    if a.exitcode == 0:
                        succeeded.add((task, mi, try_number))
                        estimate.setdefault(task, []).append(a.seconds)
                        out = commit(runner.state, run_id, task, mi, try_number)
                        if task == "finalize_run":
                            summary = out
                        break
                    assert a.exitcode == -signal.SIGKILL or a.error, a
                    if a.error:  # a failure says why; the only ones expected: the service killed or out of memory
                        assert "prover service" in a.error, a.error
                else:
                    pytest.fail(f"{run_id} {task}[{mi}] failed {MAX_TRIES} times")
            _check_run(store, run_id, partitions, summary, tmp_path / "scratch", succeeded)
            completed, proofs, run = completed + 1, proofs + partitions, run + 1
            try:
                st = service.status()
            except ServiceUnavailable:  # killed by the schedule after its last reply: gone, not lingering
                _wait_gone(service.path)
                continue
            assert st["queued"] == 0 and st["active"] == 1, json.dumps(st)  # only this request
            samples.append((run, st["pid"], st["rss_bytes"], st["segments"]["pinned"]["mapped_bytes"]))
        service.ensure_running()
        st = service.status()
    finally:
        service.stop()

    fired = sorted(p.name for p in markers.iterdir())
    assert {"synthesize.segment", "oom"} <= set(fired)
    from proofflow.prover.staging.shared import SharedStaging
    staging = SharedStaging.from_settings().stats()
    assert staging["leases"] == 0 and staging["leased"] == 0 and staging["idle"] <= staging["budget"], staging
    assert [p for p in (tmp_path / "params").glob(".*") if p.is_dir()] == [], \
        "a setup killed mid-save left its temporary key directory"
    assert not any((tmp_path / "scratch").rglob("*")), "scratch left behind"
    incarnations: dict = {}
    for x in samples:
        incarnations.setdefault(x[1], []).append(x)
    last = max(incarnations.values(), key=len)  # the longest-lived service (the schedule kills some)
    growth = last[-1][2] - last[0][2]
    random_kills = sum(killed.values())
    hook_kills = len(fired)
    print(f"fault injection: {run} runs completed, {attempts} attempts, {random_kills} random SIGKILLs "
          f"({dict(killed)}), {hook_kills} fault points fired; all {proofs} proofs verify, once each; service RSS "
          f"{last[0][2] / 2**20:.1f} -> {last[-1][2] / 2**20:.1f} MiB over the {len(last)} runs of its longest-lived "
          "incarnation, no shared segment left leased")
    figures.add("faults injected: SIGKILL at random points (tasks, service)", random_kills)
    figures.add("faults injected: fault points fired once each (kill, oom)", hook_kills)
    figures.add("runs completed: fault-injection harness", completed)
    figures.put("fault harness: service RSS first/last MiB (longest-lived incarnation)",
                [round(last[0][2] / 2**20, 1), round(last[-1][2] / 2**20, 1)])
    figures.put("fault harness: shared segments leased after every run", 0)
    assert growth < 64 << 20, f"the service's RSS grew by {growth / 2**20:.1f} MiB over {len(last)} runs"


def _env(tmp_path, monkeypatch, **extra) -> dict:
    env = {"PROOFFLOW_HOME": str(tmp_path / "home"), "PROOFFLOW_DB_URL": f"sqlite:///{tmp_path / 'timing.db'}",
           "PROOFFLOW_SCRATCH": str(tmp_path / "scratch"), "PROOFFLOW_PARAMS_CACHE": str(tmp_path / "params"),
           "PROOFFLOW_BUNDLES": str(tmp_path / "bundles"), "PROOFFLOW_RUNTIME": str(tmp_path / "rt"),
           "PROOFFLOW_SERVICE_IDLE_S": "120", **extra}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def _tasks(runner, run_id, conf, tasks):
    for task, mi in tasks:
        a = runner.attempt(run_id, task, mi, 1, conf if task == "validate" else None)
        assert a.exitcode == 0, a
        commit(runner.state, run_id, task, mi, 1)


@pytest.mark.reliability
def test_service_killed_mid_job_the_retry_starts_a_new_one(tmp_path, monkeypatch):
    from proofflow.timing import TimingStore
    from proofflow.prover.service.client import ServiceClient
    env = _env(tmp_path, monkeypatch, PROOFFLOW_STANDIN_GPU_S="1.5")  # a device phase long enough to kill in
    runner, service = Runner(tmp_path / "xcom", env), ServiceClient("cpu", 0)
    conf = {"log2": LOG2, "partitions": 1, "backend": "cpu", "seed": 4}
    order = task_order(1)
    _tasks(runner, "svc-kill", conf, order[:5])  # up to stage
    victim = []

    def kill_when_busy(proc):
        def watch():
            while proc.is_alive():
                try:
                    st = service.status(timeout=1)
                except Exception:
                    time.sleep(0.02)
                    continue
                if st["busy"]:
                    os.kill(st["pid"], signal.SIGKILL)
                    victim.append(st["pid"])
                    return
                time.sleep(0.02)
        threading.Thread(target=watch, daemon=True).start()
    first = runner.attempt("svc-kill", "partition.prove_gpu", 0, 1, on_start=kill_when_busy)
    assert victim, "the service was never seen on the device"
    assert first.exitcode == 1 and "prover service" in first.error and "closed the connection" in first.error, first
    _wait_gone(service.path)  # the kernel reaps it: nothing of it lingers
    retry = runner.attempt("svc-kill", "partition.prove_gpu", 0, 2)
    assert retry.exitcode == 0, retry
    commit(runner.state, "svc-kill", "partition.prove_gpu", 0, 2)
    st = service.status()
    assert st["pid"] != victim[0] and st["jobs_done"] == 1 and st["queued"] == 0
    _tasks(runner, "svc-kill", conf, order[6:])
    store = TimingStore(env["PROOFFLOW_DB_URL"])
    rows = store.timings("proof_run", "svc-kill", "partition.prove_gpu")
    by_try = {t: {r["phase"] for r in rows if r["try_number"] == t} for t in (1, 2)}
    assert by_try[1] == {"task", "pool_wait"} | ({"service_start"} & by_try[1])  # the failed try: its task row
    assert "service_start" in by_try[2] and PHASES["partition.prove_gpu"] <= by_try[2]
    summary = json.loads((runner.state / "svc-kill" / "finalize_run.-1.json").read_text())
    _check_run(store, "svc-kill", 1, summary, tmp_path / "scratch",
               {(t, mi, 2 if t == "partition.prove_gpu" else 1) for t, mi in order})
    service.stop()
    figures.add("faults injected: prover service killed mid-job (dedicated test)")


# --- the prover service: out of memory, a full staging budget, dead callers ---------------
@pytest.fixture
def service_env(tmp_path, monkeypatch):
    """A fresh runtime dir: each test's services are its own, stopped at its end."""
    from proofflow.prover.service.client import stop_all
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(tmp_path / "rt"))
    yield monkeypatch
    stop_all(tmp_path / "rt")


@pytest.mark.reliability
@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_out_of_memory_fails_one_job_frees_the_pools_and_the_retry_succeeds(backend, mimc8_key_dir, tmp_path, service_env):
    """The device thread raises the backend's out-of-memory exception (CuPy's
    OutOfMemoryError on a GPU, its stand-in on the CPU) at the injection point: that job
    fails clearly, the service gives back its cached device memory, and the next job
    proves (its key tables uploaded again)."""
    from proofflow.prover.device import available as gpu_available
    from proofflow.prover.service.client import ServiceClient, ServiceError
    from service_inputs import job, partition, verifies
    if backend == "gpu" and not gpu_available():
        pytest.skip("no GPU")
    marker = tmp_path / "oom-fired"
    marker.touch()  # armed below, once a key is resident
    service_env.setenv("PROOFFLOW_FAULT", f"oom:service.device:{marker}")
    client = ServiceClient(backend, 0)
    client.ensure_running()
    d, n, public = partition(0)
    assert verifies(mimc8_key_dir, client.prove(job(mimc8_key_dir, d, n)), public)
    before = client.status()
    marker.unlink()
    with pytest.raises(ServiceError) as err:
        client.prove(job(mimc8_key_dir, d, n))
    assert err.value.error_type == "MemoryError"
    assert f"out of memory on {before['device']}" in str(err.value) and "a retry can succeed" in str(err.value)
    after = client.status()
    assert after["recoveries"] == 1 and "OutOfMemory" in after["last_error"] and after["queued"] == 0
    if backend == "gpu":
        assert after["device_pool_bytes"] < before["device_pool_bytes"]
    retry = client.prove(job(mimc8_key_dir, d, n))
    assert verifies(mimc8_key_dir, retry, public)
    assert "key_upload" in {s.phase for s in retry.spans}, "the key's device tables were given back"
    assert client.status()["jobs_done"] == 2
    figures.add("faults injected: device out of memory (dedicated test)")


@pytest.mark.reliability
def test_a_full_staging_budget_makes_synthesis_wait_then_fail_clearly(tmp_path, monkeypatch):
    """Shared staging holds one partition: a second synthesis waits its timeout for room that
    never comes and fails naming the bytes; once the first segment is released (its proof
    out) the retry fits in it; a partition that can never fit is an input error at once."""
    from proofflow.prover import pipeline
    from proofflow.prover.staging.shared import SharedStaging
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.staging.shared import _capacity, segment_bytes
    from proofflow.prover.staging.pool import StagingTimeout
    circuit = get_circuit("mimc", LOG2)
    budget = _capacity(segment_bytes(circuit.domain_size, circuit.constraint_system.num_variables))
    monkeypatch.setenv("PROOFFLOW_STAGING_BUDGET", str(budget))
    staging = SharedStaging.from_settings()
    first = pipeline.synthesize_shared(circuit, 0, 0, staging, "d/r/p0000")
    t0 = time.monotonic()
    with pytest.raises(StagingTimeout, match=f"within 1.0 s: {budget} of {budget} bytes leased"):
        pipeline.synthesize_shared(circuit, 0, 1, staging, "d/r/p0001", timeout=1.0)
    assert time.monotonic() - t0 >= 1.0
    assert [lease.owner for lease in staging.leases()] == ["d/r/p0000"], "the failed one left nothing leased"
    staging.release(first["segment"])
    second = pipeline.synthesize_shared(circuit, 0, 1, staging, "d/r/p0001", timeout=1.0)
    assert staging.stats()["leased"] == budget and second["segment"] != first["segment"]
    monkeypatch.setenv("PROOFFLOW_STAGING_BUDGET", str(budget // 2))
    with pytest.raises(pipeline.InputError, match="can never fit the staging budget"):
        pipeline.synthesize_shared(circuit, 0, 2, SharedStaging.from_settings(), "d/r/p0002", timeout=1.0)
    figures.add("faults injected: staging budget full (dedicated test)", 2)


_DEAD_CALLER = ("import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                "s.sendall(sys.argv[2].encode() + b'\\n'); s.recv(1)")


@pytest.mark.reliability
def test_dead_callers_jobs_are_dropped(mimc8_key_dir, tmp_path, service_env):
    """Callers SIGKILLed while their jobs wait (mapped, queued behind a long device phase):
    the service drops their jobs before the device and lets go of their segments."""
    from proofflow.prover.service.client import ServiceClient
    from service_inputs import job, partition, verifies
    d, n, public = partition(0)
    client = ServiceClient("cpu", 0)
    client.ensure_running()
    holder = {}
    t = threading.Thread(target=lambda: holder.update(reply=client.prove(job(mimc8_key_dir, d, n, standin_s=2))))
    t.start()
    for _ in range(300):  # the first job on the device before the others come
        if client.status()["busy"]:
            break
        time.sleep(0.02)
    callers = [subprocess.Popen([sys.executable, "-c", _DEAD_CALLER, str(client.path), json.dumps(
        {"op": "prove", "job": job(mimc8_key_dir, d, n).to_wire()})]) for _ in range(2)]
    for _ in range(300):
        st = client.status()
        if st["queued"] == 2:
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the callers' jobs never queued: {st}")
    for c in callers:
        c.send_signal(signal.SIGKILL)
        c.wait()
    t.join(60)
    assert verifies(mimc8_key_dir, holder["reply"], public)
    for _ in range(200):
        st = client.status()
        if st["active"] == 1:
            break
        time.sleep(0.02)
    assert st["jobs_cancelled"] == 2 and st["jobs_done"] == 1 and st["jobs_failed"] == 0, json.dumps(st)
    assert st["queued"] == 0
    assert verifies(mimc8_key_dir, client.prove(job(mimc8_key_dir, d, n)), public)
    figures.add("faults injected: callers killed with jobs queued (dedicated test)", 2)


@pytest.mark.reliability
def test_two_services_started_at_once_for_one_socket_leave_one(tmp_path, service_env):
    """Callers killed while starting the service can leave two starts racing: one service
    holds the socket, the other exits at once (before any warm-up), none is left unreachable."""
    from proofflow.prover.service.client import ServiceClient
    client = ServiceClient("cpu", 0)
    client.path.parent.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, "-m", "proofflow.prover.service", "--socket", str(client.path), "--backend", "cpu",
                               "--idle-timeout", "60"], stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for _ in range(600):
        if sum(p.poll() is not None for p in procs) == 2:
            break
        time.sleep(0.05)
    exited = [p for p in procs if p.poll() is not None]
    assert len(exited) == 2 and all(p.returncode == 3 for p in exited)
    assert all("a prover service already runs for" in p.stderr.read() for p in exited)
    (alive,) = [p for p in procs if p.poll() is None]
    for _ in range(600):
        try:
            assert client.status()["pid"] == alive.pid
            break
        except Exception:
            time.sleep(0.05)
    assert _service_pids(client.path) == [alive.pid]
    client.stop()
    assert alive.wait(30) == 0


# --- the timing database going away ------------------------------------------------------------
def _timing_row(run_id, phase, **kw):
    t = time.time()
    return dict(run_id=run_id, dag_id="proof_run", task_id="partition.stage", map_index=0, try_number=1,
                partition=0, phase=phase, host="h", device="cpu", start=t, end=t + 0.1, **kw)


@pytest.mark.reliability
def test_the_timing_store_rides_out_a_database_restart(isolated_pg, monkeypatch):
    """On a Postgres of the test's own: writes during a short outage wait and land once it
    is back (once each); an outage longer than PROOFFLOW_DB_RETRY_S fails with a clear
    message that names the database without its password, and writes nothing."""
    import uuid
    from proofflow.timing import TimingStore
    from proofflow.timing.store import StoreUnavailable
    url = isolated_pg.new_database(f"outage_{uuid.uuid4().hex[:8]}")
    store = TimingStore(url)
    store.record_timings([_timing_row("r", "read")])
    isolated_pg.stop()
    back = threading.Timer(2.0, isolated_pg.start)
    back.start()
    try:
        store.record_attempt([_timing_row("r", "stage"), _timing_row("r", "task")],
                             [dict(dag_id="proof_run", run_id="r", task_id="partition.stage", map_index=0, partition=0,
                                   try_number=1, direction="h2s", bytes=1000, memory_kind="pageable", duration_s=0.01)])
    finally:
        back.join()
    assert sorted(r["phase"] for r in store.timings("proof_run", "r")) == ["read", "stage", "task"]
    assert len(store.transfers("proof_run", "r")) == 1

    monkeypatch.setenv("PROOFFLOW_DB_RETRY_S", "1")
    isolated_pg.stop()
    try:
        with pytest.raises(StoreUnavailable, match="unreachable for 1 s") as err:
            store.record_timings([_timing_row("r2", "read")])
        assert isolated_pg.password not in str(err.value) and f":{isolated_pg.port}/" in str(err.value)
    finally:
        isolated_pg.start()
    assert store.timings("proof_run", "r2") == []
    figures.add("faults injected: timing database stopped and restarted (store test)", 2)
