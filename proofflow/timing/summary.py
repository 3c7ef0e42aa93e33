"""A run's summary from the timing store: the headline figures, the dag run note (markdown,
within the REST API's 1000 characters) and the HTML report page the UI plugin serves.

Figures: state, partitions, proofs verified, the backend and staging that ran (and what the
run asked for where they differ), wall time, the device's busy fraction (named GPU or CPU by
what ran), H2D GB/s per partition (its latest attempt), flagged partitions (``h2d_flags``, with
check_h2d's reason).
"""
from __future__ import annotations

import html
from dataclasses import asdict
from urllib.parse import quote

from proofflow.spec import RunFailure
from proofflow.timing.requests import Served, served

NOTE_MAX_CHARS = 1000  # DAGRunPatchBody.note's max_length in Airflow 3.3


def report_path(dag_id: str, run_id: str, prefix: str = "") -> str:
    """The plugin's report page of a run (``prefix``: the UI's base path, '' at the root)."""
    return f"{prefix.rstrip('/')}/proofflow/runs/{quote(dag_id, safe='')}/{quote(run_id, safe='')}"


def run_figures(store, dag_id: str, run_id: str) -> dict | None:
    """The summary figures of one run, or None when the timing store has no such run."""
    from proofflow.timing import report
    rep = report.run_report(store, dag_id, run_id)
    if rep is None:
        return None
    s = rep["summary"]
    latest: dict[int, dict] = {}
    for h in rep["h2d"]:  # ordered by partition, try: the last one per partition wins
        latest[h["partition"]] = h
    flags = store.flags(dag_id, run_id)
    flagged = sorted({f["partition"] for f in flags if f["partition"] is not None})
    row = store.run(dag_id, run_id) or {}
    holder = served(store, dag_id, row)
    return {
        "dag_id": dag_id, "run_id": run_id, "state": s["state"], "circuit": s["circuit"], "log2": s["log2"],
        "curve": s["curve"], "backend": s["backend"], "backend_requested": s["backend_requested"], "staging": s["staging"],
        "staging_requested": s["staging_requested"], "partitions": s["partitions"],
        "proofs_verified": s["proofs_verified"], "wall_s": s["wall_s"], "device_kind": rep["device_kind"],
        "devices": s["devices"], "gpu_busy_s": s["gpu_busy_s"], "gpu_busy_fraction": s["gpu_busy_fraction"],
        "h2d": [{"partition": p, "gbps": h["gbps"], "ms": h["ms"], "bytes": h["bytes"],
                 "memory_kind": h["memory_kind"], "flagged": bool(h["flagged"])} for p, h in sorted(latest.items())],
        "flagged_partitions": flagged,
        "flags": [{"partition": f["partition"], "reason": f["reason"]} for f in flags],
        "error": rep["error"],
        "request_id": row.get("request_id"),
        "served_by": asdict(holder) if holder else None,
        "report": rep,
    }


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _percent(fraction) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def _h2d_list(h2d: list[dict]) -> list[str]:
    return [f"p{h['partition']} {_num(h['gbps'], '.2f')}" + ("*" if h["flagged"] else "") for h in h2d]


def note_markdown(fig: dict, link_prefix: str = "") -> str:
    """The dag run note: markdown, at most NOTE_MAX_CHARS. Its first line carries the
    headline figures (the run page shows only that line until the note is opened). When the
    per-partition H2D list does not fit, it is cut and says how many the full report adds."""
    from proofflow.timing.report import run_heading
    if fig.get("served_by"):
        return _duplicate_note(fig["served_by"], report_path(fig["dag_id"], fig["served_by"]["run_id"], link_prefix))
    page = report_path(fig["dag_id"], fig["run_id"], link_prefix)
    flagged = ", ".join(map(str, fig["flagged_partitions"])) or "none"
    if any(f["partition"] is None for f in fig["flags"]):
        flagged += " (and run-level checks)"
    head = [
        f"**Proof run {fig['state'] or 'unknown'}**: {fig['proofs_verified']}/{_num(fig['partitions'], 'd')} proofs "
        f"verified · {fig['device_kind']} busy {_percent(fig['gpu_busy_fraction'])} · flagged partitions: {flagged}",
        "",
        f"{run_heading(fig, partitions=True)}, wall {_num(fig['wall_s'], '.2f')} s",
        "",
    ] + ([f"Error: {fig['error']}", ""] if fig.get("error") else [])
    tail = ["", f"[Full report]({page}) · [Timeline PNG]({page}/timeline.png)"]
    items = _h2d_list(fig["h2d"])
    label = "H2D GB/s per partition (* flagged): "
    if not items:
        line = "H2D: no transfers recorded"
    else:
        fixed = len("\n".join(head + tail)) + 1
        shown = items
        while True:
            more = len(items) - len(shown)
            line = label + ", ".join(shown) + (f", … {more} more in the full report" if more else "")
            if fixed + len(line) <= NOTE_MAX_CHARS or not shown:
                break
            shown = shown[:-1]
    text = "\n".join(head + [line] + tail)
    return text if len(text) <= NOTE_MAX_CHARS else text[:NOTE_MAX_CHARS - 1] + "…"  # a very long run id


def _duplicate_note(holder: dict, page: str) -> str:
    """The note of a run whose request an earlier run holds (``requests.claim``)."""
    bundle = f"Bundle: `{holder['bundle_dir']}`\n\n" if holder.get("bundle_dir") else ""
    text = (f"**Request `{holder['request_id']}` already served** by run {holder['run_id']} ({holder['state']}): "
            f"not proved again.\n\n{bundle}[Its report]({page})")
    return text if len(text) <= NOTE_MAX_CHARS else text[:NOTE_MAX_CHARS - 1] + "…"


