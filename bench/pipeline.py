"""Pipeline benchmark: how busy the GPU phase stays when Airflow schedules it.

    python -m bench.pipeline [--partitions 16] [--log2 8] [--backend cpu] [--standin-s 1.0]
                             [--variants naive,proofflow] [--out bench/results/pipeline-cpu.json]

Each variant runs one 16-partition ``proof_run`` through a real Airflow (api-server,
scheduler with LocalExecutor, dag-processor; fresh home, SQLite metadata DB unless
--metadata-db), triggered through the REST API, all variants in the same invocation and
writing to one timing store. The busy fraction is the ``steady_state`` view's: the union of
the device-phase spans over the window from the first steady partition's device start to the
last one's end (the first --warmup partitions left out). Variants:

    naive         prove_gpu proves in its own process; pool gpu has 1 slot (the GPU mutex)
    naive-tuned   the same with the scheduler's idle sleep at 0.1 s instead of 1 s
    service-2     the prover service, 2 pool slots (the seed's two workers alternating)
    service-3     the prover service, 3 pool slots
    proofflow     the prover service, --depth slots (PROOFFLOW_GPU_DEPTH's default, 4): the
                  project's design
    proofflow-pageable  the same with staging pageable (for the H2D check on a GPU)

On a machine without a GPU, --standin-s stretches each proof's device phase to that many
seconds (proofflow.prover.backend.standin): the proofs stay real and verify. Results: both headline
fractions, their ratio, each variant's figures; the timeline PNG of naive vs proofflow.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from bench import _env
from bench._airflow import RESULTS, add_run_arguments, deployment, prepare
from bench._airflow import say as _say
from tests.helpers import local_stack as stack

VARIANTS = {
    "naive": dict(env={"PROOFFLOW_GPU_SERVICE": "0"}, slots=1),
    "naive-tuned": dict(env={"PROOFFLOW_GPU_SERVICE": "0", "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.1"},
                        slots=1),
    "service-2": dict(env={"PROOFFLOW_GPU_SERVICE": "1"}, slots=2),
    "service-3": dict(env={"PROOFFLOW_GPU_SERVICE": "1"}, slots=3),
    "proofflow": dict(env={"PROOFFLOW_GPU_SERVICE": "1"}, slots=None),  # slots: --depth
    "proofflow-pageable": dict(env={"PROOFFLOW_GPU_SERVICE": "1"}, slots=None, staging="pageable"),
}


def gaps(store, run_id: str, warmup: int) -> list[float]:
    """Idle seconds between consecutive device spans on each device, in the steady window."""
    g = store.query("SELECT * FROM gpu_partitions WHERE run_id = :r ORDER BY gpu_rank", {"r": run_id})
    by_device: dict = {}
    for r in g:
        if r["gpu_rank"] > warmup:
            by_device.setdefault(r["device"], []).append(r)
    return [max(0.0, (b["gpu_start"] - a["gpu_end"]).total_seconds())
            for spans in by_device.values() for a, b in zip(spans, spans[1:])]


def run_variant(name: str, args, timing_url: str, work: Path, spec: dict | None = None) -> dict:
    """One proof_run through a fresh Airflow; ``spec`` (env, slots, staging) defaults to
    VARIANTS[name]'s, its slots to --depth."""
    from proofflow.timing.report import steady_state
    from proofflow.timing import TimingStore
    from proofflow.prover.bundle import verify_bundle
    spec = dict(spec or VARIANTS[name])
    spec["slots"] = spec["slots"] or args.depth
    conf = {"log2": args.log2, "partitions": args.partitions, "backend": args.backend,
            "staging": spec.get("staging", args.staging), "seed": args.seed}
    with deployment(name, args, timing_url, work, spec["env"], spec["slots"]) as dep:
        _say(f"[{name}] triggering {args.partitions} partitions of 2^{args.log2}")
        run_id = stack.trigger(dep.base, "proof_run", conf)
        state, tis = stack.wait_for_run(dep.base, "proof_run", run_id, args.timeout, dep.procs)
    failed = sorted({t["task_id"] for t in tis if t["state"] not in ("success", "skipped")})
    store = TimingStore(timing_url)
    record = store.run("proof_run", run_id) or {}
    verified = sum(r.ok for r in verify_bundle(record["bundle_dir"])) if record.get("bundle_dir") else 0
    st, per_device = steady_state(store, "proof_run", run_id, args.warmup, 0.0)
    st = st or {}
    idle = gaps(store, run_id, args.warmup)
    flags = store.flags("proof_run", run_id)
    out = {"run_id": run_id, "airflow_state": state, "failed_tasks": failed, "pool_slots": spec["slots"],
           "staging": conf["staging"], "proofs_verified": verified, "wall_s": record.get("wall_s"),
           "busy_fraction": st.get("gpu_busy_fraction"), "kernel_busy_fraction": st.get("kernel_busy_fraction"),
           "window_s": st.get("window_s"),
           "steady_partitions": st.get("partitions"), "s_per_partition": st.get("s_per_partition"),
           "mean_busy_s": (st["gpu_busy_s"] / st["partitions"]) if st.get("partitions") else None,
           "mean_pool_wait_s": st.get("mean_pool_wait_s"), "mean_mutex_wait_s": st.get("mean_mutex_wait_s"),
           "mean_barrier_wait_s": st.get("mean_barrier_wait_s"), "h2d_gbps": st.get("h2d_gbps"),
           "idle_gap_median_s": statistics.median(idle) if idle else None, "idle_gap_max_s": max(idle) if idle else None,
           "flagged_partitions": sorted({f["partition"] for f in flags if f["partition"] is not None}),
           "devices": st.get("devices"),
           "per_device": {d["device"]: {"partitions": d["partitions"], "busy_fraction": d["gpu_busy_fraction"],
                                        "kernel_busy_fraction": d["kernel_busy_fraction"]} for d in per_device},
           "partitions": partition_rows(store, run_id), "env": spec["env"]}
    busy = out["busy_fraction"]
    _say(f"[{name}] {state}: {verified}/{args.partitions} proofs verify, steady busy "
         f"{'n/a' if busy is None else f'{100 * busy:.1f}%'}, median idle gap {out['idle_gap_median_s']}, "
         f"flagged {out['flagged_partitions']}")
    store.dispose()
    return out


