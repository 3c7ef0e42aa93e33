"""``proofflow``: run a whole proof_run through Airflow on a local, embedded setup.

    proofflow run [--log2 K] [--partitions N] [--partitions-per-task K] [--backend B] [--staging S]
                  [--seed S] [--priority P] [--request-id ID] [--json]
    proofflow cancel RUN_ID             # mark a run failed, drop its queued proofs, release its staging and scratch
    proofflow setup [--gpu-slots N]     # pool `gpu` + connection + timing tables (+ GPU kernels), for a deployment
    proofflow kernels build [--arch 90 ...]   # compile the GPU kernels into the kernel cache ahead of time
    proofflow kernels list [--json]     # the cached cubins: module, arch, size, current or stale
    proofflow summary RUN_ID [--json]   # a run's summary from the timing tables
    proofflow calibrate [--device D]    # this host's reference H2D rate (proofflow/timing/calibrate.py)
    proofflow report RUN_ID [--png FILE] [--compare OTHER_RUN]   # views, PNG (proofflow/timing/report.py)
    proofflow status [--json]           # prover services (queue, keys, staging), runs in flight and latest
    proofflow keys preload|evict NAME [--device cuda:N] | keys list   # proving keys resident on the devices

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
import shutil
import sys
import tempfile
import time
from pathlib import Path

from proofflow import settings
from proofflow.spec import (BACKENDS, CIRCUITS, CURVES, DEFAULT_CURVE, DEFAULTS, INPUT_SUFFIXES, MAX_LOG2,
                            MAX_PARTITIONS, MAX_PARTITIONS_PER_TASK, MAX_SEED, MIN_LOG2, MIN_PARTITIONS, PRIORITIES,
                            STAGING, InvalidParams)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a command SIGPIPE ended, as head's writers usually end


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


def _request_id(text: str) -> str:
    from proofflow.spec import check_request_id
    try:
        return check_request_id(text)
    except InvalidParams as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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


@contextlib.contextmanager
def _stdout_to_stderr():
    """Fd 1 onto fd 2 for the block: Airflow logs to stdout, which holds the command's output."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def print_summary(s: dict) -> None:
    from proofflow.timing.report import run_heading
    print(f"proof_run {s['run_id']}: {s['state']}")
    if s.get("duplicate_of"):  # a run of a request an earlier run holds: it proved nothing
        print(f"  its request is run {s['duplicate_of']}'s: `proofflow summary {s['duplicate_of']}`")
        return
    print(f"  {run_heading(s, partitions=True)}" + (f", seed {s['seed']}" if s["seed"] is not None else "")
          + (f", request {s['request_id']}" if s.get("request_id") else ""))
    print(f"  {'task':<30}{'phase':<14}{'count':>6}{'total s':>10}{'mean s':>10}{'max s':>10}")
    for p in s["phases"]:
        if p["phase"] == "task":
            continue
        task = p["task"].split(".")[-1]
        print(f"  {task:<30}{p['phase']:<14}{p['count']:>6}{p['total_s']:>10.3f}{p['mean_s']:>10.3f}{p['max_s']:>10.3f}")
    for direction, t in sorted(s["transfers"].items()):
        print(f"  transfer {direction:<5} {t['count']}x {t['bytes'] / 1e6:.2f} MB {t['memory_kind']}, "
              f"{t['seconds']:.4f} s" + (f", {t['gbps']} GB/s" if t["gbps"] else ""))
    print(f"  {s['proofs_verified']}/{'-' if s['partitions'] is None else s['partitions']} proofs verify, wall "
          f"{'-' if s['wall_s'] is None else s['wall_s']} s")
    if s.get("bundle_dir"):
        print(f"  bundle: {s['bundle_dir']}")


