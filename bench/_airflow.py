"""What the benchmarks that drive a real Airflow share (bench.pipeline, bench.scaling,
bench.stream): their options, the work dir and environment record, and one native
deployment (api-server, scheduler with LocalExecutor, dag-processor, through
``tests/helpers/local_stack.py``) set up for proofflow, its prover services stopped when it
is left."""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import _env
from tests.helpers import local_stack as stack
from tests.helpers.local_stack import ROOT

RESULTS = ROOT / "bench" / "results"


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_run_arguments(p: argparse.ArgumentParser, partitions: int = 16) -> None:
    """The options of proof runs through Airflow."""
    p.add_argument("--partitions", type=int, default=partitions)
    p.add_argument("--log2", type=int, default=8)
    p.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--staging", choices=("pinned", "pageable"), default="pinned")
    p.add_argument("--standin-s", type=float, default=None,
                   help="stretch each device phase to this many seconds (no GPU: e.g. 1.0)")
    p.add_argument("--depth", type=int, default=4, help="pool slots per device of the prover-service variants")
    p.add_argument("--params-cache", help="proving keys dir shared by the variants (PROOFFLOW_PARAMS_CACHE)")
    p.add_argument("--warmup", type=int, default=1, help="steady state: leave out the first K partitions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallelism", type=int, default=8, help="AIRFLOW__CORE__PARALLELISM")
    p.add_argument("--synth-concurrency", type=int, default=None, help="PROOFFLOW_SYNTH_CONCURRENCY")
    p.add_argument("--metadata-db", help="Airflow metadata DB URL (default: SQLite in each variant's home)")
    p.add_argument("--timing-db", help="timing store URL (default: SQLite in the work dir)")
    p.add_argument("--work", help="work dir (default: a temporary one)")
    p.add_argument("--scratch", help="scratch root (default: under each variant's home; /dev/shm is faster)")
    p.add_argument("--timeout", type=float, default=900, help="seconds a run may take")


def prepare(args) -> tuple[Path, str, dict]:
    """The work dir, the timing store URL and the environment record of an invocation."""
    if args.backend == "cpu" and not args.standin_s:
        say("note: no --standin-s: the CPU backend's own device phase is what gets measured")
    work = Path(args.work or tempfile.mkdtemp(prefix="proofflow-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    timing_url = args.timing_db or f"sqlite:///{work / 'timing.db'}"
    env = _env.environment(("numpy", "py-arkworks-bls12381", "apache-airflow-core", "cupy", "cupy-cuda12x",
                            "cupy-cuda13x"))
    env["device"] = device_name(args.backend)
    return work, timing_url, env


def device_name(backend: str) -> str:
    if backend != "gpu":
        return "cpu (stand-in GPU phase)"
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as exc:
        return f"unknown ({exc})"


@dataclass
class Deployment:
    base: str  # the REST API's base URL
    procs: stack.Processes
    runtime: Path  # the prover services' sockets
    env: dict  # every process's environment


@contextlib.contextmanager
def deployment(name: str, args, timing_url: str, work: Path, env: dict, slots: int, **airflow: str):
    """A fresh Airflow home ``work/name`` with proofflow set up (pool ``gpu`` of ``slots``,
    the timing store at ``timing_url``), its services running and ``proof_run`` parsed;
    ``env`` (PROOFFLOW_*) and ``airflow`` (AIRFLOW__*) on top of the options' settings.
    Leaving it stops the prover services, then Airflow."""
    from proofflow.prover.service.client import stop_all
    home = work / name
    runtime = Path(tempfile.mkdtemp(prefix="pf-rt-"))
    penv = {"PROOFFLOW_HOME": str(home / "proofflow"), "PROOFFLOW_DB_URL": timing_url,
            "PROOFFLOW_RUNTIME": str(runtime), "PROOFFLOW_RETRIES": "0", "PROOFFLOW_SERVICE_IDLE_S": "120", **env}
    if args.scratch:
        penv["PROOFFLOW_SCRATCH"] = str(Path(args.scratch) / name)
    if args.params_cache:  # one proving key for every variant
        penv["PROOFFLOW_PARAMS_CACHE"] = str(args.params_cache)
    if args.standin_s:
        penv["PROOFFLOW_STANDIN_GPU_S"] = str(args.standin_s)
    if args.synth_concurrency:
        penv["PROOFFLOW_SYNTH_CONCURRENCY"] = str(args.synth_concurrency)
    port = stack.free_port()
    airflow_env = stack.airflow_env(home / "airflow", args.metadata_db or f"sqlite:///{home / 'airflow.db'}", port,
                                    **{"AIRFLOW__CORE__PARALLELISM": str(args.parallelism), **airflow, **penv})
    t0 = time.time()
    home.mkdir(parents=True, exist_ok=True)
    say(f"[{name}] setup (pool gpu: {slots} slot(s))")
    stack.proofflow_setup(airflow_env, slots)
    try:
        with stack.running(airflow_env, home / "logs") as (base, procs):
            stack.wait("proof_run to be parsed", lambda: stack.api(base, "/api/v2/dags/proof_run")["is_paused"] is False,
                       240, 2, procs=procs)
            say(f"[{name}] started in {time.time() - t0:.0f} s")
            yield Deployment(base, procs, runtime, airflow_env)
    finally:
        stop_all(runtime)