def _round(x, nd: int = 3):
    return None if x is None else round(x, nd)


def partition_rows(store, run_id: str) -> list[dict]:
    """Per partition (last try): its device phase (first kernel to last MSM) and its parts,
    the a/b/c upload (ms, GB/s, memory kind), the host copy of a/b/c before it (stage's h2s:
    0 bytes on the zero-copy path), whether check_h2d flagged it, the key's load and upload
    when that partition paid them."""
    from proofflow.timing.report import run_report
    phases: dict = {}
    for r in sorted(store.timings("proof_run", run_id, "partition.prove_gpu"), key=lambda r: r["try_number"]):
        phases.setdefault(r["partition"], {})[r["phase"]] = r["duration_s"]
    rows = []
    for h in (run_report(store, "proof_run", run_id) or {}).get("h2d", []):
        ph = phases.get(h["partition"], {})
        rows.append({"partition": h["partition"], "device_phase_s": round(ph.get("ntt", 0) + ph.get("msm", 0), 3),
                     "ntt_s": _round(ph.get("ntt")), "msm_s": _round(ph.get("msm")), "h2d_ms": round(h["ms"], 1),
                     "h2d_gbps": round(h["gbps"], 2), "memory_kind": h["memory_kind"],
                     "host_copy_bytes": h.get("host_copy_bytes"), "flagged": bool(h["flagged"]),
                     "flag_reason": h.get("reason") if h["flagged"] else None,
                     "key_load_s": _round(ph.get("key_load")), "key_upload_s": _round(ph.get("key_upload"))})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pipeline", description=__doc__.split("\n\n")[0])
    add_run_arguments(p)
    p.add_argument("--variants", default="naive,naive-tuned,service-2,service-3,proofflow",
                   help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default bench/results/pipeline-<backend>.json)")
    p.add_argument("--png", type=Path, default=None, help="timeline PNG of naive (else proofflow-pageable) vs proofflow")
    args = p.parse_args(argv)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        p.error(f"unknown variants {unknown}: choose from {', '.join(VARIANTS)}")
    work, timing_url, env = prepare(args)
    out = args.out or RESULTS / f"pipeline-{args.backend if not args.standin_s else 'cpu'}.json"
    results: dict = {}
    png = args.png or out.with_suffix(".png")
    for name in names:  # the results so far (and the PNG once it can be drawn) after each variant
        results[name] = run_variant(name, args, timing_url, work)
        doc = _document(args, env, results, timing_url)
        _env.write(out, doc)
        if name in ("naive", "proofflow", "proofflow-pageable"):
            _timeline(results, timing_url, args.warmup, png)
    print_table(results)
    if doc["ratio"]:
        print(f"proofflow / naive busy fraction: {doc['ratio']:.2f}x  ({out})")
    return 0


