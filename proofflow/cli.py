"""``proofflow``: run a whole proof_run through Airflow on a local, embedded setup.

    proofflow run [--log2 K] [--partitions N] [--backend B] [--staging S] [--seed S] [--json]
    proofflow setup [--gpu-slots N]     # pool `gpu` + connection + timing tables, for a deployment
    proofflow summary RUN_ID [--json]   # a run's summary from the timing tables
    proofflow calibrate [--device D]    # this host's reference H2D rate (proofflow/timing/calibrate.py)
    proofflow report RUN_ID [--png FILE] [--compare OTHER_RUN]   # views, PNG (proofflow/timing/report.py)

``run`` sets up a local AIRFLOW_HOME (default ~/.proofflow/airflow, or --home /
PROOFFLOW_AIRFLOW_HOME): SQLite metadata DB, pool ``gpu``, connection ``proofflow_timing``
(SQLite timing store unless PROOFFLOW_DB_URL says otherwise), then runs ``proof_run`` end to
end in-process with ``dag.test()`` and prints the run summary from the timing tables.
Airflow's own log of the run goes to $AIRFLOW_HOME/logs/proofflow-run-*.log.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from proofflow.airflow.params import (BACKENDS, CIRCUITS, DEFAULTS, MAX_LOG2, MAX_PARTITIONS, MAX_SEED, MIN_LOG2, MIN_PARTITIONS, STAGING)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _int_in(lo, hi, name):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{name} must be in {lo}..{hi if hi is not None else ''}, got {v}")
        return v
    return parse


@contextlib.contextmanager
def _output_to(path: Path | None):
    """Send fds 1 and 2 (Airflow's logs, the tasks' prints) to a file for the block."""
    if path is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def summarize(store, dag_id: str, run_id: str) -> dict:
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
    return {
        "dag_id": dag_id, "run_id": run_id, "state": run.get("state"),
        "circuit": run.get("circuit"), "log2": run.get("log2"), "partitions": run.get("partitions"),
        "backend": run.get("backend"), "staging": run.get("staging"), "seed": run.get("seed"),
        "proofs_verified": run.get("proofs_verified") or 0, "wall_s": run.get("wall_s"),
        "bundle_dir": run.get("bundle_dir"),
        "phases": [{"task": p["task_id"], "phase": p["phase"], "count": p["count"],
                    "total_s": round(p["total_s"], 6), "mean_s": round(p["mean_s"], 6), "max_s": round(p["max_s"], 6)}
                   for p in phases],
        "transfers": by_dir,
    }


def print_summary(s: dict) -> None:
    print(f"proof_run {s['run_id']}: {s['state']}")
    print(f"  {s['circuit']} 2^{s['log2']}, {s['partitions']} partition(s), backend {s['backend']}, "
          f"staging {s['staging']}, seed {s['seed']}")
    print(f"  {'task':<30}{'phase':<14}{'count':>6}{'total s':>10}{'mean s':>10}{'max s':>10}")
    for p in s["phases"]:
        if p["phase"] == "task":
            continue
        task = p["task"].split(".")[-1]
        print(f"  {task:<30}{p['phase']:<14}{p['count']:>6}{p['total_s']:>10.3f}{p['mean_s']:>10.3f}{p['max_s']:>10.3f}")
    for direction, t in sorted(s["transfers"].items()):
        print(f"  transfer {direction:<5} {t['count']}x {t['bytes'] / 1e6:.2f} MB {t['memory_kind']}, "
              f"{t['seconds']:.4f} s" + (f", {t['gbps']} GB/s" if t["gbps"] else ""))
    print(f"  {s['proofs_verified']}/{s['partitions']} proofs verify, wall {s['wall_s']} s")
    if s.get("bundle_dir"):
        print(f"  bundle: {s['bundle_dir']}")


def cmd_run(args) -> int:
    from proofflow.airflow import bootstrap as airflow_setup
    from proofflow.airflow.params import InvalidParams, validate_params
    conf = {"circuit": args.circuit, "log2": args.log2, "partitions": args.partitions, "backend": args.backend,
            "staging": args.staging, "seed": args.seed}
    try:
        validate_params(conf)  # the DAG's validate task checks again; this gives the message without a run
    except InvalidParams as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    home = Path(args.home) if args.home else airflow_setup.default_airflow_home()
    airflow_setup.configure_env(home)
    dags = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if not (dags / "proof_run.py").exists():
        _say(f"error: no proof_run.py in the dags folder {dags} (set PROOFFLOW_DAGS_FOLDER)")
        return EXIT_BAD_INPUT
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = None if args.verbose else logs / f"proofflow-run-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    _say(f"proofflow: AIRFLOW_HOME={home}" + (f", log {log_path}" if log_path else ""))
    t0 = time.time()
    with _output_to(log_path):
        setup = airflow_setup.setup_all(log_path=log_path)
        from airflow.dag_processing.dagbag import DagBag
        bag = DagBag(str(dags))
        dag = bag.get_dag("proof_run")
        if dag is None:
            err = bag.import_errors
        else:
            err = None
            dr = dag.test(run_conf=conf)
    if err is not None or dag is None:
        _say(f"error: proof_run did not load from {dags}: {err}")
        return EXIT_FAILED
    from proofflow.prover.service.client import stop_all
    stop_all()  # the run's prover service: a one-off command leaves nothing running
    from proofflow.timing.store import TimingStore
    store = TimingStore(setup["timing_url"])
    summary = summarize(store, "proof_run", dr.run_id)
    summary["airflow_state"] = str(getattr(dr.state, "value", dr.state))
    summary["command_s"] = round(time.time() - t0, 3)
    summary["timing_db"] = _redact(setup["timing_url"])
    if log_path:
        summary["log"] = str(log_path)
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print_summary(summary)
    ok = summary["airflow_state"] == "success" and summary["proofs_verified"] == args.partitions
    if not ok:
        _say(f"proofflow: run {dr.run_id} {summary['airflow_state']}" + (f"; see {log_path}" if log_path else ""))
    return EXIT_OK if ok else EXIT_FAILED


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url
    return make_url(url).render_as_string(hide_password=True)


def cmd_setup(args) -> int:
    from proofflow.airflow import bootstrap as airflow_setup
    info = airflow_setup.setup_all(slots=args.gpu_slots, migrate=not args.no_migrate)
    info["timing_url"] = _redact(info["timing_url"])
    print(json.dumps(info))
    return EXIT_OK


def cmd_summary(args) -> int:
    from proofflow.airflow.hooks.timing import resolve_db_url
    from proofflow.timing.store import TimingStore
    store = TimingStore(resolve_db_url(use_connection=False))
    s = summarize(store, args.dag_id, args.run_id)
    if s["state"] is None:
        _say(f"error: no run {args.run_id!r} of {args.dag_id} in the timing store")
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(s, default=str))
    else:
        print_summary(s)
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="proofflow", description="Batch Groth16 proving orchestrated by Airflow.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("run", help="run one proof_run end to end on a local Airflow (SQLite, no services)",
                       description="Set up a local AIRFLOW_HOME, run proof_run with dag.test(), print its summary "
                                   "from the timing tables.")
    r.add_argument("--circuit", choices=CIRCUITS, default=DEFAULTS["circuit"])
    r.add_argument("--log2", type=_int_in(MIN_LOG2, MAX_LOG2, "log2"), default=DEFAULTS["log2"],
                   help=f"log2 of the constraint count ({MIN_LOG2}..{MAX_LOG2}; default {DEFAULTS['log2']})")
    r.add_argument("--partitions", type=_int_in(MIN_PARTITIONS, MAX_PARTITIONS, "partitions"),
                   default=DEFAULTS["partitions"],
                   help=f"partitions ({MIN_PARTITIONS}..{MAX_PARTITIONS}; default {DEFAULTS['partitions']})")
    r.add_argument("--backend", choices=BACKENDS, default=DEFAULTS["backend"], help="default auto (GPU if present)")
    r.add_argument("--staging", choices=STAGING, default=DEFAULTS["staging"], help="default pinned")
    r.add_argument("--seed", type=_int_in(0, MAX_SEED, "seed"), default=DEFAULTS["seed"])
    r.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    r.add_argument("--home", help="AIRFLOW_HOME to set up and use (default ~/.proofflow/airflow)")
    r.add_argument("--verbose", action="store_true", help="Airflow's log on stderr instead of a log file")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("setup", help="create pool `gpu`, connection proofflow_timing and the timing tables",
                       description="For a deployment: runs `airflow db migrate`, creates/updates pool `gpu` (one "
                                   "slot per GPU) and the proofflow_timing connection, and migrates the timing store.")
    s.add_argument("--gpu-slots", type=_int_in(1, None, "gpu-slots"), help="pool slots (default: GPUs visible x PROOFFLOW_GPU_DEPTH, or x 1 with PROOFFLOW_GPU_SERVICE=0)")
    s.add_argument("--no-migrate", action="store_true", help="skip `airflow db migrate`")
    s.set_defaults(func=cmd_setup)
    m = sub.add_parser("summary", help="print a run's summary from the timing tables")
    m.add_argument("run_id")
    m.add_argument("--dag-id", default="proof_run")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_summary)
    from proofflow.timing import calibrate, report
    calibrate.add_parser(sub)
    report.add_parser(sub)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:  # bad input, an unusable file or store: a message, not a traceback
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
