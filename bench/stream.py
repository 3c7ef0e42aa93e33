"""Sustained-load benchmark: minutes of continuous proving through the real Airflow stack.

    python -m bench.stream [--duration 180] [--warmup-s 60 | --warmup K] [--in-flight 3]
                           [--partitions 8] [--log2 10] [--backend cpu --standin-s 1.0]
                           [--label cpu] [--out bench/results/stream-<label>.json]
    python -m bench.stream --circuit NAME --inputs DIR [--home DIR] [--snarkjs-sample 8] ...
    python -m bench.stream --reanalyze --out RESULTS.json   # its figures again, from its timing DB

One native Airflow (api-server, scheduler with LocalExecutor, dag-processor; as
bench.pipeline) proves for --duration seconds without a pause: whenever fewer than
--in-flight ``proof_run``s' worth of partitions are left to prove, a new run of
--partitions partitions is triggered through the REST API. A run counts by the share of its
partitions not proved yet (its prove_gpu tasks not succeeded), so the next run is triggered
while the last ones are proved, early enough to have synthesized partitions ready when the
device gets to them; a run with all its partitions proved no longer counts: what it has
left (the bundle's verification, check_h2d, cleanup, the summary) needs no device, and work
waiting to be proved would not wait for it. Up to --max-active runs (2 x in flight + 1) are
active at once, the DAG's PROOFFLOW_MAX_ACTIVE_RUNS. (--count active counts every unfinished
run in full, as a client submitting a run each time one ends would: runs then start and end
in lockstep, and the device idles while they all finish and the next ones synthesize.)
Then feeding stops and the runs in flight finish. With several --log2 sizes the streams run
back to back in the same deployment (its prover service keeps each size's key resident,
within PROOFFLOW_KEY_BUDGET).

--circuit names what the runs prove: the built-in mimc (default) at the --log2 sizes, or a
circom circuit registered in the deployment's PROOFFLOW_HOME (--home; default WORK/stream/
proofflow; ``proofflow circuit add``, or bench.circom_prep), at its own size. A circom run's
conf names the circuit and its inputs, --partitions input files of --inputs DIR (input.json,
or .wtns) taken in turn, cycling through the directory, so consecutive runs prove different
inputs; the files are used where they lie inside the deployment's input roots, else linked
there as ``proofflow run --inputs`` does. Each partition's synthesize task then generates
its witness (the circuit's wasm, or its C++ generator) before a/b/c. Its bundles hold
snarkjs's files: after the stream, --snarkjs-sample proofs spread over the runs are verified
by ``snarkjs groth16 verify`` (--snarkjs; skipped, with the reason in the results, where
snarkjs or node is missing).

Why runs triggered through the REST API rather than proof_batch fed with pending files:
a stream of proof_runs is what batch work turns into anyway (proof_batch only triggers one
proof_run per pending file, on a cron), and triggering them directly exercises everything a
stream stresses: several runs' partitions competing for pool ``gpu`` and for the executor's
slots, one run's validate/setup/finalize_run/check_h2d overlapping others' partitions, the
prover service taking jobs of all of them. proof_batch would add a cron cadence (a stream
that pauses between claims) and its own trigger task, and measure that cadence instead.

Measured over the steady window, across ALL runs, from the timing store's views
(``phase_spans`` for the device phases, ``gpu_partitions`` per GPU attempt, task_timings
for synthesis): the window starts after the warm-up (--warmup-s from the first trigger, or
after the first --warmup K partitions reached the device) and ends when feeding stops (the
drain afterwards is left out).

    busy fraction     the union of device-phase spans (h2d, ntt, msm, d2h) on each device,
                      clipped to the window, over the window (kernel: ntt and msm only)
    proofs per minute GPU attempts whose device phase ended in the window, per minute
    GPU rate          60 / median device phase, per minute (x devices)
    synthesis rate    partitions synthesized per minute given the worker parallelism:
                      synthesis slots x 60 / median synthesize-task span, the slots being
                      the executor's parallelism less the pool's GPU slots (prove_gpu holds
                      those under load), capped by PROOFFLOW_SYNTH_CONCURRENCY x runs in flight
    bound             min(GPU rate, synthesis rate); proofs per minute as a fraction of it
    synthesis phases  per partition: its witness (``synthesis_phase``: MiMC's computed, a circom
                      circuit's generated from its input), a/b/c (``witness_map_phase``) and
                      the wait for room in the shared staging (``staging_wait_phase``)

and, to say what bound the stream where neither did: the cores each kind of the
deployment's processes kept busy from the warm-up's end to the feeding's (``host_cpu``, read
from /proc as bench.host_cpu does: one saturated core bounds a single-threaded scheduler),
the host-task rate (the synthesis
slots over a partition's synthesize + stage + finalize_partition spans: the same executor
slots run all three), the GPU pool's rate (the pool's slots over the median prove_gpu task
span: a task holds its slot from Airflow's start of it to its end, not only for its device
phase) and the binding one, the least of the four.

On a machine without a GPU, --standin-s stretches each proof's device phase to that many
seconds (the proofs stay real and verify). Results: JSON with the hardware, versions,
sizes, each phase's min/median, the configuration and every run, and what the prover
service did once, before the window (``once_s``: its start, each key's upload); a timeline
PNG (runs' tasks, the device lane, warm-up and drain shaded). Every proof of every run is
verified again from its bundle (``proofs_verified`` against ``proofs_expected``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import _env, host_cpu
from proofflow import settings, spec
from proofflow.airflow.hooks.api import AirflowApiError
from bench._airflow import RESULTS, add_run_arguments, deployment, prepare, say
from bench._env import this_process_env
from tests.helpers import local_stack as stack
from tests.helpers.local_stack import ROOT

DAG = "proof_run"
SNARKJS = Path(os.environ.get("SNARKJS_BIN") or ROOT / "tests" / "circom" / "node_modules" / ".bin" / "snarkjs")
KERNEL_PHASES = ("ntt", "msm")
SYNTH_TASK, STAGE_TASK, FINALIZE_TASK = "partition.synthesize", "partition.stage", "partition.finalize_partition"
# a synthesize task's phases: the witness (a circom circuit's generated from its input), a/b/c
# into the shared segment, the wait for room in the shared staging
SYNTH_PHASES = ("synthesis", "witness_map", "staging_wait")


# -- figures (pure: spans in epoch seconds) -----------------------------------------------------
def merged(spans, lo: float, hi: float) -> list[tuple[float, float]]:
    """The union of ``spans`` clipped to [lo, hi], as disjoint sorted intervals."""
    out: list[list[float]] = []
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def union_s(spans, lo: float, hi: float) -> float:
    return sum(e - s for s, e in merged(spans, lo, hi))


def idle_gaps(spans, lo: float, hi: float) -> list[float]:
    """Idle seconds between consecutive busy intervals inside [lo, hi]."""
    m = merged(spans, lo, hi)
    return [b[0] - a[1] for a, b in zip(m, m[1:])]


def stats(xs) -> dict:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return {"n": 0, "min_s": None, "median_s": None, "max_s": None}
    return {"n": len(xs), "min_s": xs[0], "median_s": statistics.median(xs), "max_s": xs[-1]}


def run_figures(runs: list[dict], partitions: int, proofs_per_min: float | None, lo: float, hi: float) -> dict:
    """A run's worth of proofs at the window's rate (``seconds_per_run``: the steady time a
    sector-like run costs when runs follow each other, as cuzk counts a sector), and the wall
    time from trigger to end of the runs triggered and ended inside the window."""
    walls = [r["finished_at"] - r["triggered_at"] for r in runs
             if r.get("finished_at") and lo <= r["triggered_at"] and r["finished_at"] <= hi]
    return {"seconds_per_run": 60.0 * partitions / proofs_per_min if proofs_per_min else None,
            "run_wall": stats(walls)}


def window_bounds(attempts: list[dict], t0: float, t_stop: float, warmup_s: float | None,
                  warmup_partitions: int | None) -> tuple[float, float]:
    """The steady window: from the warm-up's end (the first trigger + ``warmup_s``, or the
    device start of the partition after the first ``warmup_partitions``, in device order
    across all runs) to when feeding stopped."""
    if warmup_partitions is not None:
        starts = sorted(a["gpu_start"] for a in attempts)
        if len(starts) <= warmup_partitions:
            raise ValueError(f"only {len(starts)} partitions reached the device: none left after a warm-up of "
                             f"{warmup_partitions}")
        lo = starts[warmup_partitions]
    else:
        lo = t0 + (warmup_s or 0.0)
    if lo >= t_stop:
        raise ValueError(f"the warm-up ({lo - t0:.0f} s) takes the whole stream ({t_stop - t0:.0f} s): "
                         "a longer --duration or a shorter warm-up")
    return lo, t_stop


def synthesis_slots(parallelism: int, gpu_slots: int, synth_concurrency: int | None, in_flight: int) -> int:
    """Synthesize tasks that can run at once: the executor's slots less those prove_gpu holds
    under load, capped by the per-run synthesis limit times the runs in flight."""
    slots = max(1, parallelism - gpu_slots)
    return min(slots, synth_concurrency * in_flight) if synth_concurrency else slots


def figures(device_phases: list[dict], attempts: list[dict], synth: list[dict], stage: list[dict],
            lo: float, hi: float, synth_slots: int, finalize: list[dict] = (), gpu_slots: int | None = None) -> dict:
    """The steady window's figures. ``device_phases``: {device, phase, start, end};
    ``attempts``: GPU attempts {device, gpu_start, gpu_end, busy_s, mutex_wait_s, pool_wait_s,
    h2d_bytes, h2d_transfer_s}; ``synth``/``stage``/``finalize``: task spans {start, end}, a
    synthesize task's with its phases' seconds {synthesis_s, witness_map_s, staging_wait_s}."""
    window = hi - lo
    devices = sorted({a["device"] for a in attempts if a["device"] is not None})
    per_device = {}
    for d in devices:
        spans = [(p["start"], p["end"]) for p in device_phases if p["device"] == d]
        kernels = [(p["start"], p["end"]) for p in device_phases if p["device"] == d and p["phase"] in KERNEL_PHASES]
        held = [(a["gpu_start"], a["gpu_end"]) for a in attempts if a["device"] == d]
        gaps = idle_gaps(held, lo, hi)
        busy = union_s(spans, lo, hi)
        # the idle time split: "starved", no partition in hand (outside every attempt's span,
        # which starts with its upload); "handoff", one in hand but no phase running (the
        # service between two proofs, or a proof between its phases)
        starved = window - union_s(held, lo, hi)
        per_device[d] = {"busy_s": busy, "busy_fraction": busy / window,
                         "kernel_busy_fraction": union_s(kernels, lo, hi) / window,
                         "starved_fraction": starved / window,
                         "handoff_fraction": max(0.0, window - busy - starved) / window,
                         "proofs": sum(lo <= a["gpu_end"] <= hi for a in attempts if a["device"] == d),
                         "idle_gap_median_s": statistics.median(gaps) if gaps else 0.0,
                         "idle_gap_max_s": max(gaps) if gaps else 0.0, "idle_gaps_over_100ms": sum(g > 0.1 for g in gaps)}
    done = [a for a in attempts if lo <= a["gpu_end"] <= hi]
    device_phase = stats(a["busy_s"] for a in done)
    synth_done = [t for t in synth if lo <= t["end"] <= hi]
    synth_task = stats(t["end"] - t["start"] for t in synth_done)
    proofs_per_min = 60.0 * len(done) / window
    gpu_rate = 60.0 * len(devices) / device_phase["median_s"] if device_phase["median_s"] else None
    synth_rate = 60.0 * synth_slots / synth_task["median_s"] if synth_task["median_s"] else None
    # the same slots also run each partition's stage and finalize_partition: the host side's
    # rate when they are counted too (context for the bound, which counts synthesis alone)
    stage_task = stats(t["end"] - t["start"] for t in stage if lo <= t["end"] <= hi)
    fin_task = stats(t["end"] - t["start"] for t in finalize if lo <= t["end"] <= hi)
    host_s = [x["median_s"] for x in (synth_task, stage_task, fin_task)]
    host_rate = 60.0 * synth_slots / sum(host_s) if all(host_s) else None
    # a prove_gpu task holds its pool slot from its start to its end, Airflow's start-up and
    # wind-down included: the pool's slots over that span bound the proofs too
    prove_task = stats(a.get("slot_s") for a in done)
    pool_rate = 60.0 * gpu_slots / prove_task["median_s"] if gpu_slots and prove_task["median_s"] else None
    limits = {k: v for k, v in (("gpu", gpu_rate), ("synthesis", synth_rate), ("host tasks", host_rate),
                                ("gpu pool", pool_rate)) if v}
    binding = min(limits, key=limits.get) if limits else None
    rates = {k: v for k, v in (("gpu", gpu_rate), ("synthesis", synth_rate)) if v}
    bound_by = min(rates, key=rates.get) if rates else None
    bound = rates.get(bound_by)
    h2d_bytes = sum(a["h2d_bytes"] or 0 for a in done)
    h2d_s = sum(a["h2d_transfer_s"] or 0 for a in done)
    return {
        "window_s": window, "devices": devices,
        "busy_fraction": statistics.mean(v["busy_fraction"] for v in per_device.values()) if per_device else None,
        "kernel_busy_fraction": statistics.mean(v["kernel_busy_fraction"] for v in per_device.values())
        if per_device else None,
        "proofs": len(done), "proofs_per_min": proofs_per_min,
        "gpu_rate_per_min": gpu_rate, "synthesis_rate_per_min": synth_rate, "bound_per_min": bound,
        "bound_by": bound_by, "fraction_of_bound": proofs_per_min / bound if bound else None,
        "device_phase": device_phase, "synthesis_slots": synth_slots, "synthesize_task": synth_task,
        "synthesis_phase": stats(t.get("synthesis_s") for t in synth_done),
        "witness_map_phase": stats(t.get("witness_map_s") for t in synth_done),
        "staging_wait_phase": stats(t.get("staging_wait_s") for t in synth_done),
        "synthesize_tasks_running_mean": task_seconds(synth, lo, hi) / window,
        "stage_task": stage_task,
        "finalize_partition_task": fin_task,
        "host_rate_per_min": host_rate,
        "prove_gpu_task": prove_task, "gpu_slots": gpu_slots, "pool_rate_per_min": pool_rate,
        "binding": binding, "binding_rate_per_min": limits.get(binding),
        "fraction_of_binding": proofs_per_min / limits[binding] if binding else None,
        "syntheses_per_min": 60.0 * len(synth_done) / window,
        "mean_mutex_wait_s": statistics.mean(a["mutex_wait_s"] or 0 for a in done) if done else None,
        "mean_pool_wait_s": statistics.mean(a["pool_wait_s"] or 0 for a in done) if done else None,
        "h2d_gbps": h2d_bytes / h2d_s / 1e9 if h2d_s else None,
        "per_device": per_device,
    }


def task_seconds(tasks: list[dict], lo: float, hi: float) -> float:
    """Task-seconds inside [lo, hi] (overlaps counted: the mean number running times the window)."""
    return sum(max(0.0, min(t["end"], hi) - max(t["start"], lo)) for t in tasks)


# -- the timing store -----------------------------------------------------------------------------
def _t(x) -> float:
    return x.timestamp()


# what a prover service does once (its start, from the first stage task that calls it; a
# key's upload to the device, with its MSM copies, in the first prove_gpu task of that key):
# before the steady window, so recorded apart, in seconds
ONCE_PHASES = ("service_start", "key_upload")


def load(store, run_ids: set[str]) -> dict:
    """The stream's rows from the views: device phases, GPU attempts, synthesize and stage
    spans, and the once-a-service phases' durations."""
    p = {"d": DAG}
    phases = [{"run_id": r["run_id"], "device": r["device"], "phase": r["phase"], "start": _t(r["start"]),
               "end": _t(r["end"])}
              for r in store.query("SELECT run_id, device, phase, start, \"end\" FROM phase_spans WHERE dag_id = :d "
                                   "AND phase IN ('h2d', 'ntt', 'msm', 'd2h')", p) if r["run_id"] in run_ids]
    attempts = [{**r, "gpu_start": _t(r["gpu_start"]), "gpu_end": _t(r["gpu_end"])}
                for r in store.query("SELECT run_id, partition, try_number, device, gpu_start, gpu_end, busy_s, "
                                     "kernel_s, slot_s, mutex_wait_s, pool_wait_s, h2d_bytes, h2d_transfer_s "
                                     "FROM gpu_partitions WHERE dag_id = :d", p)
                if r["run_id"] in run_ids and r["busy_s"]]
    rows = store.query("SELECT run_id, task_id, map_index, try_number, phase, start, \"end\", duration_s "
                       "FROM task_timings WHERE dag_id = :d "
                       "AND phase IN ('task', 'synthesis', 'witness_map', 'staging_wait')", p)  # SYNTH_PHASES
    tasks: dict = {}
    for r in rows:
        if r["run_id"] in run_ids:
            k = (r["run_id"], r["task_id"], r["map_index"], r["try_number"])
            t = tasks.setdefault(k, {"run_id": r["run_id"], "task_id": r["task_id"]})
            if r["phase"] == "task":
                t.update(start=_t(r["start"]), end=_t(r["end"]))
            else:  # a phase's seconds in the attempt (synthesis: the witness, witness_map: a/b/c)
                t[f"{r['phase']}_s"] = t.get(f"{r['phase']}_s", 0.0) + r["duration_s"]
    tasks = [t for t in tasks.values() if "start" in t]
    once = {ph: [] for ph in ONCE_PHASES}
    for r in store.query("SELECT run_id, phase, duration_s FROM task_timings WHERE dag_id = :d AND phase IN "
                         "('service_start', 'key_upload') ORDER BY start", p):  # ONCE_PHASES
        if r["run_id"] in run_ids:
            once[r["phase"]].append(round(r["duration_s"], 3))
    return {"phases": phases, "attempts": attempts, "tasks": tasks, "once_s": once,
            "synth": [t for t in tasks if t["task_id"] == SYNTH_TASK],
            "stage": [t for t in tasks if t["task_id"] == STAGE_TASK],
            "finalize": [t for t in tasks if t["task_id"] == FINALIZE_TASK]}


