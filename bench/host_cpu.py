"""Host CPU a partition costs through a real Airflow: CPU seconds by process, per partition
and per task, for a fixed batch of proof runs.

    python -m bench.host_cpu [--runs 6] [--partitions 4] [--log2 10] [--standin-s 0.05]
                             [--repeats 3] [--variants bytecode,nopreload,source] [--label cpu]
                             [--out bench/results/host-cpu-<label>.json]

Why: the GPU's feeding is host work. Each partition is four Airflow tasks (a run adds seven),
each a new process that parses the DAG file, imports what it runs and talks to the API
server, and the API server and the scheduler work for every one of them. At 2^22 on the H200
the device phase is ~0.3 s, ~200 partitions a minute to feed from 16 cores, so what a
partition costs in CPU bounds the sustained rate as surely as synthesis does.

One deployment per variant (bench.pipeline's: api-server, scheduler with LocalExecutor,
dag-processor, the prover service), a warm-up run (the key, the service, the first parse),
then --repeats batches of --runs runs triggered at once, each batch measured alone: the CPU
time of every process of the deployment (found by its PROOFFLOW_RUNTIME) from /proc, its own
and what it reaped from exited children (a LocalExecutor worker reaps its tasks' supervisors,
which reap the task processes), between the trigger and the last run's end.

Variants (what the baselines are): ``bytecode``, the deployment as ``proofflow setup`` leaves
it; ``nopreload``, the same with PROOFFLOW_PRELOAD=0 (the scheduler does not import the
tasks' modules before forking them, proofflow/airflow/preload.py); ``source``, the same
under PYTHONDONTWRITEBYTECODE with an empty PYTHONPYCACHEPREFIX, so that only what setup
compiled (proofflow and the DAGs) has bytecode and Airflow's and the libraries' modules
compile in every process that imports them: a host whose wheels went in with --no-compile
(the H200 scripts) and that writes no bytecode.

Categories: ``tasks`` (the LocalExecutor workers, their supervisors and task processes),
``api-server``, ``scheduler``, ``dag-processor``, ``prover service``, ``other``. The API
server's requests in a batch are counted by route from its access log (the benchmark itself
asks for one list of runs a second). Results: JSON with the hardware, versions,
configuration and every batch, medians per variant.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from bench import _env
from bench._airflow import RESULTS, add_run_arguments, deployment, prepare, say
from tests.helpers import local_stack as stack

DAG = "proof_run"
RUN_TASKS = 7  # validate, setup, prepare_scratch, finalize_run, check_h2d, cleanup_scratch, publish_summary
PARTITION_TASKS = 4  # synthesize, stage, prove_gpu, finalize_partition
CLK_TCK = os.sysconf("SC_CLK_TCK")
VARIANTS = ("bytecode", "nopreload", "source")


def category(cmdline: str) -> str:
    for key, name in (("LocalExecutor", "tasks"), ("airflow worker", "tasks"), ("api_server", "api-server"),
                      ("api-server", "api-server"), ("scheduler", "scheduler"), ("dag-processor", "dag-processor"),
                      ("prover.service", "prover service")):
        if key in cmdline:
            return name
    return "other"


def snapshot(sessions: set[int], runtime: Path) -> dict[str, dict]:
    """CPU seconds of every live process of the deployment, by ``pid:start``: its own (user +
    system) and its reaped children's. The deployment's processes are those of its services'
    sessions (``sessions``: each service starts one; its workers and their tasks stay in it)
    and those whose environment names ``runtime`` (the prover service, which a task starts
    in a session of its own; the others may have overwritten their environment with their
    process title). A process whose command line names no category takes its parent's: the
    API server's workers are spawned children (``multiprocessing.spawn``) that do not name it."""
    marker = f"PROOFFLOW_RUNTIME={runtime}".encode()
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            if int(fields[3]) not in sessions and marker not in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                continue
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
        # after the ")" that ends the command name: the parent is field 1, the session field 3, utime, stime,
        # cutime and cstime are fields 11-14 and the start time is field 19 (0-based)
        own = (int(fields[11]) + int(fields[12])) / CLK_TCK
        reaped = (int(fields[13]) + int(fields[14])) / CLK_TCK
        out[f"{pid}:{fields[19]}"] = {"category": category(cmd), "own_s": own, "reaped_s": reaped,
                                      "pid": int(pid), "ppid": int(fields[1])}
    return inherit_categories(out)