def stage_inputs(paths: list[Path]) -> tuple[Path, list[Path]]:
    """``run --inputs``: the input files given, or one directory's (in name order),
    hard-linked (else copied) into a fresh directory under the first input root, where a run
    may read them, numbered in their order. Returns the directory and the files it holds, in
    order; the caller removes the directory after the run."""
    given = paths[0] if len(paths) == 1 and paths[0].is_dir() else None
    sources = sorted(p for p in given.iterdir() if p.suffix in INPUT_SUFFIXES) if given else paths
    if not sources:
        raise InvalidParams(f"--inputs {given}: no input files ({', '.join(INPUT_SUFFIXES)}) in it")
    for p in sources:
        if not p.is_file() or p.suffix not in INPUT_SUFFIXES:
            raise InvalidParams(f"--inputs {p}: not an existing {' or '.join(INPUT_SUFFIXES)} file")
    root = settings.current().input_roots[0]
    root.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    try:
        for i, source in enumerate(sources):
            try:
                os.link(source, staged / f"{i:04d}-{source.name}")
            except OSError:  # another filesystem, or a file of another owner
                shutil.copyfile(source, staged / f"{i:04d}-{source.name}")
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged, sources


def _as_given(text: str, staged: Path, sources: list[Path]) -> str:
    """A run's message with its staged input files (``stage_inputs``) named as the user gave them."""
    for i, source in enumerate(sources):
        name = f"{i:04d}-{source.name}"
        for staged_as in (str(staged / name), os.path.realpath(staged / name), f"{staged.name}/{name}"):
            text = text.replace(staged_as, str(source))
    return text


def cmd_run(args) -> int:
    conf = {"circuit": args.circuit, "log2": args.log2, "curve": args.curve, "partitions": args.partitions,
            "backend": args.backend, "staging": args.staging, "seed": args.seed, "priority": args.priority,
            "request_id": args.request_id, "partitions_per_task": args.partitions_per_task}
    if not args.inputs:
        return _run(conf, args)
    staged, sources = stage_inputs([Path(p) for p in args.inputs])
    conf["inputs"] = str(staged)
    try:
        return _run(conf, args, lambda text: _as_given(text, staged, sources))
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _run(conf: dict, args, as_given=lambda text: text) -> int:
    from proofflow import spec
    from proofflow.prover import device, resources
    from proofflow.prover.circom.inputs import check_run_inputs
    try:  # the DAG's validate task checks again; this gives the message without a run
        spec.validate_params(conf, gpu_available=device.available, fit_check=resources.fit_check,
                             input_check=check_run_inputs)
    except spec.InvalidParams as exc:
        _say(f"error: {as_given(str(exc))}")
        return EXIT_BAD_INPUT
    from proofflow.airflow import local
    home = local.configure()
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = None if args.verbose else logs / f"proofflow-run-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
    _say(f"proofflow: AIRFLOW_HOME={home}" + (f", log {log_path}" if log_path else ""))
    t0 = time.time()
    try:
        with _output_to(log_path):
            run = local.run_proof_run(conf, log_path)
    except local.LocalRunError as exc:
        _say(f"error: {exc}")
        return EXIT_FAILED
    from proofflow.timing.store import open_store
    from proofflow.timing.summary import summarize
    store = open_store(run.timing_url)
    summary = summarize(store, "proof_run", run.run_id)
    duplicate = summary["duplicate_of"] is not None  # the request's earlier run is the answer
    if duplicate:
        summary = {**summarize(store, "proof_run", summary["duplicate_of"]), "duplicate_run_id": run.run_id}
        _say(f"proofflow: request {conf['request_id']!r} is run {summary['run_id']} ({summary['state']}): "
             "not proved again")
    summary["airflow_state"] = run.state
    summary["command_s"] = round(time.time() - t0, 3)
    summary["timing_db"] = _redact(run.timing_url)
    if summary["error"]:
        summary["error"] = as_given(summary["error"])
    if log_path:
        summary["log"] = str(log_path)
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print_summary(summary)
    # a duplicate's own dag run succeeded: the earlier run's state (its proofs') decides
    state = summary["state"] if duplicate else summary["airflow_state"]
    ok = state == "success" and summary["proofs_verified"] == summary["partitions"]
    if not ok:
        if summary["error"]:
            _say(f"error: {summary['error']}")
        _say(f"proofflow: run {summary['run_id']} {state}" + (f"; see {log_path}" if log_path and not duplicate else ""))
    return EXIT_OK if ok else EXIT_FAILED


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url
    return make_url(url).render_as_string(hide_password=True)


