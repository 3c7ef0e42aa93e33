"""``proofflow keys``: proving keys on the devices' prover services.

    proofflow keys preload NAME [--log2 K] [--seed S] [--curve C] [--device cuda:N|cpu[:N]] [--json]
    proofflow keys evict NAME [--log2 K] [--seed S] [--curve C] [--device D] [--json]
    proofflow keys list [--json]

NAME is a circuit: a built-in family (its key named by --log2, --seed and --curve, as a run's
params name it) or a registered circom circuit (its own key). ``preload`` makes the key
(``ensure_key``, as a run's setup task) where it is missing, starts the device's service
where none runs, and has it upload the key between two proofs: the first proof with it pays
no ``key_upload``. Without --device it preloads on every device of this worker
(PROOFFLOW_GPU_DEVICES; the GPU where one is visible, else the CPU backend). ``evict`` drops
the key from every running service (or --device's). A service stopping (idle for
PROOFFLOW_SERVICE_IDLE_S) takes its resident keys with it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from proofflow import settings, spec

EXIT_OK, EXIT_FAILED = 0, 1


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def size(n: int | None) -> str:
    """Bytes for a reader: 1.23 MB, 8.59 GB."""
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def device_spec(text: str) -> tuple[str, int]:
    """``cuda:N`` (the GPU backend's device N), ``cpu`` or ``cpu:N`` -> (backend, device)."""
    kind, _, index = text.partition(":")
    if kind in ("cuda", "cpu") and (index.isdigit() or (kind == "cpu" and not index)):
        return ("gpu" if kind == "cuda" else "cpu"), int(index or 0)
    raise argparse.ArgumentTypeError(f"a device is cuda:N, cpu or cpu:N, got {text!r}")


def key_job(name: str, log2: int, seed: int, curve: str | None):
    """The key a run of circuit ``name`` proves with (``layout.params_dir``), as a prove job
    names it; InvalidParams for an unknown circuit or a size out of range."""
    from proofflow.prover import layout
    from proofflow.prover.service.admin import KeyJob
    spec.check_circuit(name)
    spec.check_int("seed", seed, 0, spec.MAX_SEED)
    info = spec.circuit_info(name)
    curve = spec.circuit_curve(name, info, curve)
    if info is not None:  # a registered circuit: its own size
        log2 = int(info["log2"])
    spec.check_int("log2", log2, spec.MIN_LOG2, spec.MAX_LOG2)
    return KeyJob(str(layout.params_dir(name, log2, seed, curve)), name, log2, curve)


def _label(job) -> str:
    return f"{job.circuit} 2^{job.log2} ({job.curve})"


def cmd_preload(args) -> int:
    from proofflow.prover import device
    from proofflow.prover.keys import ensure_key
    from proofflow.prover.service.client import ServiceClient, ServiceError
    job = key_job(args.name, args.log2, args.seed, args.curve)
    targets = [args.device] if args.device else \
        [("gpu" if device.available() else "cpu", d) for d in settings.current().gpu_devices]
    t0 = time.time()
    cached = ensure_key(job.params_dir, job.circuit, job.log2, args.seed, targets[0][0], curve=job.curve)
    if not cached:
        _say(f"keys: made the proving key of {_label(job)} in {job.params_dir} ({time.time() - t0:.1f} s)")
    loaded = []
    for backend, index in targets:
        client = ServiceClient(backend, index)
        try:
            client.ensure_running()
            loaded.append(client.preload(job))
        except ServiceError as exc:
            _say(f"error: {backend} device {index}: {exc}")
            return EXIT_FAILED
    if args.json:
        print(json.dumps([{**asdict(r), "circuit": job.circuit, "log2": job.log2, "curve": job.curve}
                          for r in loaded]))
        return EXIT_OK
    for r in loaded:
        how = "already resident" if r.upload_s is None else f"uploaded in {r.upload_s:.3f} s"
        evicted = f"; evicted {', '.join(r.evicted)} to fit it" if r.evicted else ""
        print(f"{r.device}: {_label(job)} resident, {size(r.bytes)}, {how}{evicted}")
    return EXIT_OK


def cmd_evict(args) -> int:
    from proofflow.prover.service.client import ServiceClient, ServiceError, ServiceUnavailable, running_services
    job = key_job(args.name, args.log2, args.seed, args.curve)
    clients = [ServiceClient(*args.device)] if args.device else [c for c, _s in running_services()]
    out = []
    for client in clients:
        try:
            out.append({"device": client.state().device, "directory": job.params_dir, "bytes": client.evict(job)})
        except ServiceUnavailable:  # nothing runs there: nothing is resident
            continue
        except ServiceError as exc:
            _say(f"error: {client.backend} device {client.device}: {exc}")
            return EXIT_FAILED
    if args.json:
        print(json.dumps(out))
        return EXIT_OK
    if not out:
        print("no prover service running: no key is resident")
    for r in out:
        done = f"evicted {_label(job)}, {size(r['bytes'])}" if r["bytes"] is not None else \
            f"{_label(job)} was not resident"
        print(f"{r['device']}: {done}")
    return EXIT_OK


def cmd_list(args) -> int:
    from proofflow.prover.service.client import running_services
    services = [s for _c, s in running_services()]
    if args.json:
        print(json.dumps([{"device": s.device, "key_budget_bytes": s.key_budget_bytes,
                           "resident_keys": [asdict(k) for k in s.resident_keys]} for s in services]))
        return EXIT_OK
    if not services:
        print("no prover service running: no key is resident (`proofflow keys preload NAME` starts one)")
    now = time.time()
    for s in services:
        print(f"{s.device}: {len(s.resident_keys)} key(s) resident, {size(s.resident_bytes)} of "
              f"{size(s.key_budget_bytes)} (PROOFFLOW_KEY_BUDGET)")
        for k in s.resident_keys:
            print(f"  {k.circuit} 2^{k.log2} ({k.curve})  {size(k.bytes)}  used {now - k.used_at:.0f} s ago  "
                  f"{k.directory}")
    return EXIT_OK


def add_parser(sub) -> None:
    k = sub.add_parser("keys", help="preload proving keys onto the devices' prover services, evict them, list them",
                       description="Proving keys resident on the devices' prover services: a preloaded key's "
                                   "first proof pays no upload.")
    actions = k.add_subparsers(dest="action", required=True, metavar="ACTION")

    def key_args(a):
        a.add_argument("name", help="a built-in circuit family (mimc, bits) or a registered circuit")
        a.add_argument("--log2", type=int, default=spec.DEFAULTS["log2"],
                       help=f"a built-in family's size (default {spec.DEFAULTS['log2']}; a registered circuit's is "
                            "its own)")
        a.add_argument("--seed", type=int, default=spec.DEFAULTS["seed"], help="a built-in family's key seed")
        a.add_argument("--curve", choices=spec.CURVES, default=spec.DEFAULTS["curve"],
                       help=f"a built-in family's curve (default {spec.DEFAULT_CURVE}; a registered circuit's is its own)")
        a.add_argument("--device", type=device_spec, metavar="DEVICE",
                       help="cuda:N, cpu or cpu:N (default: every device of this worker)")
        a.add_argument("--json", action="store_true")
    p = actions.add_parser("preload", help="make a circuit's proving key resident on the device(s)",
                           description="Make the proving key (made where missing) resident on the device(s), "
                                       "starting the prover service where none runs: the first proof with it pays "
                                       "no key upload.")
    key_args(p)
    p.set_defaults(func=cmd_preload)
    e = actions.add_parser("evict", help="drop a circuit's proving key from the device(s)")
    key_args(e)
    e.set_defaults(func=cmd_evict)
    ls = actions.add_parser("list", help="the proving keys resident on the running prover services")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
