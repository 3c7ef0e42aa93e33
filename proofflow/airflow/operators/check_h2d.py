"""``CheckH2DOperator``: the ``check_h2d`` task of proof_run (after ``finalize_run``: the proofs
are verified and published before it runs, so a failed check never loses a proof).

It validates the run's H2D transfers and timing rows (``proofflow.timing.h2d_check``), writes
the flags and GX's result, and fails (no retry: the data would not change) when anything is
flagged; its ``on_failure_callback`` (by default ``proofflow.airflow.notifications.alerts.default_notifiers()``:
email + webhook, each configured by an Airflow connection) sends the alert.
"""
from __future__ import annotations

import logging
import math

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from proofflow.airflow.hooks.connections import variable

log = logging.getLogger(__name__)


def auto_calibrator(store):
    """Calibrate (host, device) now when it is this host and the device is usable here."""
    def calibrate_missing(host, device, max_bytes):
        from proofflow.timing.calibrate import calibrate, host_name
        if host != host_name():
            log.warning("no calibration for host %s and it is not this host (%s): not calibrating", host, host_name())
            return []
        if device.startswith("cuda"):
            from proofflow.prover import device as gpu
            if not gpu.available():
                return []
        elif device != "cpu":
            return []
        max_log2 = max(8, math.ceil(math.log2(max(max_bytes, 1) / 96)))
        log.info("no calibration for %s/%s: calibrating now (2^8..2^%d)", host, device, max_log2)
        return calibrate(device, 8, max_log2, reps=5, host=host, store=store)
    return calibrate_missing


class CheckH2DOperator(BaseOperator):
    template_fields = ("tol", "tol_low", "floor_gbps", "floor_fraction", "slack_ms", "require_pinned")
    ui_color = "#fef7e0"

    def __init__(self, *, tol=None, tol_low=None, floor_gbps=None, floor_fraction=None, slack_ms=None,
                 require_pinned=None, auto_calibrate=None, notifiers=None, **kwargs):
        if notifiers is None:
            from proofflow.airflow.notifications.alerts import default_notifiers
            notifiers = default_notifiers()
        if notifiers:
            kwargs.setdefault("on_failure_callback", notifiers)
        kwargs.setdefault("retries", 0)
        super().__init__(**kwargs)
        self.tol, self.tol_low, self.floor_gbps, self.floor_fraction = tol, tol_low, floor_gbps, floor_fraction
        self.slack_ms, self.require_pinned, self.auto_calibrate = slack_ms, require_pinned, auto_calibrate

    def execute(self, context):
        from proofflow.timing.h2d_check import H2DCheckConfig, check_run
        from proofflow.airflow.hooks.timing import TimingStoreHook
        ti = context["ti"]
        store = TimingStoreHook().get_store()
        cfg = H2DCheckConfig.resolve(variable=variable, tol=self.tol, tol_low=self.tol_low, floor_gbps=self.floor_gbps,
                                     floor_fraction=self.floor_fraction, slack_ms=self.slack_ms,
                                     require_pinned=self.require_pinned, auto_calibrate=self.auto_calibrate)
        out = check_run(store, ti.dag_id, ti.run_id, cfg, try_number=int(ti.try_number or 1),
                        calibrate_missing=auto_calibrator(store) if cfg.auto_calibrate else None)
        log.info("check_h2d %s: %d partition(s) evaluated, %d flag(s); result %s; data docs %s", ti.run_id,
                 len(out["evaluated"]), len(out["flags"]), out["result_path"], out["data_docs"])
        for r in out["evaluated"]:
            log.info("  partition %s: %s B, %.4f ms measured, expected %s ms, %s GB/s", r["partition"], r["bytes"],
                     r["measured_ms"], "n/a" if r["expected_ms"] is None else f"{r['expected_ms']:.4f}",
                     "n/a" if r["gbps"] is None else f"{r['gbps']:.2f}")
        if not out["success"]:
            lines = [f"partition {'run' if f['partition'] is None else f['partition']}: {f['reason']}"
                     for f in out["flags"]] or ["a Great Expectations check failed (see the result JSON)"]
            raise AirflowFailException(f"H2D check failed for {ti.run_id} (the proofs are kept): " + "; ".join(lines)
                                       + f". Result: {out['result_path']}")
        return {"success": True, "evaluated": len(out["evaluated"]), "report_dir": out["report_dir"],
                "data_docs": out["data_docs"]}