# -- a registered circom circuit's runs -----------------------------------------------------------------
def deployment_settings(home: Path, sets: dict) -> settings.Settings:
    """The proofflow settings of the deployment's processes, which inherit no PROOFFLOW_*
    variable of this one: its home and --set's values."""
    return settings.load({"PROOFFLOW_HOME": str(home), **{k: v for k, v in sets.items() if k.startswith("PROOFFLOW_")}})


def registered(name: str, config: settings.Settings) -> dict:
    """The circuit.json of circom circuit ``name`` in the deployment's registry."""
    path = config.circuits_dir / name / "circuit.json"
    if not path.is_file():
        raise ValueError(f"circuit {name!r} is not registered in {config.circuits_dir}: register it there with "
                         f"PROOFFLOW_HOME={config.home} proofflow circuit add (bench.circom_prep does), or give --home")
    return json.loads(path.read_text())


def stream_inputs(directory: Path, info: dict, config: settings.Settings, partitions: int) -> list[str]:
    """The input files of ``directory`` (name order) as the runs name them, checked as a run's
    validate task checks them: in place where they lie inside the deployment's input roots,
    else linked (or copied) into its first root as ``proofflow run --inputs`` does. At least
    ``partitions`` of them, so that a run's inputs are distinct."""
    roots = config.input_roots
    if not directory.is_dir():
        raise ValueError(f"--inputs {directory}: not a directory")
    files = sorted(p for p in directory.iterdir() if p.suffix in spec.INPUT_SUFFIXES)
    if len(files) < partitions:
        raise ValueError(f"--inputs {directory}: {len(files)} input files ({', '.join(spec.INPUT_SUFFIXES)}), fewer "
                         f"than the {partitions} partitions of a run")
    if not all(any(Path(os.path.realpath(f)).is_relative_to(os.path.realpath(r)) for r in roots) for f in files):
        from proofflow import cli
        with this_process_env(PROOFFLOW_INPUT_ROOTS=":".join(map(str, roots))):
            staged, _ = cli.stage_inputs([directory])
        say(f"--inputs {directory} lies outside the deployment's input roots: linked into {staged}")
        files = sorted(staged.iterdir())
    return spec.resolve_inputs([str(f.absolute()) for f in files], info, roots)