def cmd_setup(args) -> int:
    if args.r1cs or args.out:
        return _test_zkey(args)
    from proofflow.airflow import bootstrap
    info = bootstrap.setup_all(slots=args.gpu_slots, migrate=not args.no_migrate, api_connection=True)
    info["timing_url"] = _redact(info["timing_url"])
    if not args.no_kernels:
        info["kernels"] = _setup_kernels()
    _say(f"setup: pool {info['pool']} has {info['slots']} slots; timing store {info['timing_url']}")
    _say(f"setup: {info['login']['how']}")
    for line in info["advice"]:
        _say(f"setup: advice: {line}")
    print(json.dumps(info))
    return EXIT_OK


def _setup_kernels() -> dict:
    """Best effort: the GPU kernels compiled into the kernel cache where CuPy is installed
    (for the visible device's arch, or PROOFFLOW_CUDA_ARCHS), so no worker compiles them."""
    from proofflow.prover.device import cache
    if not cache.cupy_installed():
        return {"skipped": "CuPy is not installed"}
    config = settings.current()
    try:
        results = cache.build(cache.default_archs(config.cuda_archs), cache.modules(config.curve_variant),
                              config.kernel_dir, progress=_kernel_progress)
    except (cache.KernelBuildError, ValueError, OSError) as exc:
        _say(f"setup: GPU kernels not built, they will compile on first use: {exc}")
        return {"skipped": str(exc)}
    return {"directory": str(config.kernel_dir), "archs": sorted({r["arch"] for r in results}),
            "cubins": len(results), "compiled": sum(r["built"] for r in results)}


def _kernel_progress(r: dict) -> None:
    done = f"compiled in {r['seconds']:.1f} s" if r["built"] else "already cached"
    _say(f"kernels: {r['module']} sm_{r['arch']}: {done} ({r['bytes'] / 1e6:.2f} MB)")


def cmd_kernels_build(args) -> int:
    from proofflow.prover.device import cache
    config = settings.current()
    t0 = time.time()
    try:
        archs = [a for spec in args.arch for a in spec.replace(",", " ").split()] if args.arch else \
            cache.default_archs(config.cuda_archs)
        results = cache.build(archs, cache.modules(config.curve_variant, args.variants or ()), config.kernel_dir,
                              progress=None if args.json else _kernel_progress)
    except cache.KernelBuildError as exc:
        _say(f"error: {exc}")
        return EXIT_FAILED
    if args.json:
        print(json.dumps(results))
    else:
        built = sum(r["built"] for r in results)
        print(f"{len(results)} cubins for {', '.join(sorted({'sm_' + r['arch'] for r in results}))} in "
              f"{config.kernel_dir}: {built} compiled, {len(results) - built} already cached "
              f"({time.time() - t0:.1f} s)")
    return EXIT_OK


def cmd_kernels_list(args) -> int:
    from proofflow.prover.device import cache
    directory = settings.current().kernel_dir
    entries = cache.entries(directory)
    if args.json:
        print(json.dumps({"directory": str(directory), "kernels": entries}))
        return EXIT_OK
    total = sum(e["bytes"] for e in entries)
    print(f"{directory}: {len(entries)} cubin(s), {total / 1e6:.2f} MB")
    for e in entries:
        arch = f"sm_{e['arch']}" if e.get("arch") else "?"
        print(f"  {e.get('module', '?'):<22}{arch:<8}{e['bytes'] / 1e6:>8.2f} MB  {e['status']:<8}"
              f"NVRTC {e.get('nvrtc', '?'):<6}{e['file']}")
    return EXIT_OK


def _test_zkey(args) -> int:
    """A test-only snarkjs zkey for an r1cs, from a seed, on the GPU where one is visible."""
    if not (args.r1cs and args.out):
        _say("error: a test-only zkey needs both --r1cs and --out")
        return EXIT_BAD_INPUT
    if Path(args.out).suffix != ".zkey":
        _say(f"error: --out {args.out}: name the zkey X.zkey")
        return EXIT_BAD_INPUT
    if os.path.lexists(args.out) and not args.force:  # it may be a real ceremony's key
        _say(f"error: --out {args.out} exists; pass --force to replace it with a test-only zkey")
        return EXIT_BAD_INPUT
    from proofflow.prover.backend.by_name import get_backend
    from proofflow.prover.circom import read_r1cs, setup
    r1cs = read_r1cs(args.r1cs)
    backend = get_backend(args.backend)
    _say(f"setup: test-only zkey for {args.r1cs}: {r1cs.cs.num_constraints} constraints, {r1cs.n_wires} signals, "
         f"seed {args.seed} (TEST ONLY: anyone who knows the seed can forge proofs), backend {backend.name}")
    t0, shown = time.time(), {}

    def progress(stage: str, done: int, total: int) -> None:  # a line per stage and tenth
        tenth = 10 * done // max(total, 1)
        if shown.get(stage) != tenth:
            shown[stage] = tenth
            _say(f"  setup: {stage} {done}/{total} points")
    setup.write_test_zkey(r1cs, args.seed, args.out, backend, progress=progress)
    _say(f"setup: wrote {args.out} in {time.time() - t0:.1f} s")
    return EXIT_OK


