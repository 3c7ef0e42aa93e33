"""``proofflow report RUN_ID [--png FILE] [--compare OTHER_RUN]``: a run's report from the
timing store's reporting views (``proofflow/timing/views.py``, migration 0003).

Text: the run summary (``run_summary``), the steady-state window (the ``steady_state`` query,
warm-up from --warmup-partitions / --warmup-seconds or table ``report_settings``), phase
statistics (``phase_stats_run``), H2D per partition (``h2d_partitions``) and pool waits
(``pool_waits``). With --compare, the headline figures of both runs side by side.

PNG (matplotlib, Agg): per run, a Gantt of every task per partition, a lane per device (device
phases h2d/ntt/msm/d2h busy vs idle while the run's prove_gpu tasks held it), and the H2D bars
per partition coloured by memory kind (flagged ones hatched), with check_h2d's latest result:
the expected time (bytes / calibrated rate) and the time above which it flags (expected x
(1 + tol) + slack_ms), so a bar between the two reads as within tolerance, not as a miss.

Every label names the device by what ran: "GPU" for a CUDA device (cuda:N), "CPU" for the CPU
backend's (cpu, cpu:N); the header names the backend and staging that ran and, where they
differ, what the run asked for.
"""
from __future__ import annotations

import json
import sys

from proofflow.phases import DEVICE_PHASES, Phase
from proofflow.spec import RunFailure
TASK_COLORS = {"synthesize": "#8ab4f8", "stage": "#fdd663", "prove_gpu": "#81c995", "finalize_partition": "#c58af9",
               "validate": "#dadce0", "setup": "#bdc1c6", "prepare_scratch": "#dadce0", "finalize_run": "#f28b82",
               "cleanup_scratch": "#e8eaed", "check_h2d": "#fcad70"}
PHASE_COLORS = {Phase.H2D: "#d93025", Phase.NTT: "#1a73e8", Phase.MSM: "#188038", Phase.D2H: "#f9ab00"}
KIND_COLORS = {"pinned": "#1a73e8", "pageable": "#d93025"}


# -- what ran ------------------------------------------------------------------------------
def device_kind(device) -> str:
    """'GPU' for a CUDA device of the timing rows (cuda:N), 'CPU' for the CPU backend's (cpu, cpu:N)."""
    return "GPU" if str(device).startswith("cuda") else "CPU"


def run_device_kind(rep: dict) -> str:
    """What the run's device phases ran on, GPU or CPU: from its rows, else its backend."""
    kinds = {device_kind(d) for d in device_lanes(rep["timings"]) if d != "-"}
    if len(kinds) == 1:
        return kinds.pop()
    return "GPU" if rep["summary"].get("backend") == "gpu" else "CPU"


def _asked(ran, asked, why: str = "") -> str:
    return str(ran) if asked in (None, ran) else f"{ran} ({asked} asked for{why})"


def run_setup(run: dict, reason: bool = True) -> str:
    """The backend and staging a run really used, and what it asked for where that differs
    (a conf's 'auto', or pinned staging on the CPU backend, which pins nothing)."""
    why = "; the CPU backend pins nothing" if reason and run.get("backend") == "cpu" else ""
    return (f"backend {_asked(run.get('backend'), run.get('backend_requested'))}, "
            f"staging {_asked(run.get('staging'), run.get('staging_requested'), why)}")


def run_heading(run: dict, partitions: bool = False) -> str:
    """What a run proves and how, from what its row records: a run refused by validate
    records none of it, so nothing is shown as None."""
    parts = []
    if run.get("circuit"):
        parts.append(run["circuit"] + (f" 2^{run['log2']}" if run.get("log2") is not None else "")
                     + (f" over {run['curve']}" if run.get("curve") else ""))
    if partitions and run.get("partitions") is not None:
        parts.append(f"{run['partitions']} partition(s)")
    if run.get("backend"):
        parts.append(run_setup(run))
    return ", ".join(parts) or "its parameters were refused"


# -- data ------------------------------------------------------------------------------------
def _where(dag_id, run_id):
    return {"d": dag_id, "r": run_id}


