"""One full-size partition, phase by phase (issue #20 item 5): a proving key made by
``python -m proofflow.prover setup`` loaded and made resident, one partition synthesized,
then warm-up proofs and measured ones on one backend, every proof verified.

    python -m bench.partition --circuit mimc|bits --log2 27 --key DIR --out FILE
                              [--backend gpu|cpu] [--warmup 1] [--repeats 3] [--seed 0] [--no-check]
                              [--curve bls12_381|bn254]   (a built-in family's; the key must be over it)
    python -m bench.partition --circuit NAME --input FILE --out FILE ...   (a registered circom
                              circuit: its key is the registry's, the partition the input's)

Timed once (seconds): the backend's warm-up; the key's load (``KeyCache.get``: its tables
memory-mapped, their digests not read again, and the circuit's constraint system mapped
from its cache); its upload (``Backend.prepare``: the tables, compressed ones decompressed on
the device, with the copies the key cache plans for them within the device's key budget, PROOFFLOW_MSM_PRECOMPUTE, resident on the
device); the partition's synthesis into the staging pool (page-locked on the GPU). Each proof: the prover's phases (h2d: a/b/c and the
witness; ntt: H; msm; assemble), each MSM apart (A, B1, B2 and L over the witness, H over
H's coefficients), the uploads' bytes and rates, and its verification. The device phase is
ntt + msm, as the prover service counts it (it uploads the next partition meanwhile). The
witness's values by class (zeros, ones, others: how a witness MSM splits them) are recorded
once. ``steady`` holds the min and median of the measured proofs, warm-up excluded, and
``target`` the issues' bound on the median device phase: on BLS12-381 at 2^27 a bit-heavy
partition <= 2 s, a dense one <= 7 s (#20); on BN254 a circom partition <= 0.15 s at 2^22 and
<= 0.5 s at 2^24 (#37), which a built-in family's partition over BN254 is held to as well
(the same device work: bench.circom_partition measured the circom path within 1% of
MiMC's). On the GPU also the device's memory after the key's upload and
after the proofs (CuPy's pool keeps the blocks a proof freed, so what it holds then is the
proofs' peak, unless it had to give blocks back to fit one); MemAvailable at each step.

The run is checked against this machine first (``proofflow.prover.resources``, as a proof run is;
--no-check skips it). Progress goes to stderr, the JSON to --out after each step. Exit 0; 1
when a proof does not verify; 2 for a run that cannot start (no key there, a key of another
circuit or size, no GPU for --backend gpu, a run that does not fit).
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import _env
from proofflow.phases import Phase
from proofflow.spec import MemoryKind, RunConfig

TARGETS_S = {"bits": 2.0, "mimc": 7.0}  # the median device phase of a 2^27 partition, issue #20 item 5
TARGET_LOG2 = 27
# a BN254 (circom) partition's median device phase by size, issue #37; any circuit over the curve
CURVE_TARGETS_S = {"bn254": {22: 0.15, 24: 0.5}}
MSMS = {"a_query": "a", "b_g1_query": "b1", "b_g2_query": "b2", "l_query": "l", "h_query": "h"}


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def verdict(circuit: str, log2: int, median_device_s: float, curve: str = "bls12_381") -> dict | None:
    """The issue's target for the circuit (on BN254: for the size) and whether the median
    device phase meets it (None at a size it does not apply to); None where no issue sets one."""
    median = round(median_device_s, 4)
    if curve in CURVE_TARGETS_S:
        target = CURVE_TARGETS_S[curve].get(log2)
        return None if target is None else {"device_phase_s": target, "log2": log2, "median_device_s": median,
                                            "met": median_device_s <= target}
    if circuit not in TARGETS_S:
        return None
    target = TARGETS_S[circuit]
    return {"device_phase_s": target, "log2": TARGET_LOG2, "median_device_s": median,
            "met": median_device_s <= target if log2 == TARGET_LOG2 else None}


def witness_classes(witness: np.ndarray, num_instance: int, fr) -> dict:
    """The witness's scalars by value, as a witness MSM splits them (``device.sparse``): the
    whole witness for A, B1 and B2, past the instance variables for L."""
    from proofflow.prover.device.sparse import DENSE_SHARE
    ones = np.all(witness == fr.one(), axis=1)
    zeros = ~np.any(witness, axis=1)

    def classes(sl: slice) -> dict:
        n, z, o = len(witness[sl]), int(zeros[sl].sum()), int(ones[sl].sum())
        return {"scalars": n, "zeros": z, "ones": o, "others": n - z - o,
                "split_on_gpu": n - z - o <= DENSE_SHARE * n}  # else Pippenger takes it whole
    return {"a_b1_b2": classes(slice(None)), "l": classes(slice(num_instance, None))}


@contextlib.contextmanager
def timed_msms(backend, pk, into: dict):
    """Each MSM's seconds into ``into`` (by ``MSMS`` name): the prover times the MSMs as one
    phase, so each of the backend's MSM calls is timed around; a call returns its point on
    the host, so its kernels have ended. With PROOFFLOW_MSM_OVERLAP the MSMs run at once
    and these spans overlap; the CPU backend on several threads (PROOFFLOW_CPU_THREADS)
    computes them all in one call, and there are none."""
    names = {id(getattr(pk, table)): name for table, name in MSMS.items()}
    inner = backend.msm_job

    def timed(job):
        t0 = time.perf_counter()
        try:
            return inner(job)
        finally:
            into[names[id(job.table)]] = time.perf_counter() - t0
    backend.msm_job = timed
    try:
        yield
    finally:
        del backend.msm_job  # the class's again


def _transfer(t) -> dict:
    return {"bytes": t.nbytes, "ms": round(t.ms, 3), "kind": t.kind, "gbps": round(t.gbps, 2)}


def prove_once(key, staged, backend) -> dict:
    """One proof of the staged partition: its phases and MSMs (s), uploads, verification."""
    from proofflow.prover import pipeline
    from proofflow.prover.groth16 import verifier
    from proofflow.prover.timing import PhaseTimer
    timer, transfers, msms = PhaseTimer(), {}, {}
    with timed_msms(backend, key.pk, msms):
        pending = pipeline.prove_device(key, staged, backend, timer, transfers)
    proof = pending.finish(timer)
    with timer.phase(Phase.VERIFY):
        verified = verifier.verify(key.pk.vk, staged.public_inputs, proof)
    seconds = timer.totals()
    seconds["device"] = seconds["ntt"] + seconds["msm"]
    seconds.update({f"msm_{name}": s for name, s in msms.items()})
    return {"seconds": {k: round(v, 6) for k, v in seconds.items()},
            "transfers": {name: _transfer(t) for name, t in transfers.items()}, "verified": verified}


def steady(rows: list[dict]) -> dict:
    """Min and median of each timed figure over ``rows`` (the measured proofs)."""
    return {k: {"min": min(r["seconds"][k] for r in rows), "median": statistics.median(r["seconds"][k] for r in rows)}
            for k in rows[0]["seconds"]}


def device_memory() -> dict:
    """The current device's memory: its total, what is in use, what CuPy's pool holds."""
    from proofflow.prover import device
    free, total = device.memory()
    return {"total_bytes": total, "used_bytes": total - free, "pool_bytes": device.pool_bytes()}


def kept_rows(pk, options) -> dict:
    """Each resident table's rows on the device: its points less those at infinity, where it
    drops them (``device.density``)."""
    from proofflow.prover.device import msm as gpu_msm
    tables = {t: getattr(pk, t) for t in MSMS if getattr(pk, t).device_cache}
    return {t: len(table) if (rows := gpu_msm.kept_rows(table, options)) is None else int(rows.shape[0])
            for t, table in tables.items()}


def _check(args) -> RunConfig:
    """The run's config (``spec.validate_params``: the circuit, size and backend, and unless
    --no-check whether it fits this machine, its key in ``args.key``)."""
    from proofflow import spec
    from proofflow.prover import device, resources

    def fit_check(config):
        return resources.fit_check(config, resources.probe(config, key_dir=args.key))

    params = {"circuit": args.circuit, "log2": args.log2, "partitions": 1, "seed": args.seed, "backend": args.backend,
              "curve": args.curve}
    if args.input is not None:
        params["inputs"] = [str(args.input)]
    return spec.validate_params(params, device.available, None if args.no_check else fit_check)


def describe(args, config: RunConfig, key, key_budget: int | None) -> dict:
    """The run's sizes, its settings (the MSM plans the key cache chose for the key within
    ``key_budget``) and the resource check's estimate of it."""
    from proofflow import settings
    from proofflow.prover import resources
    from proofflow.prover.staging.segment import abc_bytes
    current = settings.current()
    precompute = current.msm_precompute
    n, cs = key.domain_size, key.cs
    need = resources.estimate(config, resources.probe(config, key_dir=args.key),
                              resources.Shape(n, cs.num_variables, cs.num_instance, cs.curve))
    return {"sizes": {"n": n, "variables": cs.num_variables, "abc_bytes": abc_bytes(n),
                      "witness_bytes": cs.num_variables * 32,
                      "key_table_bytes": sum(getattr(key.pk, t).rows.nbytes for t in MSMS),  # as stored
                      "key_encodings": sorted({getattr(key.pk, t).encoding for t in MSMS}),
                      "key_resident_bytes": key.nbytes},
            "settings": {"msm_precompute": "auto" if precompute is None else precompute,
                         "key_budget_bytes": key_budget, "msm_overlap": current.msm_overlap,
                         "staging_budget": current.staging_budget, "staging": config.staging.value,
                         "plans": {t: [p.c, p.shifts] for t, p in (key.plans or {}).items()}},
            "estimate": {"host_prove_bytes": need.host_prove, "device_bytes": need.device}}