def inherit_categories(procs: dict[str, dict]) -> dict[str, dict]:
    """Give each ``other`` process the category of its nearest categorized ancestor in ``procs``."""
    by_pid = {p["pid"]: p for p in procs.values()}
    for p in procs.values():
        q, seen = p, set()
        while q["category"] == "other" and q["ppid"] in by_pid and q["ppid"] not in seen:
            seen.add(q["ppid"])
            q = by_pid[q["ppid"]]
        p["category"] = q["category"]
    return procs


def cpu_by_category(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds spent between two snapshots, by category: each process's growth (a process
    born in between counts from zero). A process that ended in between is counted by whoever
    reaped it, when that one is still alive."""
    out: dict[str, float] = {}
    for key, p in after.items():
        b = before.get(key, {"own_s": 0.0, "reaped_s": 0.0})
        out[p["category"]] = out.get(p["category"], 0.0) + (p["own_s"] - b["own_s"]) + (p["reaped_s"] - b["reaped_s"])
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ACCESS = re.compile(r"^(\S+) .*request finished.* duration_us=(\d+) .*method=(\w+) path=(\S+)")


def route(method: str, path: str) -> str:
    """A request's route: ids, run ids and XCom keys left out, so requests of every task count
    together."""
    path = _ID.sub("ID", path)
    path = re.sub(r"/dagRuns/[^/]+", "/dagRuns/RUN", path)
    path = re.sub(r"^(/execution/xcoms)/.*", r"\1/...", path)
    path = re.sub(r"^(/execution/(variables|connections))/.*", r"\1/NAME", path)
    return f"{method} {path}"


def api_requests(log: Path, t0: float, t1: float) -> dict[str, dict]:
    """The API server's requests that finished between t0 and t1, from its access log: by
    route, how many and their summed latency (the server's own work is part of it)."""
    out: dict[str, dict] = {}
    for line in log.read_text(errors="replace").splitlines() if log.exists() else ():
        m = _ACCESS.match(line)
        if not m:
            continue
        when = dt.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        if t0 <= when <= t1:
            r = out.setdefault(route(m.group(3), m.group(4)), {"n": 0, "latency_s": 0.0})
            r["n"] += 1
            r["latency_s"] += int(m.group(2)) / 1e6
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["latency_s"]))


def batch(dep, conf: dict, runs: int, timeout: float, api_log: Path) -> dict:
    sessions = {p.pid for p in dep.procs.procs.values()}
    before = snapshot(sessions, dep.runtime)
    t0 = time.time()
    ids = {stack.trigger(dep.base, DAG, conf) for _ in range(runs)}
    # one request a second while they run, so that the API server's CPU is the runs' own
    while ids & {d["dag_run_id"] for d in stack.api(
            dep.base, f"/api/v2/dags/{DAG}/dagRuns?state=queued&state=running&limit=1000")["dag_runs"]}:
        if time.time() - t0 > timeout:
            raise TimeoutError(f"runs unfinished after {timeout:.0f} s")
        time.sleep(1.0)
    t1 = time.time()
    cpu = cpu_by_category(before, snapshot(sessions, dep.runtime))
    states = [stack.api(dep.base, f"/api/v2/dags/{DAG}/dagRuns/{r}")["state"] for r in ids]
    parts = runs * conf["partitions"]
    tasks = runs * (RUN_TASKS + PARTITION_TASKS * conf["partitions"])
    total = sum(cpu.values())
    return {"wall_s": t1 - t0, "runs": runs, "succeeded": states.count("success"),
            "partitions": parts, "tasks": tasks, "cpu_s": cpu, "cpu_total_s": total,
            "cpu_per_partition_s": total / parts, "task_cpu_per_task_s": cpu.get("tasks", 0.0) / tasks,
            "api_requests": api_requests(api_log, t0, t1)}