def cmd_summary(args) -> int:
    from proofflow.timing.store import open_store
    from proofflow.timing.summary import summarize
    s = summarize(open_store(), args.dag_id, args.run_id)
    if s["state"] is None:
        _say(f"error: no run {args.run_id!r} of {args.dag_id} in the timing store")
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(s, default=str))
    else:
        print_summary(s)
    return EXIT_OK


def cmd_cancel(args) -> int:
    """The run is found in the Airflow the environment configures (AIRFLOW_HOME set: a
    deployment's, as `setup` uses), else in the embedded one of `proofflow run`."""
    current = settings.current()
    if current.airflow_home is None:
        if not (current.local_airflow_home / "airflow.db").exists():
            _say(f"error: no run {args.run_id!r}: `proofflow run` has made none in {current.home}, and AIRFLOW_HOME "
                 "names no deployment")
            return EXIT_BAD_INPUT
        from proofflow.airflow import local
        local.configure()
    from proofflow.airflow import cancel
    try:
        with _stdout_to_stderr():
            done = cancel.cancel(args.dag_id, args.run_id)
    except cancel.RunNotFound as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    if args.json:
        from dataclasses import asdict
        print(json.dumps(asdict(done)))
    elif done.finished_before:
        print(f"{done.dag_id} {done.run_id} had finished ({done.state}): nothing to cancel")
    else:
        print(f"{done.dag_id} {done.run_id} cancelled (was {done.state}): {done.dropped} queued proof(s) dropped "
              f"before the device, {done.on_device} left to finish on it; {done.leases_released} staging lease(s) "
              f"released, scratch {'removed' if done.scratch_removed else 'already gone'}")
    return EXIT_OK