def run_conf(base: dict, i: int, seeds: list[int], inputs: list[str] | None, partitions: int) -> dict:
    """Run ``i``'s conf: ``base`` with the next seed and, for a registered circuit, the next
    ``partitions`` of ``inputs`` in turn, cycling (run 0 the first ones, run 1 the next)."""
    conf = {**base, "seed": seeds[i % len(seeds)]}
    if inputs:
        conf["inputs"] = [inputs[(i * partitions + j) % len(inputs)] for j in range(partitions)]
    return conf


# -- snarkjs's verdict on a sample ------------------------------------------------------------------
def spread(items: list, n: int) -> list:
    """``n`` of ``items`` spread evenly over them, the middle of each share (all of them when
    there are no more than ``n``)."""
    if n >= len(items):
        return list(items)
    return [items[(2 * k + 1) * len(items) // (2 * n)] for k in range(n)]


def snarkjs_missing(snarkjs: Path) -> str | None:
    if not snarkjs.exists():
        return f"no snarkjs at {snarkjs} (--snarkjs, SNARKJS_BIN; npm ci --prefix tests/circom)"
    if not shutil.which("node"):
        return "node is not on the PATH (snarkjs runs on node)"
    return None


def snarkjs_sample(runs: list[dict], partitions: int, n: int, snarkjs: Path, timeout: float = 300) -> dict:
    """``n`` proofs spread over the runs' bundles (``bundle_dir``: their snarkjs files, a
    circom circuit's), each checked by ``snarkjs groth16 verify`` with its bundle's
    verification_key.json: how many were checked and how many snarkjs accepted (the rejected
    ones with what snarkjs said); ``skipped`` and why where it cannot run."""
    from proofflow.prover.bundle import snarkjs_names
    if n <= 0:
        return {"skipped": "--snarkjs-sample 0"}
    if why := snarkjs_missing(snarkjs):
        return {"skipped": why}
    proofs = [(r["run_id"], Path(r["bundle_dir"]), p) for r in runs if r.get("bundle_dir") for p in range(partitions)]
    version = subprocess.run([str(snarkjs), "--version"], capture_output=True, text=True, timeout=60)
    out = {"checked": 0, "verified": 0, "of_proofs": len(proofs), "snarkjs": str(snarkjs),
           "version": ((version.stdout + version.stderr).strip().splitlines() or [None])[0], "rejected": []}
    for run_id, bundle, p in spread(proofs, n):
        proof, public = (bundle / name for name in snarkjs_names(p))
        proc = subprocess.run([str(snarkjs), "groth16", "verify", str(bundle / "verification_key.json"), str(public),
                               str(proof)], capture_output=True, text=True, timeout=timeout)
        out["checked"] += 1
        if proc.returncode == 0 and "OK" in proc.stdout:
            out["verified"] += 1
        else:
            out["rejected"].append({"run_id": run_id, "partition": p, "exit": proc.returncode,
                                    "said": (proc.stdout + proc.stderr).strip()[-600:]})
    return out


def sample_ok(sample: dict | None) -> bool:
    """A sample that ran passes when snarkjs accepted every proof it checked, and it checked one."""
    return sample is None or "skipped" in sample or 0 < sample["checked"] == sample["verified"]


# -- the stream -------------------------------------------------------------------------------------
def _state(base: str, run_id: str) -> str:
    return stack.api(base, f"/api/v2/dags/{DAG}/dagRuns/{run_id}")["state"]


def _proved(base: str, run_id: str, per_task: int) -> int:
    """The run's partitions proved so far: its prove_gpu task instances that succeeded, each
    ``per_task`` partitions (the run's last chunk may hold fewer: ``_poll`` caps the count)."""
    return per_task * stack.api(base, f"/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances"
                                      "?task_id=partition.prove_gpu&state=success&limit=1")["total_entries"]


def in_flight_now(runs: list[dict], partitions: int, count: str) -> float:
    """Runs in flight: each unfinished run counts in full (``active``), or by the share of its
    partitions left to prove (``proving``)."""
    live = [r for r in runs if "state" not in r]
    if count == "active":
        return float(len(live))
    return sum(1.0 - min(r.get("proved", 0), partitions) / partitions for r in live)


def _poll(base: str, runs: list[dict], parts: int, count: str, per_task: int) -> None:
    """The runs' states and, counted by proving, their partitions proved so far."""
    listed = stack.api(base, f"/api/v2/dags/{DAG}/dagRuns?state=queued&state=running&limit=1000")
    active = {d["dag_run_id"] for d in listed["dag_runs"]}
    for r in runs:
        if "state" in r:
            continue
        if r["run_id"] not in active:
            r.update(state=_state(base, r["run_id"]), finished_at=time.time())
        elif count == "proving" and r.get("proved", 0) < parts:
            r["proved"] = min(_proved(base, r["run_id"], per_task), parts)
            if r["proved"] >= parts:
                r["proved_at"] = time.time()


def feed(dep, conf_for, parts: int, in_flight: int, duration: float, poll_s: float, timeout: float,
         label: str, max_active: int, count: str = "proving", cpu_from_s: float = 0.0, per_task: int = 1) -> dict:
    """Keep ``in_flight`` runs' worth of partitions going for ``duration`` seconds, then let
    the runs finish (``in_flight_now`` says how runs count); run i of ``parts`` partitions
    gets conf ``conf_for(i)``. The deployment's CPU by process is read ``cpu_from_s`` after
    the start and when feeding stops (``host_cpu``)."""
    t0 = time.time()
    stop_at, runs, told, load = t0 + duration, [], t0, []
    sessions = {p.pid for p in dep.procs.procs.values()}
    cpu0 = None
    while time.time() < stop_at:
        dep.procs.check_alive()
        if cpu0 is None and time.time() >= t0 + cpu_from_s:
            cpu0 = (time.time(), host_cpu.snapshot(sessions, dep.runtime))
        load.append((time.time(), os.getloadavg()[0]))  # the host's, other users' work included
        try:
            _poll(dep.base, runs, parts, count, per_task)
        except AirflowApiError as exc:  # an API server too busy to answer in time: the stream goes on
            say(f"[{label}] poll failed, the runs' states as they were: {exc}")
            time.sleep(poll_s)
            continue
        running = sum("state" not in r for r in runs)
        while in_flight_now(runs, parts, count) < in_flight and running < max_active:
            conf = conf_for(len(runs))
            try:
                run_id = stack.trigger(dep.base, DAG, conf)
            except AirflowApiError as exc:  # its retries spent: the stream goes on, tries at the next poll
                say(f"[{label}] trigger failed: {exc}")
                break
            runs.append({"run_id": run_id, "seed": conf["seed"], "triggered_at": time.time(),
                         **({"inputs": [Path(x).name for x in conf["inputs"]]} if conf.get("inputs") else {})})
            running += 1
        if time.time() - told >= 15:
            told = time.time()
            say(f"[{label}] {told - t0:.0f}/{duration:.0f} s: {len(runs)} runs triggered, "
                f"{in_flight_now(runs, parts, count):.2f} in flight, "
                f"{sum(r.get('state') == 'success' for r in runs)} succeeded, "
                f"{sum(r.get('state') == 'failed' for r in runs)} failed")
        time.sleep(poll_s)
    t_stop = time.time()
    cpu = None
    if cpu0 is not None:  # cores each kind of process kept busy while fed: a core's worth saturates one
        spent = host_cpu.cpu_by_category(cpu0[1], host_cpu.snapshot(sessions, dep.runtime))
        cpu = {"from": cpu0[0], "to": t_stop, "cores": {k: v / (t_stop - cpu0[0]) for k, v in spent.items()}}
    left = [r for r in runs if "state" not in r]
    say(f"[{label}] feeding stopped after {t_stop - t0:.0f} s ({len(runs)} runs); draining {len(left)} run(s)")
    for r in left:
        state, _ = stack.wait_for_run(dep.base, DAG, r["run_id"], timeout, dep.procs)
        r.update(state=state, finished_at=time.time())
    for r in runs:
        r.pop("proved", None)
        if r["state"] != "success":
            tis = stack.api(dep.base, f"/api/v2/dags/{DAG}/dagRuns/{r['run_id']}/taskInstances?limit=500")
            r["failed_tasks"] = sorted({t["task_id"] for t in tis["task_instances"]
                                        if t["state"] not in ("success", "skipped")})
    return {"t0": t0, "t_stop": t_stop, "t_drained": time.time(), "runs": runs, "load": load, "host_cpu": cpu}


def service_status(dep, backend: str, devices: list[int]) -> dict:
    """Each device's prover service's status (resident keys, evictions, jobs), or the error."""
    from proofflow.prover.service.client import ServiceClient, ServiceError
    out = {}
    with this_process_env(PROOFFLOW_RUNTIME=str(dep.runtime)):
        for d in devices:
            try:
                st = ServiceClient(backend, d).status()
                out[st["device"]] = {k: st.get(k) for k in (
                    "jobs_done", "jobs_failed", "jobs_cancelled", "recoveries", "key_budget_bytes", "resident_keys",
                    "resident_key_bytes", "key_evictions", "evicted_keys", "rss_bytes", "device_pool_bytes")}
            except ServiceError as exc:
                out[str(d)] = {"error": str(exc)}
    return out


def verified(store, runs: list[dict]) -> int:
    """Proofs that verify in the runs' bundles (checked again here, independently of finalize_run);
    each run also gets its bundle's directory and check_h2d's flags (partition, measured and
    expected ms, GB/s, why), so the results say what a failed check saw without the timing
    database."""
    from proofflow.prover.bundle import verify_bundle
    n = 0
    for r in runs:
        rec = store.run(DAG, r["run_id"]) or {}
        r["bundle_dir"] = rec.get("bundle_dir")
        r["proofs_verified"] = sum(x.ok for x in verify_bundle(rec["bundle_dir"])) if rec.get("bundle_dir") else 0
        r["h2d_flags"] = [{k: f[k] for k in ("partition", "try_number", "measured_ms", "expected_ms", "gbps", "reason")}
                          for f in store.flags(DAG, r["run_id"])]
        n += r["proofs_verified"]
    return n


# -- the timeline -----------------------------------------------------------------------------------
def timeline_png(png: Path, panels: list[dict]) -> None:
    """Per stream: one lane per run (its tasks), one per device (its device phases); the
    warm-up and the drain shaded, so the steady window is what is left white."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from proofflow.timing.report import PHASE_COLORS, TASK_COLORS
    heights = []
    for p in panels:
        heights += [max(3.0, 0.22 * len(p["runs"])), 0.5 + 0.4 * max(1, len(p["devices"]))]
    fig, axes = plt.subplots(len(heights), 1, figsize=(16, sum(heights) + 1.2 * len(panels)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = axes[:, 0]
    for i, p in enumerate(panels):
        ax_runs, ax_gpu = axes[2 * i], axes[2 * i + 1]
        t0, lane = p["t0"], {r["run_id"]: k for k, r in enumerate(p["runs"])}
        seen = set()
        for t in p["tasks"]:
            name = t["task_id"].split(".")[-1]
            ax_runs.barh(lane[t["run_id"]], t["end"] - t["start"], left=t["start"] - t0, height=0.7, alpha=0.55,
                         color=TASK_COLORS.get(name, "#9aa0a6"), linewidth=0, label=name if name not in seen else None)
            seen.add(name)
        seen = set()
        for ph in p["phases"]:
            ax_gpu.barh(p["devices"].index(ph["device"]) if ph["device"] in p["devices"] else 0,
                        max(ph["end"] - ph["start"], 1e-6), left=ph["start"] - t0, height=0.8,
                        color=PHASE_COLORS.get(ph["phase"], "#5f6368"),
                        label=f"busy: {ph['phase']}" if ph["phase"] not in seen else None)
            seen.add(ph["phase"])
        end = p["t_drained"] - t0
        for ax in (ax_runs, ax_gpu):
            ax.axvspan(0, p["window"][0] - t0, color="#9aa0a6", alpha=0.15, label="warm-up" if ax is ax_gpu else None)
            ax.axvspan(p["window"][1] - t0, end, color="#f28b82", alpha=0.12, label="drain" if ax is ax_gpu else None)
            ax.set_xlim(0, end)
            ax.grid(axis="x", alpha=0.3)
            ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7)
        ax_runs.set_yticks(range(len(p["runs"])))
        ax_runs.set_yticklabels([_run_label(k, r) for k, r in enumerate(p["runs"])], fontsize=6)
        ax_runs.invert_yaxis()
        f = p["figures"]
        ax_runs.set_title(f"{_what(p)}: {len(p['runs'])} proof_runs of {p['partitions']} partitions, "
                          f"{p['in_flight']} in flight; steady window {f['window_s']:.0f} s: "
                          f"{f['proofs_per_min']:.1f} proofs/min, bound {_f(f['bound_per_min'])} ({f['bound_by']}), "
                          f"{_f(f['fraction_of_bound'], 100, '.1f')}% of it")
        ax_gpu.set_yticks(range(len(p["devices"])))
        ax_gpu.set_yticklabels([f"GPU {d}" for d in p["devices"]])
        ax_gpu.invert_yaxis()
        ax_gpu.set_xlabel("seconds since the first trigger")
        ax_gpu.set_title(f"device phases: busy {_f(f['busy_fraction'], 100, '.1f')}% of the steady window "
                         f"(kernels {_f(f['kernel_busy_fraction'], 100, '.1f')}%), median device phase "
                         f"{_f(f['device_phase']['median_s'], 1, '.3f')} s", fontsize=9)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    say(f"wrote {png}")


def _f(v, scale: float = 1.0, spec: str = ".1f") -> str:
    return "-" if v is None else format(v * scale, spec)


def _run_label(k: int, r: dict) -> str:
    return f"run {k} (from {r['inputs'][0]})" if r.get("inputs") else f"run {k} (seed {r['seed']})"


def _what(w: dict) -> str:
    """A stream's circuit and size, e.g. 2^22 (MiMC) or chain-2p22 (2^22)."""
    circuit = w.get("circuit", "mimc")
    return f"2^{w['log2']}" if circuit == "mimc" else f"{circuit} (2^{w['log2']})"


# -- main -----------------------------------------------------------------------------------------------
def _per_size(values: list[int], sizes: list, name: str, p) -> list[int]:
    if len(values) == 1:
        return values * len(sizes)
    if len(values) != len(sizes):
        p.error(f"--{name}: one value, or one per --log2 size ({len(sizes)})")
    return values


def parse(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.stream", description=__doc__.split("\n\n")[0],
                                conflict_handler="resolve")
    add_run_arguments(p, partitions=8)
    p.add_argument("--circuit", default="mimc",
                   help="the built-in mimc (default), or a circom circuit registered in --home, at its own size")
    p.add_argument("--inputs", type=Path, default=None,
                   help="a registered circuit's input files (input.json or .wtns): each run takes the next "
                        "--partitions of them, cycling through the directory")
    p.add_argument("--home", type=Path, default=None,
                   help="the deployment's PROOFFLOW_HOME, where --circuit is registered "
                        "(default: WORK/stream/proofflow)")
    p.add_argument("--snarkjs-sample", type=int, default=8,
                   help="a registered circuit's proofs checked by `snarkjs groth16 verify` after the stream, spread "
                        "over its runs (0: none)")
    p.add_argument("--snarkjs", type=Path, default=SNARKJS, help=f"snarkjs (default: SNARKJS_BIN, else {SNARKJS})")
    p.add_argument("--log2", type=int, nargs="+", default=None,
                   help="one stream per size, back to back (default 10; a registered circuit has its own)")
    p.add_argument("--partitions", type=int, nargs="+", default=[8], help="partitions per run (or one per size)")
    p.add_argument("--in-flight", type=int, nargs="+", default=[3], help="runs kept going at once (or one per size)")
    p.add_argument("--partitions-per-task", type=int, default=1, metavar="K",
                   help="the runs' partitions_per_task: each chain of tasks proves K partitions (default 1)")
    p.add_argument("--count", choices=("proving", "active"), default="proving",
                   help="how a run counts toward --in-flight: by its share of partitions left to prove (default), "
                        "or in full until it ends")
    p.add_argument("--max-active", type=int, default=None,
                   help="runs at once in all, finishing ones included (PROOFFLOW_MAX_ACTIVE_RUNS; default 2 x in flight + 1)")
    p.add_argument("--duration", type=float, default=180.0, help="seconds of feeding per size, warm-up included")
    p.add_argument("--warmup-s", type=float, default=60.0, help="warm-up: the stream's first seconds")
    p.add_argument("--warmup", type=int, default=None, help="warm-up: the first K partitions instead (device order)")
    p.add_argument("--seeds", default=None, help="comma-separated seeds cycled over the runs (default: --seed)")
    p.add_argument("--devices", default="0", help="device indices (PROOFFLOW_GPU_DEVICES), e.g. 0 or 0,1")
    p.add_argument("--synth-slots", type=int, default=None,
                   help="synthesize tasks that can run at once (default: parallelism less GPU slots)")
    p.add_argument("--poll-s", type=float, default=1.0, help="how often the runs' states are polled")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a proofflow or Airflow setting for every process of the deployment (repeatable), e.g. "
                        "PROOFFLOW_STAGING_BUDGET=12884901888 or AIRFLOW__API__WORKERS=4")
    p.add_argument("--label", default=None,
                   help="results name: stream-<label>.json (default: cpu or gpu, then a registered circuit's name)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--png", type=Path, default=None, help="timeline PNG (default: beside --out)")
    p.add_argument("--reanalyze", action="store_true",
                   help="no stream: compute --out's figures again from its timing store (--timing-db, else the "
                        "one it names)")
    args = p.parse_args(argv)
    args.builtin = args.circuit in spec.CIRCUITS
    if args.builtin:
        if args.inputs is not None:
            p.error(f"--inputs are for registered circom circuits; {args.circuit} makes its own")
        args.log2 = args.log2 or [10]
    else:
        if not spec.CIRCUIT_NAME.fullmatch(args.circuit):
            p.error(f"--circuit {args.circuit!r}: not a circuit name (lower-case letters, digits, _ and -)")
        if args.log2:
            p.error(f"--log2: circuit {args.circuit!r} has its own size (registered circuits are proved at it)")
        if args.inputs is None and not args.reanalyze:
            p.error(f"--inputs DIR: circuit {args.circuit!r} proves input files (input.json or .wtns)")
    sizes = args.log2 or [None]  # a registered circuit's one size, read from its registration
    args.partitions = _per_size(args.partitions, sizes, "partitions", p)
    args.in_flight = _per_size(args.in_flight, sizes, "in-flight", p)
    args.seeds = [int(x) for x in args.seeds.split(",") if x.strip()] if args.seeds else [args.seed]
    args.devices = [int(x) for x in args.devices.split(",") if x.strip()]
    pairs = [x.partition("=") for x in args.set]
    if any(not k.startswith(("PROOFFLOW_", "AIRFLOW__")) or not sep for k, sep, _ in pairs):
        p.error("--set takes PROOFFLOW_NAME=VALUE or AIRFLOW__SECTION__KEY=VALUE")
    args.set = {k: v for k, _, v in pairs}
    if "PROOFFLOW_HOME" in args.set:
        p.error("--home DIR sets the deployment's PROOFFLOW_HOME, not --set")
    if args.duration <= (args.warmup_s if args.warmup is None else 0):
        p.error("--duration must be longer than the warm-up")
    backend = "cpu" if args.backend == "cpu" else "gpu"
    args.label = args.label or (backend if args.builtin else f"{backend}-{args.circuit}")
    args.out = args.out or RESULTS / f"stream-{args.label}.json"
    args.png = args.png or args.out.with_suffix(".png")
    return args


def streams(args, home: Path) -> list[dict]:
    """What each stream proves: {log2, constraints, partitions, in_flight, base (the runs' conf
    but seed and inputs), inputs (a registered circuit's files, else None)}; a registered
    circuit's registration and inputs checked first (ValueError saying what is wrong)."""
    base = {"circuit": args.circuit, "backend": args.backend, "staging": args.staging,
            "partitions_per_task": args.partitions_per_task}
    if args.builtin:
        return [{"log2": log2, "constraints": 2 ** log2, "partitions": parts, "in_flight": in_flight,
                 "base": {**base, "log2": log2, "partitions": parts}, "inputs": None}
                for log2, parts, in_flight in zip(args.log2, args.partitions, args.in_flight)]
    config = deployment_settings(home, args.set)
    info = registered(args.circuit, config)
    parts = args.partitions[0]
    inputs = stream_inputs(args.inputs, info, config, parts)
    return [{"log2": int(info["log2"]), "constraints": int(info["constraints"]), "partitions": parts,
             "in_flight": args.in_flight[0], "base": {**base, "curve": info.get("curve", spec.CURVES[0])},
             "inputs": inputs, "inputs_dir": str(args.inputs)}]


def main(argv=None) -> int:
    args = parse(argv)
    if args.reanalyze:
        return reanalyze(args)
    work, timing_url, env = prepare(args)
    home = (args.home or work / "stream" / "proofflow").absolute()
    try:
        plan = streams(args, home)
    except (ValueError, OSError) as exc:  # spec.InvalidParams included: what a run's validate would refuse
        say(f"error: {exc}")
        return 2
    gpu_slots = args.depth * len(args.devices)
    max_active = args.max_active or (2 * max(args.in_flight) + 1 if args.count == "proving" else max(args.in_flight))
    penv = {**args.set, "PROOFFLOW_HOME": str(home), "PROOFFLOW_GPU_SERVICE": "1",
            "PROOFFLOW_GPU_DEVICES": ",".join(map(str, args.devices)), "PROOFFLOW_MAX_ACTIVE_RUNS": str(max_active)}
    doc = {"environment": env, "config": {**_config(args, gpu_slots), "max_active_runs": max_active,
                                          "home": str(home)},
           "windows": {}, "timing_db": timing_url}
    panels, ok = [], True
    with deployment("stream", args, timing_url, work, penv, gpu_slots,
                    AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG=str(args.parallelism)) as dep:
        for st in plan:
            label, parts, in_flight = _what({"circuit": args.circuit, **st}), st["partitions"], st["in_flight"]
            say(f"[{label}] streaming {args.duration:.0f} s: {in_flight} proof_runs of {parts} partitions in flight")
            s = feed(dep, lambda i, st=st: run_conf(st["base"], i, args.seeds, st["inputs"], st["partitions"]),
                     parts, in_flight, args.duration, args.poll_s, args.timeout, label, max_active, args.count,
                     cpu_from_s=args.warmup_s or 0.0, per_task=args.partitions_per_task)
            s.update(circuit=args.circuit, log2=st["log2"], constraints=st["constraints"], partitions=parts,
                     in_flight=in_flight, service=service_status(dep, args.backend, args.devices))
            window, panel = analyze(s, args, timing_url, gpu_slots)
            if st["inputs"]:
                window["inputs"] = {"dir": st["inputs_dir"], "files": len(st["inputs"])}
                say(f"[{label}] snarkjs: verifying {args.snarkjs_sample} proofs spread over the runs' bundles")
                with_sample(window, snarkjs_sample(s["runs"], parts, args.snarkjs_sample, args.snarkjs))
            doc["windows"][str(st["log2"])] = window
            ok = ok and window["ok"]
            _env.write(args.out, doc)  # each size's results as soon as it is done
            if panel:
                panels.append(panel)
                timeline_png(args.png, panels)
    print_summary(doc, args.out)
    return 0 if ok else 1


def with_sample(window: dict, sample: dict) -> dict:
    """The window with snarkjs's verdict on its sample, which its ``ok`` then requires."""
    window["snarkjs_sample"] = sample
    window["ok"] = window["ok"] and sample_ok(sample)
    return window


def reanalyze(args) -> int:
    """The figures of a finished invocation computed again from its timing store (the
    stream's runs and times from its results file, --out): e.g. after the figures changed."""
    doc = json.loads(args.out.read_text())
    cfg = doc["config"]
    args.parallelism, args.synth_concurrency, args.synth_slots = cfg["parallelism"], cfg["synth_concurrency"], \
        cfg["synth_slots"]
    args.warmup_s, args.warmup = cfg["warmup_s"], cfg["warmup_partitions"]
    panels = []
    for key, w in doc["windows"].items():
        t0 = w["window"]["start"] - w["window"]["warmup_s"]
        t_stop = t0 + w["window"]["stream_s"]
        s = {"t0": t0, "t_stop": t_stop, "t_drained": t_stop + w["window"]["drain_s"], "runs": w["runs"],
             "load": [], "host_cpu": w.get("host_cpu"), "service": w["service"], "log2": w["log2"],
             "circuit": w.get("circuit", "mimc"), "constraints": w["constraints"],
             "partitions": w["partitions_per_run"], "in_flight": w["in_flight"]}
        window, panel = analyze(s, args, args.timing_db or doc["timing_db"], cfg["gpu_slots"])
        window["load_average_1min"] = w["load_average_1min"]
        for kept in ("inputs", "snarkjs_sample"):  # what the stream saw apart from the timing store
            if kept in w:
                window[kept] = w[kept]
        if "snarkjs_sample" in w:
            with_sample(window, w["snarkjs_sample"])
        doc["windows"][key] = window
        if panel:
            panels.append(panel)
    _env.write(args.out, doc)
    if panels:
        timeline_png(args.png, panels)
    print_summary(doc, args.out)
    return 0


def analyze(s: dict, args, timing_url: str, gpu_slots: int) -> tuple[dict, dict | None]:
    """One stream's results (and its timeline panel) from the timing store."""
    from proofflow.timing import TimingStore
    store = TimingStore(timing_url)
    try:
        rows = load(store, {r["run_id"] for r in s["runs"]})
        slots = args.synth_slots or synthesis_slots(args.parallelism, gpu_slots, args.synth_concurrency, s["in_flight"])
        try:
            lo, hi = window_bounds(rows["attempts"], s["t0"], s["t_stop"], args.warmup_s, args.warmup)
            fig = figures(rows["phases"], rows["attempts"], rows["synth"], rows["stage"], lo, hi, slots,
                          rows["finalize"], gpu_slots)
        except ValueError as exc:
            say(f"[{_what(s)}] no steady window: {exc}")
            lo, hi, fig = s["t0"], s["t_stop"], None
        n_verified = verified(store, s["runs"])
    finally:
        store.dispose()
    expected = s["partitions"] * len(s["runs"])
    service = s["service"]
    window = {
        "circuit": s["circuit"], "log2": s["log2"], "constraints": s["constraints"],
        "partitions_per_run": s["partitions"],
        "in_flight": s["in_flight"], "abc_bytes_per_partition": 3 * 2 ** s["log2"] * 32,
        "key_bytes": sorted({k["bytes"] for st in service.values() for k in st.get("resident_keys") or []}),
        "once_s": rows["once_s"],
        "window": {"start": lo, "end": hi, "warmup_s": lo - s["t0"], "stream_s": s["t_stop"] - s["t0"],
                   "drain_s": s["t_drained"] - s["t_stop"]},
        "load_average_1min": stats(v for t, v in s["load"] if lo <= t <= hi) | {"cores": os.cpu_count()},
        "host_cpu": s.get("host_cpu"),
        "runs_triggered": len(s["runs"]), "runs_succeeded": sum(r["state"] == "success" for r in s["runs"]),
        "proofs_verified": n_verified, "proofs_expected": expected,
        "ok": fig is not None and n_verified == expected and all(r["state"] == "success" for r in s["runs"]),
        **(fig or {}), **run_figures(s["runs"], s["partitions"], (fig or {}).get("proofs_per_min"), lo, hi),
        "service": service, "runs": s["runs"]}
    panel = {**s, "window": (lo, hi), "figures": fig, "tasks": rows["tasks"], "phases": rows["phases"],
             "devices": fig["devices"]} if fig else None
    return window, panel


def _config(args, gpu_slots: int) -> dict:
    return {"duration_s": args.duration, "warmup_s": None if args.warmup is not None else args.warmup_s,
            "warmup_partitions": args.warmup, "circuit": args.circuit,
            "inputs": None if args.inputs is None else str(args.inputs), "log2": args.log2,
            "partitions": args.partitions, "partitions_per_task": args.partitions_per_task, "in_flight": args.in_flight,
            "count": args.count, "backend": args.backend, "staging": args.staging, "standin_s": args.standin_s,
            "depth": args.depth, "devices": args.devices, "gpu_slots": gpu_slots, "parallelism": args.parallelism,
            "synth_concurrency": args.synth_concurrency, "synth_slots": args.synth_slots, "seeds": args.seeds,
            "poll_s": args.poll_s, "settings": args.set, "scratch": args.scratch, "metadata_db": args.metadata_db or "sqlite",
            "snarkjs_sample": None if args.builtin else args.snarkjs_sample,
            "airflow": {"executor": "LocalExecutor", "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
                        "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": args.parallelism}}


def print_summary(doc: dict, out: Path) -> None:
    print(f"{'stream':<24}{'runs':>6}{'window s':>10}{'busy %':>8}{'kernel %':>10}{'proofs/min':>12}{'GPU rate':>10}"
          f"{'synth rate':>12}{'bound':>8}{'of bound %':>12}{'verified':>10}  binding")
    for w in doc["windows"].values():
        print(f"{_what(w):<24}{w['runs_triggered']:>6}{_f(w.get('window_s'), 1, '.0f'):>10}"
              f"{_f(w.get('busy_fraction'), 100):>8}{_f(w.get('kernel_busy_fraction'), 100):>10}"
              f"{_f(w.get('proofs_per_min')):>12}{_f(w.get('gpu_rate_per_min')):>10}"
              f"{_f(w.get('synthesis_rate_per_min')):>12}{_f(w.get('bound_per_min')):>8}"
              f"{_f(w.get('fraction_of_bound'), 100):>12}{w['proofs_verified']:>6}/{w['proofs_expected']}  "
              f"{w.get('binding')} {_f(w.get('binding_rate_per_min'))}/min")
        phases = {k: w.get(f"{k}_phase", {}).get("median_s") for k in SYNTH_PHASES}
        if any(v is not None for v in phases.values()):
            print("      a partition's synthesis, median: " + ", ".join(
                f"{k} {_f(v, 1, '.3f')} s" for k, v in phases.items()))
        if w.get("host_cpu"):
            print("      host cores busy while fed: " + ", ".join(
                f"{k} {v:.2f}" for k, v in w["host_cpu"]["cores"].items()))
        if w.get("seconds_per_run"):
            wall = w["run_wall"]
            print(f"      a run of {w['partitions_per_run']} partitions: {w['seconds_per_run']:.1f} s at the window's rate"
                  + (f", {wall['median_s']:.1f} s from trigger to end (median of {wall['n']} in the window)"
                     if wall["n"] else ""))
        once = {ph: v for ph, v in (w.get("once_s") or {}).items() if v}
        if once:
            print("      once, before the window: " + ", ".join(
                f"{ph} {', '.join(f'{x:.1f}' for x in v)} s" for ph, v in once.items()))
        sample = w.get("snarkjs_sample")
        if sample:
            print("      snarkjs groth16 verify: " + (f"skipped ({sample['skipped']})" if "skipped" in sample else
                                                    f"{sample['verified']}/{sample['checked']} of a sample accepted"))
    print(f"({out})")


if __name__ == "__main__":
    sys.exit(main())