def html_page(fig: dict, png_src: str) -> str:
    """The report page of a run: the figures, H2D per partition, flags and phase statistics
    as tables, and the timeline PNG (``png_src``: its URL, or a data: URL to inline it)."""
    from proofflow.timing.report import run_heading
    e = html.escape
    rep, kind = fig["report"], fig["device_kind"]
    steady = rep["steady_state"]

    def table(headers, rows):
        head = "".join(f"<th>{e(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    summary = table(["state", "partitions", "proofs verified", "wall s", f"{kind} busy s", f"{kind} busy",
                     "steady H2D GB/s", "flagged partitions"],
                    [[fig["state"], _num(fig["partitions"], "d"), fig["proofs_verified"], _num(fig["wall_s"], ".2f"),
                      _num(fig["gpu_busy_s"], ".3f"), _percent(fig["gpu_busy_fraction"]),
                      _num(steady.get("h2d_gbps"), ".2f"),
                      ", ".join(map(str, fig["flagged_partitions"])) or "none"]])
    h2d = table(["partition", "bytes", "ms", "GB/s", "memory", "flagged"],
                [[h["partition"], h["bytes"], _num(h["ms"], ".3f"), _num(h["gbps"], ".2f"), h["memory_kind"],
                  "yes" if h["flagged"] else "no"] for h in fig["h2d"]])
    flags = table(["partition", "reason"], [["run" if f["partition"] is None else f["partition"], f["reason"]]
                                            for f in fig["flags"]]) if fig["flags"] else "<p>No partition flagged.</p>"
    phases = table(["task", "phase", "count", "total s", "p50 s", "max s"],
                   [[p["task_id"], p["phase"], p["count"], _num(p["total_s"], ".3f"), _num(p["p50_s"], ".3f"),
                     _num(p["max_s"], ".3f")] for p in rep["phases"]])
    title = f"Proof run {fig['run_id']}"
    error = f'<p id="proofflow-error"><b>Error:</b> {e(fig["error"])}</p>' if fig.get("error") else ""
    if fig.get("served_by"):
        error += f'<p id="proofflow-served-by">{e(Served(**fig["served_by"]).line())}</p>'
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1rem; color: #202124; }}
table {{ border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }}
th, td {{ border: 1px solid #dadce0; padding: 0.2rem 0.6rem; text-align: right; }}
th {{ background: #f1f3f4; }} img {{ max-width: 100%; }}
</style></head><body>
<h2>{e(title)}</h2>
<p>{e(run_heading(fig))}</p>{error}
<section id="proofflow-summary"><h3>Summary</h3>{summary}</section>
<section id="proofflow-h2d"><h3>H2D per partition</h3>{h2d}</section>
<section id="proofflow-flags"><h3>Flagged by check_h2d</h3>{flags}</section>
<section id="proofflow-timeline"><h3>Timeline</h3><img alt="timeline of {e(fig['run_id'])}" src="{e(png_src)}"></section>
<section id="proofflow-phases"><h3>Phases</h3>{phases}</section>
</body></html>
"""


def summarize(store, dag_id: str, run_id: str) -> dict:
    """A run's row, its phase statistics and its transfers per direction (what `proofflow run`
    and `proofflow summary` print)."""
    run = store.run(dag_id, run_id) or {}
    phases = store.phase_summary(dag_id, run_id)
    transfers = store.transfers(dag_id, run_id)
    by_dir: dict[str, dict] = {}
    for t in transfers:
        d = by_dir.setdefault(t["direction"], {"count": 0, "bytes": 0, "seconds": 0.0, "memory_kind": t["memory_kind"]})
        d["count"] += 1
        d["bytes"] += t["bytes"]
        d["seconds"] += t["duration_s"]
    for d in by_dir.values():
        d["gbps"] = round(d["bytes"] / d["seconds"] / 1e9, 3) if d["seconds"] > 0 else None
        d["seconds"] = round(d["seconds"], 6)
    failure = RunFailure.from_row(run)
    return {
        "dag_id": dag_id, "run_id": run_id, "state": run.get("state"),
        "circuit": run.get("circuit"), "log2": run.get("log2"), "curve": run.get("curve"),
        "partitions": run.get("partitions"),
        "backend": run.get("backend"), "backend_requested": run.get("backend_requested"),
        "staging": run.get("staging"), "staging_requested": run.get("staging_requested"), "seed": run.get("seed"),
        "proofs_verified": run.get("proofs_verified") or 0, "wall_s": _wall_s(run, store.timings(dag_id, run_id)),
        "bundle_dir": run.get("bundle_dir"),
        "phases": [{"task": p["task_id"], "phase": p["phase"], "count": p["count"],
                    "total_s": round(p["total_s"], 6), "mean_s": round(p["mean_s"], 6), "max_s": round(p["max_s"], 6)}
                   for p in phases],
        "transfers": by_dir,
        "error": failure.line() if failure else None,
        "failure": asdict(failure) if failure else None,
        "request_id": run.get("request_id"),
        "duplicate_of": run.get("duplicate_of"),
    }


def _wall_s(run: dict, timings: list[dict]) -> float | None:
    """finalize_run's wall time; a run that did not get there: from its start (else its first
    task's) to its end (else its last task's), as the run_summary view counts it."""
    if run.get("wall_s") is not None:
        return run["wall_s"]
    start = run.get("started_at") or min((t["start"] for t in timings), default=None)
    end = run.get("finished_at") or max((t["end"] for t in timings), default=None)
    return None if start is None or end is None else round((end - start).total_seconds(), 3)