def run_report(store, dag_id: str, run_id: str, warmup_partitions: float | None = None,
               warmup_seconds: float | None = None) -> dict | None:
    p = _where(dag_id, run_id)
    summary = store.query("SELECT * FROM run_summary WHERE dag_id = :d AND run_id = :r", p)
    if not summary:
        return None
    settings = {r["name"]: r["value"] for r in store.query("SELECT name, value FROM report_settings")}
    k = settings.get("warmup_partitions", 1.0) if warmup_partitions is None else warmup_partitions
    s = settings.get("warmup_seconds", 0.0) if warmup_seconds is None else warmup_seconds
    steady, per_device = steady_state(store, dag_id, run_id, k, s)
    h2d = store.query("SELECT * FROM h2d_partitions WHERE dag_id = :d AND run_id = :r ORDER BY partition, try_number", p)
    checks = store.check_results(dag_id, run_id)
    tolerance = None
    if checks and checks[-1].get("result_json"):  # check_h2d's expected figures and allowed range, flagged or not
        try:
            result = json.loads(checks[-1]["result_json"])
            evaluated = {(e["partition"], e["try_number"]): e for e in result["evaluated"]}
            tolerance = {k: result["config"][k] for k in ("tol", "tol_low", "slack_ms")}
        except (ValueError, KeyError, TypeError):
            evaluated = {}
        for h in h2d:
            e = evaluated.get((h["partition"], h["try_number"])) or {}
            if h.get("expected_ms") is None:
                h["expected_ms"] = e.get("expected_ms")
            h["max_ms"] = e.get("max_ms")
    # host copies of a/b/c between synthesis and the upload (stage's h2s row; 0 when zero-copy)
    copies = {t["partition"]: t["bytes"] for t in sorted(store.transfers(dag_id, run_id), key=lambda t: t["try_number"])
              if t["direction"] == "h2s"}
    for h in h2d:
        h["host_copy_bytes"] = copies.get(h["partition"])
    row = store.run(dag_id, run_id) or {}
    failure = RunFailure.from_row(row)
    rep = {
        "summary": {**summary[0], "curve": row.get("curve")},  # the runs row's (run_summary predates it)
        "error": failure.line() if failure else None,
        "steady_state": steady or {"warmup_partitions": k, "warmup_seconds": s, "partitions": 0},
        "steady_devices": per_device,
        "phases": store.query("SELECT * FROM phase_stats_run WHERE dag_id = :d AND run_id = :r "
                              "ORDER BY task_id, phase", p),
        "h2d": h2d,
        "h2d_tolerance": tolerance,
        "pool_waits": store.query("SELECT * FROM pool_waits WHERE dag_id = :d AND run_id = :r "
                                  "ORDER BY partition, try_number", p),
        "timings": store.timings(dag_id, run_id),
    }
    rep["device_kind"] = run_device_kind(rep)
    return rep


def steady_state(store, dag_id: str, run_id: str, warmup_partitions: float,
                 warmup_seconds: float) -> tuple[dict | None, list[dict]]:
    """The run's steady-state row (None: no partition after the warm-up) and its rows per
    device, ordered by device, for a warm-up given here rather than read from report_settings."""
    from proofflow.timing.views import steady_state_devices_query, steady_state_query
    p = {**_where(dag_id, run_id), "warmup_partitions": float(warmup_partitions),
         "warmup_seconds": float(warmup_seconds)}
    steady = store.query(f"SELECT * FROM ({steady_state_query(store.dialect)}) q WHERE dag_id = :d AND run_id = :r", p)
    devices = store.query(f"SELECT * FROM ({steady_state_devices_query(store.dialect)}) q "
                          "WHERE dag_id = :d AND run_id = :r ORDER BY device", p)
    return (steady[0] if steady else None), devices


