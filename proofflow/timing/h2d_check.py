"""The H2D check of a proof run, with Great Expectations 1.x (ephemeral context, pandas data
source, a whole-dataframe batch definition per table, one suite + ValidationDefinition +
Checkpoint each, data docs built by the checkpoint's UpdateDataDocsAction).

Three tables of the run are validated:

``h2d``         one row per partition (its latest attempt's H2D transfer), with the
                reference rate calibrated for the attempt's host and device at its size
                (``proofflow.timing.calibrate``): expected_ms = bytes / rate, allowed range
                [expected * (1 - tol_low), expected * (1 + tol)], floor_gbps. Expectations:
                expected_ms not null (a calibration exists), measured_ms within the range
                (ExpectColumnPairValuesAToBeGreaterThanB both ways), GB/s >= floor,
                memory kind pinned (``require_pinned``), partitions all distinct.
``timings``     every task_timings row of the run: no nulls, end >= start, duration >= 0,
                partition ids within 0..N-1.
``partitions``  one row per expected partition 0..N-1: how many task rows of synthesize,
                stage, prove_gpu and finalize_partition and how many H2D rows it has (>= 1).

A failed expectation's unexpected rows name their partition (result_format COMPLETE with
``unexpected_index_column_names``); each flagged partition becomes one ``h2d_flags`` row with
the reasons (measured vs expected). GX's result JSON goes to ``<report dir>/check_h2d.json``
and table ``check_results``; the data docs to ``<report dir>/data_docs/index.html``.

Settings (operator argument, else env, else Airflow Variable, else default):
    tol            PROOFFLOW_H2D_TOL            / proofflow_h2d_tol             2.0
    tol_low        PROOFFLOW_H2D_TOL_LOW        / proofflow_h2d_tol_low         0.9
    floor_gbps     PROOFFLOW_H2D_FLOOR_GBPS     / proofflow_h2d_floor_gbps      (none: fraction)
    floor_fraction PROOFFLOW_H2D_FLOOR_FRACTION / proofflow_h2d_floor_fraction  0.25 (of the reference)
    slack_ms       PROOFFLOW_H2D_SLACK_MS       / proofflow_h2d_slack_ms        2.0: widens the range by this
                   much both ways (timer and scheduling jitter), and transfers expected to take
                   less than it get no GB/s floor (too short for a rate to mean anything). So the
                   time check sees pageable staging from partitions of about 2^18 up (a/b/c of
                   24 MiB on the H200: ~0.45 ms pinned, ~4 ms pageable); below that, only
                   require_pinned does
    require_pinned PROOFFLOW_H2D_REQUIRE_PINNED / proofflow_h2d_require_pinned  false: also flag H2D
                   from pageable memory whatever its time (on the CPU backend the copy does not
                   depend on the memory kind, so only this check sees a pageable CPU run)
    auto_calibrate PROOFFLOW_H2D_AUTO_CALIBRATE / proofflow_h2d_auto_calibrate  true (calibrate this
                   host and device when no calibration is stored, up to the run's size)
    reports        PROOFFLOW_REPORTS: report dirs root ($PROOFFLOW_HOME/reports)
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
from pathlib import Path

from proofflow.prover import files, layout
from proofflow import settings

log = logging.getLogger(__name__)
# GX's import logs ~200 INFO lines about its own API docs registry ("Skipping registering
# function ..."); they said nothing about a check and filled every check_h2d log (and, with
# the preload, the scheduler's)
logging.getLogger("great_expectations._docs_decorators").setLevel(logging.WARNING)

CHECK_NAME = "check_h2d"
PARTITION_TASKS = ("synthesize", "stage", "prove_gpu", "finalize_partition")


@dataclasses.dataclass
class H2DCheckConfig:
    tol: float = 2.0
    tol_low: float = 0.9
    floor_gbps: float | None = None
    floor_fraction: float = 0.25
    slack_ms: float = 2.0
    require_pinned: bool = False
    auto_calibrate: bool = True

    @classmethod
    def resolve(cls, variable=None, **overrides) -> "H2DCheckConfig":
        """Each field: the override if not None, else env PROOFFLOW_H2D_<NAME>, else
        ``variable(f"proofflow_h2d_{name}")`` (the check task passes Airflow's Variables), else
        the default."""
        out, env = {}, settings.current()
        for f in dataclasses.fields(cls):
            v = overrides.get(f.name)
            if v is None:
                v = getattr(env, f"h2d_{f.name}")
            if v is None and variable is not None:
                v = variable(f"proofflow_h2d_{f.name}")
            if v is None or v == "":
                continue
            out[f.name] = settings.SWITCH.parse(str(v)) if f.type in ("bool", bool) else float(v)
        cfg = cls(**out)
        if cfg.tol <= 0 or not 0 <= cfg.tol_low <= 1:
            raise ValueError(f"tolerances out of range: tol {cfg.tol} (> 0), tol_low {cfg.tol_low} (0..1)")
        return cfg


# -- the tables ------------------------------------------------------------------------------
def _latest_attempts(rows: list[dict]) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for r in rows:
        p = r["partition"]
        if p is None:
            continue
        if p not in out or r["try_number"] > out[p]["try_number"]:
            out[p] = r
    return out


def h2d_rows(store, dag_id: str, run_id: str, cfg: H2DCheckConfig, calibrate_missing=None) -> list[dict]:
    """The run's H2D transfers (latest attempt per partition) with their expected figures.
    ``calibrate_missing(host, device, max_bytes)``: called once per (host, device) without
    a stored calibration (auto-calibration); returns the new calibration rows or []."""
    from proofflow.timing.calibrate import reference_gbps
    rows = store.query("SELECT * FROM h2d_partitions WHERE dag_id = :d AND run_id = :r", {"d": dag_id, "r": run_id})
    latest = _latest_attempts(rows)
    calibs: dict[tuple, list] = {}
    for p in sorted(latest):
        key = (latest[p]["host"], latest[p]["device"])
        if key not in calibs:
            calibs[key] = store.calibration(*key) if None not in key else []
            if not calibs[key] and calibrate_missing is not None and None not in key:
                calibs[key] = calibrate_missing(*key, max(r["bytes"] for r in latest.values())) or []
    out = []
    for p in sorted(latest):
        r = latest[p]
        ref = reference_gbps(calibs.get((r["host"], r["device"]), []), r["bytes"])
        expected = r["bytes"] / ref / 1e6 if ref else None
        floor = cfg.floor_gbps if cfg.floor_gbps is not None else (cfg.floor_fraction * ref if ref else None)
        if expected is not None and expected < cfg.slack_ms:
            floor = 0.0
        out.append(dict(partition=p, try_number=r["try_number"], host=r["host"], device=r["device"],
                        bytes=int(r["bytes"]), measured_ms=float(r["ms"]), gbps=r["gbps"],
                        memory_kind=r["memory_kind"], reference_gbps=ref, expected_ms=expected,
                        min_ms=expected * (1 - cfg.tol_low) - cfg.slack_ms if expected is not None else None,
                        max_ms=expected * (1 + cfg.tol) + cfg.slack_ms if expected is not None else None,
                        floor_gbps=floor))
    return out


def timing_rows(store, dag_id: str, run_id: str) -> list[dict]:
    def naive(t):  # UTC, naive: GX compares the columns as numpy datetimes
        return t.replace(tzinfo=None) if t is not None else None
    return [dict(task_id=r["task_id"], map_index=r["map_index"], try_number=r["try_number"], phase=r["phase"],
                 partition=r["partition"], host=r["host"], start=naive(r["start"]), end=naive(r["end"]),
                 duration_s=r["duration_s"]) for r in store.timings(dag_id, run_id)]


def partition_rows(timings: list[dict], h2d: list[dict], n: int) -> list[dict]:
    out = []
    for p in range(n):
        row = {"partition": p}
        for t in PARTITION_TASKS:
            row[f"{t}_rows"] = sum(1 for r in timings if r["partition"] == p and r["phase"] == "task"
                                   and r["task_id"].split(".")[-1] == t)
        row["h2d_rows"] = sum(1 for r in h2d if r["partition"] == p)
        out.append(row)
    return out


# -- Great Expectations ----------------------------------------------------------------------
def _suites(cfg: H2DCheckConfig, n: int):
    import great_expectations.expectations as gxe
    parts = list(range(n))
    h2d = [
        gxe.ExpectColumnValuesToNotBeNull(column="measured_ms", meta={"check": "measured"}),
        gxe.ExpectColumnValuesToNotBeNull(column="expected_ms", meta={"check": "calibration"}),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="max_ms", column_B="measured_ms", or_equal=True,
                                                    ignore_row_if="either_value_is_missing",
                                                    meta={"check": "slow"}),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="measured_ms", column_B="min_ms", or_equal=True,
                                                    ignore_row_if="either_value_is_missing",
                                                    meta={"check": "fast"}),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="gbps", column_B="floor_gbps", or_equal=True,
                                                    ignore_row_if="either_value_is_missing",
                                                    meta={"check": "floor"}),
        gxe.ExpectColumnValuesToBeUnique(column="partition", meta={"check": "unique"}),
        gxe.ExpectColumnValuesToBeInSet(column="partition", value_set=parts, meta={"check": "partition_range"}),
    ]
    if cfg.require_pinned:
        h2d.append(gxe.ExpectColumnValuesToBeInSet(column="memory_kind", value_set=["pinned"],
                                                   meta={"check": "memory_kind"}))
    timings = [gxe.ExpectColumnValuesToNotBeNull(column=c, meta={"check": "null"})
               for c in ("task_id", "phase", "try_number", "host", "start", "end", "duration_s")]
    timings += [
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="end", column_B="start", or_equal=True,
                                                    meta={"check": "order"}),
        gxe.ExpectColumnValuesToBeBetween(column="duration_s", min_value=0, meta={"check": "negative"}),
        gxe.ExpectColumnValuesToBeInSet(column="partition", value_set=parts, meta={"check": "partition_range"}),
    ]
    partitions = [gxe.ExpectColumnValuesToBeBetween(column=f"{t}_rows", min_value=1, meta={"check": f"missing_{t}"})
                  for t in (*PARTITION_TASKS, "h2d")]
    return {"h2d": (h2d, ["partition"]), "timings": (timings, ["partition", "task_id", "phase", "map_index"]),
            "partitions": (partitions, ["partition"])}


def run_gx(frames: dict, cfg: H2DCheckConfig, n: int, docs_dir: Path | None) -> dict:
    """Validate each frame with its suite through a Checkpoint; returns name -> CheckpointResult."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction
    from great_expectations.data_context.types.base import ProgressBarsConfig
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    actions = []
    if docs_dir is not None:
        context.add_data_docs_site(site_name="proofflow", site_config={
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"}})
        actions = [UpdateDataDocsAction(name="update_data_docs", site_names=["proofflow"])]
    source = context.data_sources.add_pandas("proofflow_timing")
    results = {}
    for name, (expectations, index_columns) in _suites(cfg, n).items():
        batch_def = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe(f"{name}_of_run")
        suite = context.suites.add(gx.ExpectationSuite(name=f"{CHECK_NAME}_{name}"))
        for e in expectations:
            suite.add_expectation(e)
        vd = context.validation_definitions.add(gx.ValidationDefinition(name=f"{CHECK_NAME}_{name}", data=batch_def,
                                                                        suite=suite))
        cp = context.checkpoints.add(gx.Checkpoint(
            name=f"{CHECK_NAME}_{name}", validation_definitions=[vd], actions=actions,
            result_format={"result_format": "COMPLETE", "unexpected_index_column_names": index_columns}))
        results[name] = cp.run(batch_parameters={"dataframe": frames[name]})
    return results


def _failures(result):
    """(check, unexpected index rows, observed) of each failed expectation of a CheckpointResult."""
    for vr in result.run_results.values():
        for r in vr.results:
            if not r.success:
                res = r.result or {}
                yield (r.expectation_config.meta or {}).get("check"), res.get("unexpected_index_list") or [], res


def _f(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _reason(check: str, row: dict | None, cfg: H2DCheckConfig, extra: dict | None = None) -> str:
    r = row or {}
    if check in ("slow", "fast", "floor") and r.get("expected_ms") is None:
        return f"check {check} failed"
    if check == "slow":
        return (f"H2D of {r['bytes']} B took {_f(r['measured_ms'])} ms, expected {_f(r['expected_ms'])} ms at the "
                f"calibrated {_f(r['reference_gbps'], 2)} GB/s (at most {_f(r['max_ms'])} ms: tolerance +{cfg.tol:g}, "
                f"slack {cfg.slack_ms:g} ms): "
                f"{r['measured_ms'] / r['expected_ms']:.1f}x the expected time")
    if check == "fast":
        return (f"H2D of {r['bytes']} B took {_f(r['measured_ms'])} ms, expected {_f(r['expected_ms'])} ms (at least "
                f"{_f(r['min_ms'])} ms: tolerance -{cfg.tol_low:g}, slack {cfg.slack_ms:g} ms): faster than the calibration allows; recalibrate")
    if check == "floor":
        return f"H2D at {_f(r['gbps'], 2)} GB/s, below the floor of {_f(r['floor_gbps'], 2)} GB/s"
    if check == "calibration":
        return (f"no calibration for host {r.get('host')!r} device {r.get('device')!r}: run `proofflow calibrate` "
                "on that host")
    if check == "memory_kind":
        return f"H2D from {r.get('memory_kind')} host memory (pinned expected)"
    if check == "measured":
        return "H2D row without a duration"
    if check and check.startswith("missing_"):
        what = check[len("missing_"):]
        return f"no {what} row for this partition" if what == "h2d" else f"no {what} task row for this partition"
    e = extra or {}
    if check == "order":
        return f"timing row {e.get('task_id')}/{e.get('phase')} ends before it starts"
    if check == "negative":
        return f"timing row {e.get('task_id')}/{e.get('phase')} has a negative duration"
    if check == "null":
        return "timing row with a null column"
    if check == "partition_range":
        return "partition id outside the run's partitions"
    if check == "unique":
        return "more than one H2D row for the partition's latest attempt"
    return f"check {check} failed"


def check_run(store, dag_id: str, run_id: str, cfg: H2DCheckConfig | None = None, out_dir: Path | None = None,
              try_number: int = 1, calibrate_missing=None, data_docs: bool = True) -> dict:
    """Validate a run; write its flags (replacing earlier ones) and GX's result. Returns
    ``{"success", "flags", "evaluated", "report_dir", "result_path", "data_docs"}``."""
    import pandas as pd
    cfg = cfg or H2DCheckConfig.resolve()
    run = store.run(dag_id, run_id) or {}
    h2d = h2d_rows(store, dag_id, run_id, cfg, calibrate_missing)
    timings = timing_rows(store, dag_id, run_id)
    n = run.get("partitions")
    if n is None:
        n = 1 + max([r["partition"] for r in timings if r["partition"] is not None], default=-1)
    parts = partition_rows(timings, h2d, n)
    h2d_cols = ["partition", "try_number", "host", "device", "bytes", "measured_ms", "gbps", "memory_kind",
                "reference_gbps", "expected_ms", "min_ms", "max_ms", "floor_gbps"]
    frames = {
        "h2d": pd.DataFrame(h2d, columns=h2d_cols).astype({c: "float64" for c in (
            "measured_ms", "gbps", "reference_gbps", "expected_ms", "min_ms", "max_ms", "floor_gbps")}),
        "timings": pd.DataFrame(timings, columns=["task_id", "map_index", "try_number", "phase", "partition", "host",
                                                  "start", "end", "duration_s"]),
        "partitions": pd.DataFrame(parts, columns=["partition", *(f"{t}_rows" for t in PARTITION_TASKS), "h2d_rows"]),
    }
    out_dir = Path(out_dir) if out_dir else layout.report_dir(dag_id, run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    docs_dir = out_dir / "data_docs" if data_docs else None
    results = run_gx(frames, cfg, n, docs_dir)

    by_part = {r["partition"]: r for r in h2d}
    reasons: dict[int | None, list[str]] = {}
    for name, result in results.items():
        for check, idx_rows, _res in _failures(result):
            if not idx_rows:  # an expectation over the whole column (e.g. a set): run level
                reasons.setdefault(None, []).append(f"{name}: {_reason(check, None, cfg)}")
                continue
            for ix in idx_rows:
                p = ix.get("partition")
                p = None if p is None or (isinstance(p, float) and math.isnan(p)) else int(p)
                text = _reason(check, by_part.get(p) if name == "h2d" else None, cfg, extra=ix)
                if p is not None and p not in range(n):
                    p, text = None, f"partition {p}: {text}"
                if text not in reasons.setdefault(p, []):
                    reasons[p].append(text)
    flags = []
    for p in sorted(reasons, key=lambda x: -1 if x is None else x):
        r = by_part.get(p, {})
        flags.append(dict(partition=p, try_number=r.get("try_number"), bytes=r.get("bytes"),
                          measured_ms=r.get("measured_ms"), expected_ms=r.get("expected_ms"), gbps=r.get("gbps"),
                          floor_gbps=r.get("floor_gbps"), reason="; ".join(reasons[p])))
    store.replace_flags(dag_id, run_id, flags)

    success = all(res.success for res in results.values()) and not flags
    doc = {"check": CHECK_NAME, "dag_id": dag_id, "run_id": run_id, "success": success,
           "config": dataclasses.asdict(cfg), "partitions": n, "evaluated": h2d,
           "flags": flags, "great_expectations": {name: res.describe_dict() for name, res in results.items()}}
    text = json.dumps(doc, default=str, indent=1)
    result_path = out_dir / "check_h2d.json"
    files.write_bytes(result_path, text.encode())
    index = docs_dir / "index.html" if docs_dir is not None else None
    store.record_check_result(dag_id=dag_id, run_id=run_id, check_name=CHECK_NAME, try_number=try_number,
                              success=success, evaluated=len(h2d), flagged=len(flags), result_json=text,
                              report_dir=str(out_dir))
    return {"success": success, "flags": flags, "evaluated": h2d, "partitions": n, "report_dir": str(out_dir),
            "result_path": str(result_path),
            "data_docs": str(index) if index is not None and index.exists() else None}