def run(args) -> dict:
    from proofflow import settings
    from proofflow.prover import pipeline, resources
    from proofflow.prover.keys import KeyCache
    from proofflow.prover.staging.pool import staging_pool
    from proofflow.prover.backend.by_name import device_options, get_backend
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.timing import PhaseTimer
    config, current = _check(args), settings.current()
    gpu, options = config.backend == "gpu", device_options(current)
    circuit, timer = get_circuit(args.circuit, config.log2, config.curve), PhaseTimer()
    backend = get_backend(config.backend, options)
    host = {"start": resources.mem_available()}
    env = _env.environment(("numpy", "py-arkworks-bls12381", "zksnake", "cupy-cuda12x", "cupy-cuda13x"))
    from proofflow.prover import device
    if gpu:
        env["device"] = device.name()
    result = {"environment": env, "circuit": args.circuit, "log2": config.log2, "curve": config.curve,
              "backend": config.backend,
              "input": str(args.input) if args.input else None,
              "key": str(args.key), "seed": args.seed, "warmup": args.warmup, "repeats": args.repeats,
              "checked": not args.no_check, "host_available_bytes": host}

    def save() -> None:
        _env.write(args.out, result)

    _say(f"partition: {args.circuit} 2^{config.log2} over {config.curve} on the {config.backend} backend, "
         f"key {args.key}")
    with timer.phase(Phase.WARM_UP):
        backend.warm_up()
    # as a prover service keeps keys: within the device's key budget, with MSM copies on the GPU
    keys = KeyCache(current.key_budget.of(device.memory_bytes()) if gpu else None, options if gpu else None)
    key = keys.get(args.key, args.circuit, config.log2, timer, curve=config.curve)
    _say(f"  key loaded in {timer.totals()['key_load']:.1f} s; uploading it")
    keys.make_resident(key, backend.prepare, timer)
    host["after_key_upload"] = resources.mem_available()
    result.update(describe(args, config, key, keys.budget))
    result["device_memory"] = memory = {"after_key_upload": device_memory()} if gpu else None
    if gpu:
        result["kept_rows"] = kept_rows(key.pk, options)
    _say(f"  key resident in {timer.totals()['key_upload']:.1f} s; synthesizing the partition")
    with pipeline.synthesize(circuit, args.seed, 0, staging_pool(config.staging is MemoryKind.PINNED),
                             timer, input=config.inputs[0] if config.inputs else None) as staged:
        host["after_synthesis"] = resources.mem_available()
        result["witness"] = witness_classes(staged.witness, key.cs.num_instance, key.cs.fr)
        result["once_s"] = {k: round(v, 4) for k, v in timer.totals().items()}
        save()
        result["proofs"] = []
        for i in range(args.warmup + args.repeats):
            row = {"warmup": i < args.warmup, **prove_once(key, staged, backend)}
            result["proofs"].append(row)
            if gpu:
                memory["after_proofs"] = device_memory()
            s = row["seconds"]
            _say(f"  proof {i + 1}/{args.warmup + args.repeats}{' (warm-up)' if row['warmup'] else ''}: device "
                 f"{s['device']:.3f} s (ntt {s['ntt']:.3f}, msm {s['msm']:.3f}), h2d {s['h2d']:.3f} s, "
                 f"{'verified' if row['verified'] else 'DOES NOT VERIFY'}")
            save()
    host["after_proofs"] = resources.mem_available()
    measured = [r for r in result["proofs"] if not r["warmup"]]
    result["steady"] = steady(measured)
    result["target"] = verdict(args.circuit, config.log2, result["steady"]["device"]["median"], config.curve)
    result["all_verified"] = all(r["verified"] for r in result["proofs"])
    save()
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.partition", description=__doc__.split("\n\n")[0])
    p.add_argument("--circuit", required=True, help=f"{' or '.join(sorted(TARGETS_S))}, or a registered circom circuit")
    p.add_argument("--log2", type=int, help="the size (a registered circuit's is its own)")
    p.add_argument("--key", type=Path, help="the key directory `python -m proofflow.prover setup` wrote "
                   "(a registered circuit's: the registry's)")
    p.add_argument("--input", type=Path, help="a registered circuit's partition: a .wtns or input.json, in the "
                   "input roots (PROOFFLOW_INPUT_ROOTS)")
    p.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    from proofflow.spec import CURVES
    p.add_argument("--curve", choices=CURVES, help="a built-in family's curve (default bls12_381; its key must be "
                   "over it); a registered circuit is over its own")
    p.add_argument("--warmup", type=int, default=1, help="proofs before the measured ones (default 1)")
    p.add_argument("--repeats", type=int, default=3, help="measured proofs (default 3)")
    p.add_argument("--seed", type=int, default=0, help="the partition's inputs (default 0)")
    p.add_argument("--no-check", action="store_true", help="run even where the resource check refuses it")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.warmup < 0 or args.repeats < 1:
        p.error("--warmup must be >= 0 and --repeats >= 1")
    if args.circuit in TARGETS_S and (args.log2 is None or args.key is None or args.input is not None):
        p.error(f"{args.circuit} needs --log2 and --key, and takes no --input")
    if args.circuit not in TARGETS_S:
        if args.input is None:
            p.error(f"circuit {args.circuit!r} needs --input")
        from proofflow.prover.circom import registry
        try:
            args.log2 = int(registry.get(args.circuit)["log2"])
        except registry.RegistrationError as exc:
            p.error(str(exc))
        args.key = args.key or registry.key_dir(args.circuit)
    from proofflow.prover.backend.by_name import BackendUnavailable
    from proofflow.prover.pipeline import InputError
    from proofflow.spec import InvalidParams
    try:
        result = run(args)
    except (InvalidParams, InputError, BackendUnavailable) as exc:
        _say(f"error: {exc}")
        return 2
    t, median = result["target"], result["steady"]["device"]["median"]
    target = f" (target at 2^{t['log2']}: {t['device_phase_s']} s, met: {t['met']})" if t else ""
    _say(f"median device phase {median:.3f} s{target}; "
         f"{'all proofs verify' if result['all_verified'] else 'A PROOF DOES NOT VERIFY'}; wrote {args.out}")
    return 0 if result["all_verified"] else 1


if __name__ == "__main__":
    sys.exit(main())