def cmd_staging_receiver(args) -> int:
    from proofflow.prover.staging import receiver as staging_receiver
    return staging_receiver.main(["--listen", args.listen] if args.listen else [])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="proofflow", description="Batch Groth16 proving orchestrated by Airflow.")
    p.add_argument("--home", help=HOME_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("run", help="run one proof_run end to end on a local Airflow (SQLite, no services)",
                       description="Set up a local AIRFLOW_HOME, run proof_run with dag.test(), print its summary "
                                   "from the timing tables.")
    r.add_argument("--circuit", default=DEFAULTS["circuit"],
                   help=f"a built-in family ({', '.join(CIRCUITS)}; default {DEFAULTS['circuit']}) or a circuit "
                        "registered with `proofflow circuit add`")
    r.add_argument("--inputs", nargs="+", metavar="PATH",
                   help="a registered circuit's inputs, one per partition: input.json files or .wtns witnesses, or "
                        "one directory of them (its size and the inputs replace --log2 and --partitions); linked or "
                        "copied for the run into the first input root (PROOFFLOW_INPUT_ROOTS, $PROOFFLOW_HOME/inputs)")
    r.add_argument("--log2", type=_int_in(MIN_LOG2, MAX_LOG2, "log2"), default=DEFAULTS["log2"],
                   help=f"log2 of the constraint count ({MIN_LOG2}..{MAX_LOG2}; default {DEFAULTS['log2']})")
    r.add_argument("--curve", choices=CURVES, default=DEFAULTS["curve"],
                   help=f"the curve the proofs are over (default: a registered circuit's own, from its files; "
                        f"{DEFAULT_CURVE} for the built-in families, which take either)")
    r.add_argument("--partitions", type=_int_in(MIN_PARTITIONS, MAX_PARTITIONS, "partitions"),
                   default=DEFAULTS["partitions"],
                   help=f"partitions ({MIN_PARTITIONS}..{MAX_PARTITIONS}; default {DEFAULTS['partitions']})")
    r.add_argument("--partitions-per-task", type=_int_in(1, MAX_PARTITIONS_PER_TASK, "partitions-per-task"),
                   default=DEFAULTS["partitions_per_task"], metavar="K",
                   help="partitions each task of the per-partition chain proves, one after another (1.."
                        f"{MAX_PARTITIONS_PER_TASK}; default {DEFAULTS['partitions_per_task']}): more cuts Airflow's "
                        "cost per proof, which keeps the GPU busy on small circuits")
    r.add_argument("--backend", choices=BACKENDS, default=DEFAULTS["backend"], help="default auto (GPU if present)")
    r.add_argument("--staging", choices=STAGING, default=DEFAULTS["staging"],
                   help="default pinned (the CPU backend has no page-locked memory: pageable there)")
    r.add_argument("--seed", type=_int_in(0, MAX_SEED, "seed"), default=DEFAULTS["seed"])
    r.add_argument("--priority", choices=PRIORITIES, default=DEFAULTS["priority"],
                   help="its partitions are proved before those of runs of a lower priority sharing the device "
                        f"(default {DEFAULTS['priority']})")
    r.add_argument("--request-id", type=_request_id, metavar="ID",
                   help="an idempotency key: when an earlier run (of this home's timing store) has it, nothing is "
                        "proved again and that run's summary is printed (1 to 128 letters, digits or . _ : -)")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    r.add_argument("--verbose", action="store_true", help="Airflow's log on stderr instead of a log file")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("setup", help="create pool `gpu`, connection proofflow_timing and the timing tables; or, "
                                     "with --r1cs, write a test-only zkey",
                       description="For a deployment: runs `airflow db migrate`, creates/updates pool `gpu` (one "
                                   "slot per GPU), the proofflow_timing connection and, where none is defined, the "
                                   "proofflow_airflow_api connection the run's note is written through, migrates the "
                                   "timing store, compiles proofflow's and the DAG files' bytecode (every task process imports them) and, "
                                   "where CuPy is installed, compiles the GPU kernels into the kernel cache. "
                                   "With --r1cs X.r1cs --out X.zkey: a snarkjs Groth16 zkey for that circuit from a "
                                   "seeded toxic waste, for tests and benchmarks only (no ceremony: anyone who knows "
                                   "the seed can forge proofs; the file says so).")
    s.add_argument("--r1cs", help="a circom .r1cs (of a registered curve: BLS12-381 or BN254) to write a test-only "
                                        "zkey for")
    s.add_argument("--out", help="the .zkey to write (with --r1cs)")
    s.add_argument("--seed", type=_int_in(0, MAX_SEED, "seed"), default=0, help="the toxic waste's seed (with --r1cs)")
    s.add_argument("--force", action="store_true", help="replace an existing --out (with --r1cs; without it an "
                                                         "existing file, perhaps a real ceremony's key, is refused)")
    s.add_argument("--backend", choices=BACKENDS, default="auto", help="where the key's points are computed "
                                                                        "(with --r1cs; default auto)")
    s.add_argument("--gpu-slots", type=_int_in(1, None, "gpu-slots"), help="pool slots (default: GPUs visible x PROOFFLOW_GPU_DEPTH, or x 1 with PROOFFLOW_GPU_SERVICE=0)")
    s.add_argument("--no-migrate", action="store_true", help="skip `airflow db migrate`")
    s.add_argument("--no-kernels", action="store_true",
                   help="skip compiling the GPU kernels (done by default where CuPy is installed; "
                        "`proofflow kernels build`)")
    s.set_defaults(func=cmd_setup)
    k = sub.add_parser("kernels", help="compile the GPU kernels ahead of time, or list the compiled ones",
                       description="The GPU kernels are compiled by NVRTC into cubins kept in the kernel cache "
                                   "($PROOFFLOW_KERNEL_DIR, default $PROOFFLOW_CACHE/kernels), named by a digest of "
                                   "their source, options, arch and NVRTC version; a GPU process loads them from "
                                   "there, and compiles (and saves) only what is missing.")
    actions = k.add_subparsers(dest="action", required=True, metavar="ACTION")
    from proofflow.prover.device import source as kernel_source  # the variants' names; no CuPy
    kb = actions.add_parser("build", help="compile every kernel module for the given archs into the kernel cache",
                            description="Compile every module proofflow loads (ntt.cu in each Fr variant, msm.cu, "
                                        "fixed_base.cu and bitsum.cu for G1 and G2) into cubins, keeping those already "
                                        "there. NVRTC needs no GPU: --arch 90 builds for an H100/H200 anywhere "
                                        "CuPy and NVRTC are installed.")
    kb.add_argument("--arch", action="extend", nargs="+", metavar="CC",
                    help="compute capabilities, e.g. 90 (or sm_90, 9.0; several allowed); default "
                         "PROOFFLOW_CUDA_ARCHS, else the visible GPU's")
    kb.add_argument("--variants", nargs="+", metavar="VARIANT", choices=kernel_source.VARIANTS,
                    help="also the modules the benchmarks and tests compare in these product variants "
                         f"({', '.join(kernel_source.VARIANTS)}), e.g. to carry them to a GPU machine prebuilt")
    kb.add_argument("--json", action="store_true", help="print one JSON list instead of the progress lines")
    kb.set_defaults(func=cmd_kernels_build)
    kl = actions.add_parser("list", help="the cubins in the kernel cache: module, arch, size, status",
                            description="Each cubin in the kernel cache with its size and status: current (what "
                                        "this source and NVRTC load), stale (another source, options or NVRTC) or "
                                        "damaged (rebuilt on next use).")
    kl.add_argument("--json", action="store_true")
    kl.set_defaults(func=cmd_kernels_list)
    c = sub.add_parser("cancel", help="stop a proof run: marked failed, its queued proofs dropped, its staging and "
                                      "scratch released",
                       description="Marks the run failed in Airflow as the UI does (its running tasks are stopped, "
                                   "the pending ones skipped, its teardowns still run), has this host's prover "
                                   "services drop its proofs not yet on the device, and releases its staging leases "
                                   "and scratch directory. The run is looked up in the Airflow that AIRFLOW_HOME "
                                   "configures, else in the embedded one of `proofflow run`.")
    c.add_argument("run_id")
    c.add_argument("--dag-id", default="proof_run")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=cmd_cancel)
    m = sub.add_parser("summary", help="print a run's summary from the timing tables")
    m.add_argument("run_id")
    m.add_argument("--dag-id", default="proof_run")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_summary)
    st = sub.add_parser("staging-receiver", help="receive partitions synthesized on other hosts into this (GPU) "
                                                 "host's shared staging",
                        description="For a multi-host deployment: CPU workers of other hosts stream each "
                                    "partition's a/b/c here (PROOFFLOW_STAGING_ENDPOINT=HOST:PORT there), straight "
                                    "into a segment the prover service pins in place. Needs PROOFFLOW_STAGING_TOKEN "
                                    "to listen beyond loopback.")
    st.add_argument("--listen", help="HOST:PORT (default $PROOFFLOW_STAGING_LISTEN, 127.0.0.1:7017)")
    st.set_defaults(func=cmd_staging_receiver)
    from proofflow.prover.circom import cli as circuit_cli
    from proofflow.prover.circom import groth16_cli
    from proofflow.prover.service import keys_cli
    from proofflow.timing import calibrate, report, status
    calibrate.add_parser(sub)
    report.add_parser(sub)
    status.add_parser(sub)
    keys_cli.add_parser(sub)
    circuit_cli.add_parser(sub)
    groth16_cli.add_parser(sub)
    _accept_home(sub)
    return p


def _accept_home(sub: argparse._SubParsersAction) -> None:
    """--home after any command or action too (`proofflow circuit add NAME --home H`): each
    subparser gets it, suppressed when absent so the top-level one's value stands."""
    for command in {id(c): c for c in sub.choices.values()}.values():  # an alias names the same parser
        command.add_argument("--home", default=argparse.SUPPRESS, help=HOME_HELP)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_home(action)


HOME_HELP = ("the proofflow home: timing store, keys, bundles, and the embedded Airflow of `run` in its "
             "airflow/ (default $PROOFFLOW_HOME, ~/.proofflow)")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.home:
        settings.set_home(Path(args.home).resolve())
    try:
        status = args.func(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return status
    except BrokenPipeError:  # `proofflow report ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return EXIT_BROKEN_PIPE
    except (ValueError, OSError) as exc:  # bad input, an unusable file or store: a message, not a traceback
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