# -- text ------------------------------------------------------------------------------------
def _n(x, nd=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _pct(fraction):
    return None if fraction is None else 100 * fraction


def _table(headers: list[str], rows: list[list], out) -> None:
    cells = [[_n(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    text = [bool(rows) and all(isinstance(r[i], str) for r in rows) for i in range(len(headers))]

    def fmt(c, w, left):
        return c.ljust(w) if left else c.rjust(w)
    print("  " + "  ".join(fmt(h, w, t) for h, w, t in zip(headers, widths, text)), file=out)
    for r in cells:
        print("  " + "  ".join(fmt(c, w, t) for c, w, t in zip(r, widths, text)), file=out)


def print_report(rep: dict, out=None) -> None:
    out = out or sys.stdout
    s, kind = rep["summary"], rep["device_kind"]
    print(f"proof run {s['run_id']} ({s['dag_id']}): {s['state']}; {run_heading(s)}"
          + (f", host {s['host']}" if s.get("host") else ""), file=out)
    if rep.get("error"):
        print(f"error: {rep['error']}", file=out)
    print("\nrun summary (run_summary)", file=out)
    _table(["wall s", "partitions", "proofs verified", "devices", f"{kind} busy s", f"{kind} busy %", "pool slot s",
            "pool wait s", "flagged"],
           [[s["wall_s"], s["partitions"], s["proofs_verified"], s["devices"], s["gpu_busy_s"],
             _pct(s["gpu_busy_fraction"]), s["gpu_slot_s"],
             s["pool_wait_s"], s["flagged_partitions"]]], out)
    st = rep["steady_state"]
    print(f"\nsteady state (warm-up: first {_n(st['warmup_partitions'], 0)} partition(s) on the {kind} and first "
          f"{_n(st['warmup_seconds'], 1)} s left out)", file=out)
    if st.get("partitions"):
        _table(["partitions", "window s", f"{kind} busy s", f"{kind} busy %", "kernel busy %", "s/partition",
                "mean slot s", "mean pool wait s", "mean mutex wait s", "H2D GB/s"],
               [[st["partitions"], st["window_s"], st["gpu_busy_s"],
                 _pct(st["gpu_busy_fraction"]),
                 _pct(st["kernel_busy_fraction"]), st["s_per_partition"],
                 st["mean_slot_s"], st["mean_pool_wait_s"], st["mean_mutex_wait_s"], st["h2d_gbps"]]], out)
        if len(rep["steady_devices"]) > 1:
            print("\n  per device (steady_state_devices)", file=out)
            _table(["device", "partitions", f"{kind} busy s", f"{kind} busy %", "kernel busy %"],
                   [[d["device"], d["partitions"], d["gpu_busy_s"], _pct(d["gpu_busy_fraction"]),
                     _pct(d["kernel_busy_fraction"])] for d in rep["steady_devices"]], out)
    else:
        print("  no partitions after the warm-up", file=out)
    print("\nphases (phase_stats_run, seconds)", file=out)
    _table(["task", "phase", "count", "total", "p50", "p95", "max"],
           [[p["task_id"], p["phase"], p["count"], p["total_s"], p["p50_s"], p["p95_s"], p["max_s"]]
            for p in rep["phases"]], out)
    print("\nH2D per partition (h2d_partitions)", file=out)
    _table(["partition", "try", "bytes", "ms", "GB/s", "memory", "flagged", "expected ms", "flagged above ms",
            "host copy bytes"],
           [[h["partition"], h["try_number"], h["bytes"], h["ms"], h["gbps"], h["memory_kind"],
             "yes" if h["flagged"] else "no", h["expected_ms"], h.get("max_ms"), h.get("host_copy_bytes")]
            for h in rep["h2d"]], out)
    tol = rep.get("h2d_tolerance")
    if tol:
        print(f"  check_h2d flags a copy slower than expected x (1 + {tol['tol']:g}) + {tol['slack_ms']:g} ms or "
              f"faster than expected x (1 - {tol['tol_low']:g}) - {tol['slack_ms']:g} ms "
              "(PROOFFLOW_H2D_TOL, _TOL_LOW, _SLACK_MS)", file=out)
    flagged = [h for h in rep["h2d"] if h["flagged"]]
    for h in flagged:
        print(f"  partition {h['partition']}: {h['reason']}", file=out)
    print("\npool and mutex waits per prove_gpu (pool_waits, seconds)", file=out)
    _table(["partition", "try", "pool wait", "mutex wait", "task"],
           [[w["partition"], w["try_number"], w["pool_wait_s"], w["mutex_wait_s"], w["task_s"]]
            for w in rep["pool_waits"]], out)


# "device": the runs compared may have run on a GPU and on the CPU
HEADLINES = [("wall s", "summary", "wall_s"), ("device busy s", "summary", "gpu_busy_s"),
             ("device busy fraction", "summary", "gpu_busy_fraction"), ("pool wait s", "summary", "pool_wait_s"),
             ("flagged partitions", "summary", "flagged_partitions"),
             ("steady partitions", "steady_state", "partitions"), ("steady s/partition", "steady_state", "s_per_partition"),
             ("steady device busy fraction", "steady_state", "gpu_busy_fraction"),
             ("steady kernel busy fraction", "steady_state", "kernel_busy_fraction"),
             ("steady H2D GB/s", "steady_state", "h2d_gbps")]


def comparison(a: dict, b: dict) -> list[dict]:
    out = []
    for label, sec, key in HEADLINES:
        va, vb = a[sec].get(key), b[sec].get(key)
        ratio = (vb / va) if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va else None
        out.append({"figure": label, "a": va, "b": vb, "b_over_a": ratio})
    return out


def print_comparison(a: dict, b: dict, out=None) -> None:
    out = out or sys.stdout
    sa, sb = a["summary"], b["summary"]
    print(f"\ncompare: A = {sa['run_id']} ({run_setup(sa)}), B = {sb['run_id']} ({run_setup(sb)})", file=out)
    _table(["figure", "A", "B", "B/A"], [[c["figure"], c["a"], c["b"], c["b_over_a"]] for c in comparison(a, b)], out)


# -- PNG -------------------------------------------------------------------------------------
def _epoch(t):
    return t.timestamp()


def device_lanes(rows: list[dict]) -> list[str]:
    """The devices a run's device phases ran on, in order: the device panel's lanes."""
    found = {r["device"] for r in rows if r["task_id"].endswith("prove_gpu") and r["phase"] in DEVICE_PHASES}
    return sorted(found, key=str) or ["-"]


def _draw_run(rep: dict, ax_gantt, ax_dev, label: str) -> None:
    rows = rep["timings"]
    t0 = min(_epoch(r["start"]) for r in rows)
    tasks = [r for r in rows if r["phase"] == Phase.TASK]
    lanes: list[tuple] = []
    for r in sorted(tasks, key=lambda r: (r["partition"] is not None, r["partition"] or 0, _epoch(r["start"]))):
        key = ("run",) if r["partition"] is None else ("partition", r["partition"])
        if key not in lanes:
            lanes.append(key)
    seen = set()
    for r in tasks:
        key = ("run",) if r["partition"] is None else ("partition", r["partition"])
        y = lanes.index(key)
        name = r["task_id"].split(".")[-1]
        ax_gantt.barh(y, r["duration_s"], left=_epoch(r["start"]) - t0, height=0.7,
                      color=TASK_COLORS.get(name, "#9aa0a6"), edgecolor="#3c4043", linewidth=0.4,
                      label=name if name not in seen else None)
        seen.add(name)
    ax_gantt.set_yticks(range(len(lanes)))
    ax_gantt.set_yticklabels(["run tasks" if k == ("run",) else f"partition {k[1]}" for k in lanes])
    ax_gantt.invert_yaxis()
    ax_gantt.set_ylabel("task lane")
    ax_gantt.set_title(f"{label}: tasks per partition (Gantt)")
    ax_gantt.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, title="task", title_fontsize=7)
    ax_gantt.grid(axis="x", alpha=0.3)

    # one lane per device the run's device phases ran on
    device_rows = [r for r in rows if r["task_id"].endswith("prove_gpu") and r["phase"] in DEVICE_PHASES]
    devices, kind = device_lanes(rows), rep["device_kind"]
    gpu_tasks = [r for r in tasks if r["task_id"].endswith("prove_gpu")]
    if gpu_tasks:
        lo = min(_epoch(r["start"]) for r in gpu_tasks) - t0
        hi = max(_epoch(r["end"]) for r in gpu_tasks) - t0
        for y in range(len(devices)):
            ax_dev.barh(y, hi - lo, left=lo, height=0.8, color="#e8eaed", edgecolor="#9aa0a6",
                        label=f"{kind} idle" if y == 0 else None)
    seen = set()
    for r in device_rows:
        ax_dev.barh(devices.index(r["device"]), max(r["duration_s"], 1e-6), left=_epoch(r["start"]) - t0, height=0.8,
                    color=PHASE_COLORS[r["phase"]], label=f"busy: {r['phase']}" if r["phase"] not in seen else None)
        seen.add(r["phase"])
    s, st = rep["summary"], rep["steady_state"]
    frac, steady = s.get("gpu_busy_fraction"), st.get("gpu_busy_fraction")
    ax_dev.set_yticks(range(len(devices)))
    ax_dev.set_yticklabels([kind if d == "-" else f"{device_kind(d)} ({d})" for d in devices])
    ax_dev.invert_yaxis()
    ax_dev.set_xlabel("seconds since the run's first task started")
    n = len(devices)
    per_device = ", ".join(f"{100 * d['gpu_busy_fraction']:.1f}%" for d in rep.get("steady_devices", [])
                           if d["gpu_busy_fraction"] is not None)
    ax_dev.set_title(f"{label}: {kind} busy vs idle (busy {_n(s.get('gpu_busy_s'))} s of wall {_n(s.get('wall_s'))} s"
                     + (f" x {n} devices" if n > 1 else "")
                     + (f", {100 * frac:.1f}%" if frac is not None else "")
                     + (f"; steady state {100 * steady:.1f}% over {_n(st.get('window_s'))} s" if steady is not None
                        else "") + (f", per device {per_device}" if n > 1 and per_device else "") + ")")
    ax_dev.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7)
    ax_dev.grid(axis="x", alpha=0.3)


def _draw_h2d(reps: list[tuple[str, dict]], ax) -> None:
    import numpy as np
    from matplotlib.patches import Patch
    width = 0.8 / len(reps)
    for i, (label, rep) in enumerate(reps):
        h2d = rep["h2d"]
        xs = np.array([h["partition"] for h in h2d], dtype=float) + (i - (len(reps) - 1) / 2) * width
        ax.bar(xs, [h["ms"] for h in h2d], width=width * 0.95,
               color=[KIND_COLORS.get(h["memory_kind"], "#9aa0a6") for h in h2d],
               hatch=None, edgecolor="#202124", linewidth=0.5)
        for x, h in zip(xs, h2d):
            if h["flagged"]:
                ax.bar(x, h["ms"], width=width * 0.95, fill=False, hatch="///", edgecolor="#202124", linewidth=0)
            if h["expected_ms"] is not None:
                ax.plot([x - width / 2, x + width / 2], [h["expected_ms"]] * 2, color="#202124", linewidth=2)
            if h.get("max_ms") is not None:
                ax.plot([x - width / 2, x + width / 2], [h["max_ms"]] * 2, color="#d93025", linewidth=1.5,
                        linestyle="--")
            ax.annotate(label if len(reps) > 1 else f"{h['gbps']:.2f} GB/s" if h["gbps"] else "",
                        (x, h["ms"]), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("partition")
    ax.set_ylabel("H2D time (ms)")
    ax.set_title("H2D per partition, coloured by host memory kind" + (" (A | B)" if len(reps) > 1 else ""))
    kinds = sorted({h["memory_kind"] for _, rep in reps for h in rep["h2d"]}) or ["pinned"]
    handles = [Patch(facecolor=KIND_COLORS.get(k, "#9aa0a6"), edgecolor="#202124", label=f"{k} memory") for k in kinds]
    handles += [Patch(facecolor="white", edgecolor="#202124", hatch="///", label="flagged by check_h2d")]
    from matplotlib.lines import Line2D
    handles.append(Line2D([0], [0], color="#202124", linewidth=2, label="expected: bytes / calibrated rate"))
    tol = next((rep.get("h2d_tolerance") for _, rep in reps if rep.get("h2d_tolerance")), None)
    if tol:  # a bar under the dashed line is within check_h2d's tolerance: not flagged, however far above expected
        handles.append(Line2D([0], [0], color="#d93025", linewidth=1.5, linestyle="--",
                              label=f"flagged above: expected x {1 + tol['tol']:g} + {tol['slack_ms']:g} ms\n"
                                    f"(PROOFFLOW_H2D_TOL {tol['tol']:g}, _SLACK_MS {tol['slack_ms']:g})"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    parts = sorted({h["partition"] for _, rep in reps for h in rep["h2d"]})
    ax.set_xticks(parts)
    ax.grid(axis="y", alpha=0.3)


def render_png(path, reps: list[tuple[str, dict]]) -> None:
    import matplotlib.pyplot as plt
    fig = timeline_figure(reps)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def timeline_figure(reps: list[tuple[str, dict]]):
    """The timeline of ``reps`` ((label, run_report) pairs) as a matplotlib figure (Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    nrun = len(reps)
    heights = []
    for _, rep in reps:
        heights += [max(2.0, 0.45 * (1 + len({r["partition"] for r in rep["timings"]}))),
                    0.6 + 0.4 * len(device_lanes(rep["timings"]))]
    heights.append(2.6)
    fig, axes = plt.subplots(len(heights), 1, figsize=(12, sum(heights) + 1.2),
                             gridspec_kw={"height_ratios": heights})
    for i, (label, rep) in enumerate(reps):
        _draw_run(rep, axes[2 * i], axes[2 * i + 1], label)
        axes[2 * i].set_xlabel("seconds since the run's first task started")
    if nrun > 1:
        hi = max(ax.get_xlim()[1] for ax in axes[:-1])
        for ax in axes[:-1]:
            ax.set_xlim(0, hi)
    _draw_h2d(reps, axes[-1])
    title = " vs ".join(f"{label} = {rep['summary']['run_id']} ({run_setup(rep['summary'], reason=False)})"
                        for label, rep in reps)
    fig.suptitle(f"proofflow report: {title}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))  # room for the suptitle
    return fig


# -- the CLI subcommand (registered by proofflow.cli) ----------------------------------------
def add_parser(sub) -> None:
    r = sub.add_parser("report", help="a run's report from the timing store's views (text, PNG timeline)",
                       description="Print a run's report from the reporting views; --png writes a timeline "
                                   "(Gantt per partition, each device busy vs idle, H2D bars by memory kind); "
                                   "--compare adds another run (e.g. pageable vs pinned staging).")
    r.add_argument("run_id")
    r.add_argument("--dag-id", default="proof_run")
    r.add_argument("--png", help="write the timeline PNG here")
    r.add_argument("--compare", metavar="OTHER_RUN", help="a second run to compare with (B)")
    r.add_argument("--warmup-partitions", type=float, help="steady state: leave out the first K partitions to reach "
                                                           "a device (default: table report_settings, 1)")
    r.add_argument("--warmup-seconds", type=float, help="steady state: leave out device work starting in the first "
                                                        "S seconds (default: table report_settings, 0)")
    r.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    r.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from proofflow.timing.store import open_store
    store = open_store()
    reps = []
    for label, run_id in (("A", args.run_id), ("B", args.compare)):
        if run_id is None:
            continue
        rep = run_report(store, args.dag_id, run_id, args.warmup_partitions, args.warmup_seconds)
        if rep is None:
            print(f"error: no run {run_id!r} of {args.dag_id} in the timing store", file=sys.stderr)
            return 2
        reps.append((label, rep))
    if args.json:
        doc = {"runs": {label: {k: v for k, v in rep.items() if k != "timings"} for label, rep in reps}}
        if len(reps) > 1:
            doc["compare"] = comparison(reps[0][1], reps[1][1])
        print(json.dumps(doc, default=str))
    else:
        for i, (label, rep) in enumerate(reps):
            if len(reps) > 1:
                print(f"=== {label} ===")
            print_report(rep)
            print()
        if len(reps) > 1:
            print_comparison(reps[0][1], reps[1][1])
    if args.png:
        if len(reps) == 1:
            reps = [("run", reps[0][1])]
        render_png(args.png, reps)
        print(f"wrote {args.png}", file=sys.stderr)
    return 0
