"""``python -m proofflow.prover``: setup, prove, verify and demo from the command line."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from proofflow.spec import BACKENDS, CIRCUITS, MAX_LOG2, MIN_LOG2, STAGING, resolve_staging
from proofflow.phases import Phase
from proofflow.prover.curves import registry

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
STAGING_HELP = ("memory synthesis writes a/b/c into: pinned (page-locked, full-rate uploads; the default) or "
                "pageable; the CPU backend has no page-locked memory, so it is pageable there")
CURVE_HELP = f"the curve to prove over ({', '.join(registry.NAMES)}; default {registry.DEFAULT})"


def _log2(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not MIN_LOG2 <= k <= MAX_LOG2:
        raise argparse.ArgumentTypeError(f"must be in {MIN_LOG2}..{MAX_LOG2}, got {k}")
    return k


def _at_least(lo: int):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if n < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {n}")
        return n
    return parse


_positive, _seed = _at_least(1), _at_least(0)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _setup_progress(stage: str, done: int, total: int) -> None:
    _say(f"  setup: {done}/{total} key points ({100 * done // total}%), {stage}")


def cmd_setup(args) -> int:
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator
    circuit = get_circuit(args.circuit, args.log2, args.curve)
    backend = _backend(args.backend)
    refused = _does_not_fit(args.circuit, args.log2, args.curve, backend.name, Path(args.out))
    if refused:
        _say(f"error: {refused}")
        return EXIT_BAD_INPUT
    _say(f"setup: circuit {circuit.name}, 2^{circuit.log2} constraints over {circuit.curve.label}, seed {args.seed} "
         f"(TEST-ONLY toxic waste), backend {backend.name}")
    t0 = time.time()
    pk = generator.setup(circuit, args.seed, progress=_setup_progress if not args.quiet else None, backend=backend,
                         directory=args.out)  # each table straight into its file
    pk.save(args.out)
    _say(f"setup: wrote {args.out} in {time.time() - t0:.1f} s")
    return EXIT_OK


def _does_not_fit(circuit: str, log2: int, curve: str, backend: str, out: Path) -> str | None:
    """Why a key's setup into ``out`` cannot fit this machine (its disk, host memory), or None."""
    from dataclasses import replace

    from proofflow.prover import resources
    from proofflow.spec import MemoryKind, RunConfig
    config = RunConfig(circuit, log2, 0, backend, MemoryKind.PAGEABLE, curve=curve)
    machine = replace(resources.probe(config, key_dir=out), key_on_disk=False)  # written again whatever is there
    return resources.fit_check(config, machine)


def _backend(name: str):
    from proofflow.prover.backend.by_name import get_backend
    return get_backend(name)


def _staging_pool(mode: str, backend):
    """This process's staging pool: page-locked when the GPU backend can pin it."""
    from proofflow.prover.staging.pool import staging_pool
    return staging_pool(pinned=resolve_staging(mode, backend.name) == "pinned")


def _key(pk, circuit):
    from proofflow.prover.pipeline import Key
    return Key(pk, circuit.constraint_system)


def cmd_prove(args) -> int:
    from proofflow.prover import pipeline
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16.data_structures import KeyFormatError, ProvingKey
    try:
        pk = ProvingKey.load(args.params)
    except KeyFormatError as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    circuit = get_circuit(pk.circuit, pk.log2, pk.curve.name)
    backend = _backend(args.backend)
    _say(f"prove: {args.partitions} partition(s) of {circuit.name} 2^{circuit.log2} over {pk.curve.label}, "
         f"backend {backend.name}")

    def progress(i, timer):
        _say(f"  partition {i + 1}/{args.partitions} proved in {sum(timer.totals().values()):.2f} s")

    pipeline.prove_partitions(_key(pk, circuit), circuit, args.partitions, args.seed, args.out, backend,
                              _staging_pool(args.staging, backend), progress)
    _say(f"prove: wrote {args.out}")
    return EXIT_OK


def cmd_verify(args) -> int:
    from proofflow.prover.bundle import BundleError, verify_bundle
    if args.vk:
        return _verify_snarkjs(args)
    if args.dir is None or args.public or args.proof:
        _say("error: give a bundle directory, or --vk verification_key.json --public public.json --proof proof.json")
        return EXIT_BAD_INPUT
    try:
        results = verify_bundle(args.dir)
    except BundleError as exc:
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"partition {r.partition}: INVALID ({r.reason})")
    print(f"{len(results) - len(failed)}/{len(results)} proofs verify")
    return EXIT_INVALID if failed else EXIT_OK


def _verify_snarkjs(args) -> int:
    """snarkjs's three files, as `snarkjs groth16 verify` takes them."""
    from proofflow.prover.circom import verify_files
    if args.dir is not None or not (args.public and args.proof):
        _say("error: with --vk give --public and --proof (and no bundle directory)")
        return EXIT_BAD_INPUT
    try:
        ok = verify_files(args.vk, args.public, args.proof)
    except (ValueError, OSError) as exc:  # CorruptFile, WrongField: unreadable or another curve
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    print("OK: the proof verifies" if ok else "INVALID: the proof does not verify")
    return EXIT_OK if ok else EXIT_INVALID