def print_table(results: dict) -> None:
    print(f"{'variant':<20}{'busy %':>8}{'kernel %':>10}{'s/part':>8}{'idle gap s':>12}{'mutex wait s':>14}"
          f"{'proofs':>8}  state")
    for name, r in results.items():
        print(f"{name:<20}{_fmt(r['busy_fraction'], 100, '.1f'):>8}{_fmt(r['kernel_busy_fraction'], 100, '.1f'):>10}"
              f"{_fmt(r['s_per_partition'], 1, '.3f'):>8}{_fmt(r['idle_gap_median_s'], 1, '.3f'):>12}"
              f"{_fmt(r['mean_mutex_wait_s'], 1, '.3f'):>14}{r['proofs_verified']:>8}  {r['airflow_state']} "
              f"{','.join(r['failed_tasks'])}")


def _timeline(results: dict, timing_url: str, warmup: int, png: Path) -> None:
    """The timeline PNG of naive vs proofflow once both have run, else of proofflow pinned vs
    pageable once both have run."""
    for other, label in (("naive", "naive"), ("proofflow-pageable", "proofflow (pageable)")):
        base, ours = results.get(other, {}), results.get("proofflow", {})
        if base.get("run_id") and ours.get("run_id"):
            timeline_png(png, timing_url, [(label, base, warmup), ("proofflow", ours, warmup)])
            return


def timeline_png(png: Path, timing_url: str, runs: list[tuple[str, dict, int]]) -> None:
    """The report PNG of these (label, variant result, warm-up partitions) runs, stacked."""
    from proofflow.timing import report
    from proofflow.timing import TimingStore
    store = TimingStore(timing_url)
    reps = [(label, report.run_report(store, "proof_run", r["run_id"], warmup, 0.0)) for label, r, warmup in runs]
    report.render_png(png, reps)
    store.dispose()
    _say(f"wrote {png}")


def _pageable_vs_pinned(results: dict) -> dict | None:
    """The same design with pageable staging against pinned: per-partition time, H2D rate and
    the two busy fractions (transfers count as busy, so a slow copy shows in the kernel one)."""
    pinned, pageable = results.get("proofflow", {}), results.get("proofflow-pageable", {})
    if not (pinned.get("run_id") and pageable.get("run_id")):
        return None
    keys = ("s_per_partition", "h2d_gbps", "busy_fraction", "kernel_busy_fraction")
    out = {k: {"pinned": pinned.get(k), "pageable": pageable.get(k)} for k in keys}
    out["flagged_partitions"] = {"pinned": len(pinned["flagged_partitions"]),
                                 "pageable": len(pageable["flagged_partitions"])}
    return out


def _document(args, env: dict, results: dict, timing_url: str) -> dict:
    naive, ours = results.get("naive", {}), results.get("proofflow", {})
    return {"environment": env, "partitions": args.partitions, "log2": args.log2, "backend": args.backend,
            "gpu_phase_s": args.standin_s or (ours or naive).get("mean_busy_s"), "standin": bool(args.standin_s),
            "depth": args.depth, "warmup_partitions": args.warmup, "naive_busy": naive.get("busy_fraction"),
            "proofflow_busy": ours.get("busy_fraction"),
            "ratio": (ours["busy_fraction"] / naive["busy_fraction"])
            if ours.get("busy_fraction") and naive.get("busy_fraction") else None,
            "airflow_settings": {"AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1", "parallelism": args.parallelism},
            "pageable_vs_pinned": _pageable_vs_pinned(results),
            "variants": results, "timing_db": timing_url if args.timing_db else None}


def _fmt(v, scale: float, spec: str) -> str:
    return "-" if v is None else format(v * scale, spec)


if __name__ == "__main__":
    sys.exit(main())