def summarize(batches: list[dict]) -> dict:
    med = statistics.median
    cats = sorted({c for b in batches for c in b["cpu_s"]})
    return {"batches": len(batches), "cpu_per_partition_s": med(b["cpu_per_partition_s"] for b in batches),
            "task_cpu_per_task_s": med(b["task_cpu_per_task_s"] for b in batches),
            "wall_s": med(b["wall_s"] for b in batches),
            "cpu_per_partition_by_category_s": {c: med(b["cpu_s"].get(c, 0.0) / b["partitions"] for b in batches)
                                                for c in cats},
            "api_requests_per_partition": {r: med(b["api_requests"].get(r, {"n": 0})["n"] / b["partitions"]
                                                  for b in batches)
                                           for r in sorted({r for b in batches for r in b["api_requests"]})}}


def variant_env(name: str, work: Path) -> dict:
    if name == "bytecode":
        return {}
    if name == "nopreload":
        return {"PROOFFLOW_PRELOAD": "0"}
    prefix = Path(tempfile.mkdtemp(prefix="pycache-", dir=work))  # source: an empty bytecode cache
    return {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.host_cpu", description=__doc__.split("\n\n")[0])
    add_run_arguments(p, partitions=4)
    p.set_defaults(log2=10, standin_s=0.05)
    p.add_argument("--runs", type=int, default=6, help="runs triggered at once, a batch")
    p.add_argument("--repeats", type=int, default=3, help="batches measured per variant")
    p.add_argument("--variants", default="bytecode,nopreload",
                   help=f"comma-separated, of {', '.join(VARIANTS)} (default bytecode,nopreload)")
    p.add_argument("--label", default="cpu")
    p.add_argument("--out")
    args = p.parse_args(argv)
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        p.error(f"--variants: {', '.join(unknown)} unknown; choose from {', '.join(VARIANTS)}")
    work, timing_url, env = prepare(args)
    out = Path(args.out) if args.out else RESULTS / f"host-cpu-{args.label}.json"
    conf = {"log2": args.log2, "partitions": args.partitions, "backend": args.backend, "staging": args.staging,
            "seed": args.seed}
    doc = {"environment": env, "config": {**conf, "runs": args.runs, "repeats": args.repeats,
                                          "standin_s": args.standin_s, "parallelism": args.parallelism},
           "variants": {}}
    for name in variants:
        extra = {"PROOFFLOW_MAX_ACTIVE_RUNS": str(args.runs), **variant_env(name, work)}
        with deployment(name, args, timing_url, work, extra, args.depth) as dep:
            say(f"[{name}] warm-up run")
            api_log = work / name / "logs" / "api-server.log"
            batch(dep, conf, 1, args.timeout, api_log)
            batches = []
            for i in range(args.repeats):
                b = batch(dep, conf, args.runs, args.timeout, api_log)
                say(f"[{name}] batch {i + 1}/{args.repeats}: {b['succeeded']}/{b['runs']} runs in {b['wall_s']:.1f} s, "
                    f"{b['cpu_per_partition_s']:.2f} CPU-s a partition, {b['task_cpu_per_task_s']:.3f} a task")
                batches.append(b)
        doc["variants"][name] = {"env": {k: v for k, v in extra.items() if k.startswith(("PYTHON", "PROOFFLOW_PRELOAD"))},
                                 "summary": summarize(batches), "batches": batches}
    for base in ("source", "nopreload"):  # each baseline against the deployment as set up, same run
        if "bytecode" in doc["variants"] and base in doc["variants"]:
            s, b = doc["variants"][base]["summary"], doc["variants"]["bytecode"]["summary"]
            doc[f"{base}_over_bytecode"] = {"cpu_per_partition": s["cpu_per_partition_s"] / b["cpu_per_partition_s"],
                                            "task_cpu_per_task": s["task_cpu_per_task_s"] / b["task_cpu_per_task_s"]}
    _env.write(out, doc)
    print(f"{'variant':10s} {'CPU-s/partition':>16s} {'task CPU-s/task':>16s}  by category (CPU-s a partition)")
    for name, v in doc["variants"].items():
        s = v["summary"]
        cats = ", ".join(f"{c} {x:.2f}" for c, x in s["cpu_per_partition_by_category_s"].items())
        print(f"{name:10s} {s['cpu_per_partition_s']:16.2f} {s['task_cpu_per_task_s']:16.3f}  {cats}")
    print(f"({out})")
    return 0 if all(b["succeeded"] == b["runs"] for v in doc["variants"].values() for b in v["batches"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