def cmd_demo(args) -> int:
    from proofflow.prover import pipeline
    from proofflow.prover.bundle import verify_bundle
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator
    from proofflow.prover.timing import PhaseTimer
    circuit = get_circuit(args.circuit, args.log2, args.curve)
    backend = _backend(args.backend)
    timer = PhaseTimer()
    with tempfile.TemporaryDirectory(prefix="proofflow-demo-") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "proofs"
        _say(f"demo: {circuit.name} 2^{circuit.log2} ({circuit.constraint_system.num_constraints} constraints), "
             f"{args.partitions} partition(s), backend {backend.name}")
        with timer.phase(Phase.SETUP):
            pk = generator.setup(circuit, args.seed, progress=_setup_progress if args.log2 >= 14 else None,
                                 backend=backend)
        timers = pipeline.prove_partitions(
            _key(pk, circuit), circuit, args.partitions, args.seed, out, backend,
            _staging_pool(args.staging, backend), lambda i, _t: _say(f"  partition {i + 1}/{args.partitions} proved"))
        with timer.phase(Phase.VERIFY):
            results = verify_bundle(out)
    per_phase: dict[str, list[float]] = {}
    for t in timers:
        for phase, s in t.totals().items():
            per_phase.setdefault(phase, []).append(s)
    print(f"{'phase':<12}{'count':>6}{'total s':>10}{'mean s':>10}")
    rows = [("setup", [timer.totals()["setup"]])] + list(per_phase.items()) + [("verify", [timer.totals()["verify"]])]
    for phase, xs in rows:
        print(f"{phase:<12}{len(xs):>6}{sum(xs):>10.3f}{sum(xs) / len(xs):>10.3f}")
    ok = sum(r.ok for r in results)
    print(f"{ok}/{len(results)} proofs verify")
    return EXIT_OK if ok == len(results) else EXIT_INVALID


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m proofflow.prover",
                                description="Groth16 proving over a registered curve (proofflow's engine).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    circuits = ", ".join(sorted(CIRCUITS))

    s = sub.add_parser("setup", help="generate proving and verifying keys (test-only toxic waste)",
                       description="Generate a proving key directory for a circuit. The toxic waste is derived "
                                   "from --seed: these keys are for tests and benchmarks only.")
    s.add_argument("--circuit", default="mimc", help=f"circuit family ({circuits}; default mimc)")
    s.add_argument("--log2", type=_log2, required=True, help=f"log2 of the constraint count ({MIN_LOG2}..{MAX_LOG2})")
    s.add_argument("--out", required=True, help="directory to write the keys to")
    s.add_argument("--seed", type=_seed, default=0, help="seed of the toxic waste (default 0)")
    s.add_argument("--curve", choices=registry.NAMES, default=registry.DEFAULT, help=CURVE_HELP)
    s.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="where the key points are computed (default auto); every backend writes the same key")
    s.add_argument("--quiet", action="store_true", help="no progress output")
    s.set_defaults(func=cmd_setup)

    s = sub.add_parser("prove", help="synthesize and prove N partitions into a proof bundle",
                       description="Synthesize each partition's witness and prove it; writes DIR/partition-NNNN.proof, "
                                   "DIR/vk.json and DIR/manifest.json.")
    s.add_argument("--params", required=True, help="proving key directory written by 'setup'")
    s.add_argument("--partitions", type=_positive, required=True, help="number of partitions (independent instances)")
    s.add_argument("--out", required=True, help="directory for the proof bundle")
    s.add_argument("--seed", type=_seed, default=0, help="seed of the partitions' inputs (default 0)")
    s.add_argument("--backend", choices=BACKENDS, default="auto", help="compute backend (default auto)")
    s.add_argument("--staging", choices=STAGING, default="pinned", help=STAGING_HELP)
    s.set_defaults(func=cmd_prove)

    s = sub.add_parser("verify", help="verify every proof of a bundle, or a snarkjs proof",
                       description="Exit 0 when every proof verifies, 1 naming each one that does not, "
                                   "2 when the bundle or a file is unreadable or malformed. A snarkjs proof: "
                                   "verify --vk verification_key.json --public public.json --proof proof.json.")
    s.add_argument("dir", nargs="?", help="proof bundle directory written by 'prove' or a proof run")
    s.add_argument("--vk", help="snarkjs's verification_key.json (of a registered curve)")
    s.add_argument("--public", help="snarkjs's public.json")
    s.add_argument("--proof", help="snarkjs's proof.json")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("demo", help="setup, prove and verify in one go, with a timing table",
                       description="Setup, prove N partitions and verify them, then print per-phase timings.")
    s.add_argument("--circuit", default="mimc", help=f"circuit family ({circuits}; default mimc)")
    s.add_argument("--log2", type=_log2, default=10, help=f"log2 of the constraint count ({MIN_LOG2}..{MAX_LOG2}; default 10)")
    s.add_argument("--partitions", type=_positive, default=2, help="number of partitions (default 2)")
    s.add_argument("--seed", type=_seed, default=0, help="seed of keys and inputs (default 0)")
    s.add_argument("--curve", choices=registry.NAMES, default=registry.DEFAULT, help=CURVE_HELP)
    s.add_argument("--backend", choices=BACKENDS, default="auto", help="compute backend (default auto)")
    s.add_argument("--staging", choices=STAGING, default="pinned", help=STAGING_HELP)
    s.add_argument("--out", help="keep the proof bundle in this directory (default: a temporary one)")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    from proofflow.prover.backend.by_name import BackendUnavailable
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, BackendUnavailable, OSError) as exc:  # bad input or environment: a message, not a traceback
        _say(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
