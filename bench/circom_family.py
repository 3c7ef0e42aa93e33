"""Realistic circom circuits, proved by snarkjs and by proofflow in one run.

    python -m bench.circom_family --sizes 16 18 [--families merkle sha256 chain] [--backend cpu|gpu]
        [--depth 20] [--repeats 3] [--snarkjs-repeats 3] [--work DIR] [--out FILE]
    python -m bench.circom_family --k merkle=1 chain=1021 --depth 3 ...   (a given K per family)

Families, templates in bench/circuits/ over circomlib (tests/circom/node_modules, pinned there):
* merkle: K Poseidon Merkle membership proofs of depth DEPTH against one root (Poseidon-heavy);
* sha256: SHA-256 of a message of K blocks (bit-heavy), up to 2^20 (circom2 runs out of memory past it);
* chain: tests/circom/circuits/chain.circom's chain of K steps (bench.snarkjs's circuit, here as
  circom compiles it), in blocks of 4096 steps (bench/circuits/chain_blocks.circom).
Not EdDSA-Poseidon: circomlib's EdDSA works on Baby Jubjub, a curve over BN254's scalar field;
over BLS12-381's, its base point is not even on the curve.
Per size 2^L, K is the largest whose domain is 2^L (constraints + public + 1 <= 2^L), from the
constraints of K = 1 and 2 (circom's counts are affine in K). Each circuit is compiled by
``circom2 --r1cs --wasm -p bls12381`` (circom's default --O1: --O2 took 5x as long at 2^16 and
would take hours at 2^22); valid inputs and the public signals they must give come from
bench.circom_inputs, independently of the circuit. Then, timed:
* witness: ``snarkjs wtns calculate`` (a process per witness, as users run it) and proofflow's
  calculate_witness (wasmtime, in process; also in core-seconds); both witnesses must be equal
  and give the expected public signals;
* a test-only zkey by ``proofflow setup --r1cs``, registered as a proofflow circuit;
* proofflow: the .wtns proved through the pipeline with the key resident, as the prover service
  holds it (synthesis: a/b/c from the r1cs, every constraint checked; the device and host
  phases): the first (cold) proof, then min and median of the repeats, and the phases of the
  median one;
* snarkjs: ``snarkjs groth16 prove zkey wtns`` per proof, after one warm-up when repeating;
* both verified by the other side, the public signals equal.
ratio: snarkjs's median prove over proofflow's; end_to_end_ratio: with each one's witness added;
witness_abc_core_s: proofflow's witness and synthesis (the .wtns read, a/b/c from the r1cs) in
core-seconds, medians (issue #36's target: at most 3 at 2^22).

Every step is recorded in the circuit's directory under --work as it completes, and a step found
there is not run again: a run cut short (a device call's limit) resumes where it stopped. Results
merge into --out (JSON) by circuit, e.g. "merkle-2p16".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from bench import _env, circom_inputs
from bench.snarkjs import SNARKJS, snarkjs, snarkjs_version
from proofflow import settings
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NODE_MODULES = SNARKJS.parent.parent
CIRCOM = NODE_MODULES / ".bin" / "circom2"
INCLUDES = (HERE / "circuits", ROOT / "tests" / "circom" / "circuits", NODE_MODULES)
POSEIDON_CONSTANTS = NODE_MODULES / "circomlib" / "circuits" / "poseidon_constants.circom"
SEED = 7  # the inputs' and the test-only zkey's
fr = Fr.of(CURVE)


@dataclass(frozen=True)
class Family:
    name: str
    source: str  # the .circom holding the template, found on INCLUDES
    main: str  # the main component, formatted with k and depth
    inputs: Callable[[int, int, int], tuple[dict, list[int]]]  # (k, depth, r) -> input.json, public signals
    max_log2: int = 22  # the largest domain circom2 compiles it for (wasm32: 4 GiB of memory)

    def label(self, k: int, depth: int) -> str:
        return f"{self.name}-d{depth}-k{k}" if self.name == "merkle" else f"{self.name}-k{k}"


FAMILIES = {f.name: f for f in (
    Family("merkle", "merkle.circom", "= MerkleMembership({k}, {depth})",
           lambda k, depth, r: circom_inputs.merkle(k, depth, r, POSEIDON_CONSTANTS, SEED)),
    # circom2 takes about 100 MB a block: 3.6 GB at 2^20's 33 blocks, past 4 GiB before 2^22's 134
    Family("sha256", "sha256_blocks.circom", "= Sha256Blocks({k})", lambda k, depth, r: circom_inputs.sha256(k, SEED),
           max_log2=20),
    Family("chain", "chain_blocks.circom", "{{public [x]}} = ChainBlocks({k}, 4096)",
           lambda k, depth, r: circom_inputs.chain(k, r)),
)}


# -- circom's files ----------------------------------------------------------------------------

@dataclass(frozen=True)
class R1csHeader:
    constraints: int
    wires: int
    public: int  # outputs and public inputs

    @property
    def log2(self) -> int:
        """snarkjs's domain: the smallest power of two above the constraints, public signals and one."""
        return (self.constraints + self.public).bit_length()


def r1cs_header(path: Path) -> R1csHeader:
    """The counts of an .r1cs's header (section 1), without reading its constraints."""
    with open(path, "rb") as f:
        magic, _, n_sections = struct.unpack("<4sII", f.read(12))
        if magic != b"r1cs":
            raise ValueError(f"{path} is not an .r1cs")
        for _ in range(n_sections):
            sid, size = struct.unpack("<IQ", f.read(12))
            if sid == 1:
                n8 = struct.unpack("<I", f.read(4))[0]
                f.seek(n8, 1)
                wires, pub_out, pub_in, _, _, constraints = struct.unpack("<IIIIQI", f.read(28))
                return R1csHeader(constraints, wires, pub_out + pub_in)
            f.seek(size, 1)
    raise ValueError(f"{path} has no header section")


def source_stem(cpp: bool = False) -> str:
    """The compiled circuit's file stem: main, or circuit where circom --c writes the C++ witness
    generator too (--c reserves the name main)."""
    return "circuit" if cpp else "main"


def compile_circuit(family: Family, k: int, depth: int, d: Path, prime: str = CURVE.snarkjs_name,
                    cpp: bool = False) -> dict:
    """The circuit at K compiled into d/build over circom's ``prime`` (-p): STEM.r1cs, STEM_js/STEM.wasm,
    and with ``cpp`` the C++ witness generator's sources in STEM_cpp/ (``source_stem``)."""
    d.mkdir(parents=True, exist_ok=True)
    stem = source_stem(cpp)
    source = d / f"{stem}.circom"
    source.write_text(f'pragma circom 2.0.0;\ninclude "{family.source}";\n'
                      f"component main {family.main.format(k=k, depth=depth)};\n")
    build = d / "build"
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir()
    includes = [arg for path in INCLUDES for arg in ("-l", str(path))]
    t0 = time.perf_counter()
    proc = subprocess.run([str(CIRCOM), str(source), "--r1cs", "--wasm", *(["--c"] if cpp else []), "-p", prime,
                           *includes, "-o", str(build)], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        said = (proc.stdout + proc.stderr)[-3000:]  # a panic's backtrace runs long
        raise RuntimeError(f"circom2 {source}: exit {proc.returncode}\n{said}")
    h = r1cs_header(build / f"{stem}.r1cs")
    return {"compile_s": round(seconds, 2), "constraints": h.constraints, "wires": h.wires, "public": h.public,
            "log2": h.log2, "r1cs_bytes": (build / f"{stem}.r1cs").stat().st_size,
            "wasm_bytes": (build / f"{stem}_js" / f"{stem}.wasm").stat().st_size}


def choose_k(c1: R1csHeader, c2: R1csHeader, log2: int) -> int:
    """The largest K whose domain is at most 2^log2, with constraints affine in K (c1, c2: K = 1, 2)."""
    if c1.public != c2.public:
        raise ValueError("the public signals grow with K: not a family this sizing handles")
    per = c2.constraints - c1.constraints
    k = ((1 << log2) - 1 - c1.public - (c1.constraints - per)) // per
    if k < 1:
        raise ValueError(f"2^{log2} is too small for K = 1 ({c1.constraints} constraints)")
    return k


def calibrated_k(family: Family, depth: int, log2: int, work: Path, prime: str = CURVE.snarkjs_name) -> int:
    tag = "" if prime == CURVE.snarkjs_name else f"-{prime}"  # the default's files predate primes
    path = work / f"calibration-{family.label(0, depth).removesuffix('-k0')}{tag}.json"
    if not path.exists():
        counts = []
        for k in (1, 2):
            with tempfile.TemporaryDirectory(dir=work) as tmp:
                compile_circuit(family, k, depth, Path(tmp), prime)
                counts.append(r1cs_header(Path(tmp) / "build" / "main.r1cs").__dict__)
        _env.write(path, {"k1": counts[0], "k2": counts[1]})
    cal = json.loads(path.read_text())
    return choose_k(R1csHeader(**cal["k1"]), R1csHeader(**cal["k2"]), log2)


# -- one circuit ---------------------------------------------------------------------------------

def stats(xs: list[float], warmup: int) -> dict:
    return {"min": round(min(xs), 4), "median": round(statistics.median(xs), 4), "repeats": len(xs), "warmup": warmup}


def timed(fn, repeats: int, warmup: int) -> tuple[dict, object]:
    """Wall seconds of ``fn()``, and its median in core-seconds (this process's CPU time, all
    its threads: a subprocess's is not in it) as ``cpu_median``."""
    result = None
    xs, cpu = [], []
    for i in range(warmup + repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        if i >= warmup:
            xs.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return {**stats(xs, warmup), "cpu_median": round(statistics.median(cpu), 4)}, result


@dataclass(frozen=True)
class Options:
    backend: str = "cpu"
    repeats: int = 3  # proofflow's timed proofs, after a cold one
    snarkjs_repeats: int = 3  # after a warm-up when more than 1
    witness_repeats: int = 3  # of each, after a warm-up when more than 1
    snarkjs_max: int = 22  # the largest log2 snarkjs proves (its minutes a proof add up on a device call)
    keep: bool = False  # the large files once every step is done


class CircuitRun:
    """One circuit's steps in its directory; each one's record in steps/NAME.json once done."""
    STEPS = ("compile", "inputs", "witness", "zkey", "register", "proofflow", "snarkjs", "verify")

    def __init__(self, family: Family, k: int, depth: int, work: Path, options: Options):
        self.family, self.k, self.depth, self.options = family, k, depth, options
        self.label = family.label(k, depth)
        self.d = work / self.label
        self.steps = self.d / "steps"
        self.r1cs, self.wasm = self.d / "build" / "main.r1cs", self.d / "build" / "main_js" / "main.wasm"
        self.input, self.wtns, self.zkey_file = self.d / "input.json", self.d / "snarkjs.wtns", self.d / "test.zkey"
        self.name = f"bench-{self.label}"  # its name in the proofflow registry

    def record(self) -> dict:
        out = {"family": self.family.name, "k": self.k}
        if self.family.name == "merkle":
            out["depth"] = self.depth
        for name in self.STEPS:
            if (path := self.steps / f"{name}.json").exists():
                out.update(json.loads(path.read_text()))
        if "witness_s" in out and "synthesis_cpu_s" in out:  # issue #36: <= 3 core-seconds at 2^22
            out["witness_abc_core_s"] = round(out["witness_s"]["proofflow"]["cpu_median"] + out["synthesis_cpu_s"], 4)
        if "proofflow_s" in out and out.get("snarkjs_s"):
            pf, sj = out["proofflow_s"]["median"], out["snarkjs_s"]["median"]
            out["ratio"] = round(sj / pf, 2)
            if w := out.get("witness_s"):
                out["end_to_end_ratio"] = round((sj + w["snarkjs"]["median"]) / (pf + w["proofflow"]["median"]), 2)
        return out

    def run(self, backend, write: Callable[[dict], None]) -> dict:
        for name in self.STEPS:
            if (self.steps / f"{name}.json").exists():
                continue
            step = getattr(self, name)
            t0 = time.perf_counter()
            rec = step(backend) if name == "proofflow" else step()
            _env.write(self.steps / f"{name}.json", rec)
            print(f"  {self.label} {name} ({time.perf_counter() - t0:.1f} s): {json.dumps(rec)}", flush=True)
            write(self.record())
        if not self.options.keep:  # the large files: the records and proofs stay
            for path in (self.d / "build", self.zkey_file, self.wtns, self.input):
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
            from proofflow.prover.circom import registry
            if (registry.circuit_dir(self.name) / "circuit.json").exists():
                registry.remove(self.name)
        return self.record()

    def compile(self) -> dict:
        return compile_circuit(self.family, self.k, self.depth, self.d)

    def inputs(self) -> dict:
        t0 = time.perf_counter()
        inputs, public = self.family.inputs(self.k, self.depth, fr.MODULUS)
        seconds = time.perf_counter() - t0
        self.input.write_text(json.dumps(inputs))
        (self.d / "expected.public.json").write_text(json.dumps([str(v) for v in public]))
        return {"inputs_s": round(seconds, 3), "input_bytes": self.input.stat().st_size}

    @property
    def log2(self) -> int:
        return json.loads((self.steps / "compile.json").read_text())["log2"]

    def expected_public(self) -> list[int]:
        return [int(v) for v in json.loads((self.d / "expected.public.json").read_text())]

    def witness(self) -> dict:
        from proofflow.prover.circom import read_wtns
        from proofflow.prover.circom.witness import calculate_witness
        reps, warm = self.options.witness_repeats, 1 if self.options.witness_repeats > 1 else 0
        sj, _ = timed(lambda: snarkjs("wtns", "calculate", self.wasm, self.input, self.wtns), reps, warm)
        pf, w = timed(lambda: calculate_witness(self.wasm, self.input, CURVE), reps, warm)
        ref = read_wtns(self.wtns, CURVE)
        public = fr.to_ints(w[1:1 + r1cs_header(self.r1cs).public])
        return {"witness_s": {"snarkjs": sj, "proofflow": pf}, "witness_equal": bool(np.array_equal(w, ref)),
                "witness_public_matches_expected": public == self.expected_public()}

    def zkey(self) -> dict:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.zkey_file.unlink(missing_ok=True)  # a run cut short may have left part of one
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "proofflow.cli", "setup", "--r1cs", str(self.r1cs), "--out",
                               str(self.zkey_file), "--seed", str(SEED), "--backend", self.options.backend],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"proofflow setup --r1cs {self.r1cs}: exit {proc.returncode}\n{proc.stderr}")
        return {"test_zkey_s": round(time.perf_counter() - t0, 2), "zkey_bytes": self.zkey_file.stat().st_size}

    def register(self) -> dict:
        from proofflow.prover.circom import registry
        t0 = time.perf_counter()
        registry.add(self.name, self.r1cs, self.zkey_file, self.wasm, replace=True)
        return {"register_s": round(time.perf_counter() - t0, 2)}

    def proofflow(self, backend) -> dict:
        from proofflow.prover import pipeline
        from proofflow.prover.circom import registry, snarkjs_json
        from proofflow.prover.circuits.by_name import get_circuit
        from proofflow.prover.keys import KeyCache
        from proofflow.prover.staging.pool import staging_pool
        from proofflow.prover.timing import PhaseTimer
        log2 = self.log2
        circuit = get_circuit(self.name, log2)
        pool = staging_pool(pinned=backend.name == "gpu")

        synthesis_cpu = []

        def prove(timer=None):
            c0 = time.process_time()  # the a/b/c's OpenMP threads included
            with pipeline.synthesize(circuit, 0, 0, pool, timer, input=str(self.wtns)) as staged:
                synthesis_cpu.append(time.process_time() - c0)
                return pipeline.prove(key, staged, backend, timer), staged.public_inputs

        t0 = time.perf_counter()
        key = KeyCache().get(registry.key_dir(self.name), self.name, log2)
        backend.prepare(key.pk)
        prove()
        cold = time.perf_counter() - t0
        runs = []
        for _ in range(self.options.repeats):
            timer = PhaseTimer()
            t0 = time.perf_counter()
            proof, public = prove(timer)
            runs.append((time.perf_counter() - t0, timer))
        median_run = sorted(runs, key=lambda r: r[0])[len(runs) // 2][1]
        out = self.d / "proofflow"
        out.mkdir(exist_ok=True)
        snarkjs_json.write_proof(out / "proof.json", proof)
        snarkjs_json.write_public(out / "public.json", [int(v) for v in public])
        return {"proofflow_cold_s": round(cold, 4), "proofflow_s": stats([r[0] for r in runs], 1),
                "synthesis_cpu_s": round(statistics.median(synthesis_cpu[1:]), 4),
                "proofflow_phases_s": {str(p): round(s, 4) for p, s in median_run.totals().items()},
                "proofflow_load_1m": round(os.getloadavg()[0], 2)}  # the host's load: others' work skews a time

    def snarkjs(self) -> dict:
        if self.log2 > self.options.snarkjs_max:
            return {"snarkjs_s": None, "snarkjs_skipped": f"2^{self.log2} is above --snarkjs-max"}
        out = self.d / "snarkjs"
        out.mkdir(exist_ok=True)
        reps = self.options.snarkjs_repeats
        s, _ = timed(lambda: snarkjs("groth16", "prove", self.zkey_file, self.wtns, out / "proof.json",
                                     out / "public.json"), reps, 1 if reps > 1 else 0)
        return {"snarkjs_s": s, "snarkjs_load_1m": round(os.getloadavg()[0], 2)}

    def verify(self) -> dict:
        from proofflow.prover.circom import registry, snarkjs_json, verify_files
        vk = registry.circuit_dir(self.name) / "verification_key.json"
        ours, theirs = self.d / "proofflow", self.d / "snarkjs"
        said = snarkjs("groth16", "verify", vk, ours / "public.json", ours / "proof.json").stdout
        public = snarkjs_json.read_public(ours / "public.json")
        out = {"snarkjs_verifies_proofflow": "OK" in said, "public_matches_expected": public == self.expected_public()}
        if (theirs / "proof.json").exists():
            out.update(proofflow_verifies_snarkjs=verify_files(vk, theirs / "public.json", theirs / "proof.json"),
                       public_equal=snarkjs_json.read_public(theirs / "public.json") == public)
        return out


# -- the run ----------------------------------------------------------------------------------------

def _family_k(text: str) -> tuple[str, int]:
    name, _, k = text.partition("=")
    if name not in FAMILIES or not k.isdigit() or int(k) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give FAMILY=K, FAMILY one of {', '.join(FAMILIES)}, K >= 1")
    return name, int(k)


def tool_versions() -> dict:
    circom = subprocess.run([str(CIRCOM), "--version"], capture_output=True, text=True, timeout=120)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60)
    return {"snarkjs": snarkjs_version(), "circom": (circom.stdout.strip().splitlines() or [None])[-1],
            "node": node.stdout.strip(), "circom_flags": "--r1cs --wasm -p bls12381 (--O1)"}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--sizes", type=int, nargs="+", default=[16, 18], help="domain log2s (default 16 18)")
    which.add_argument("--k", type=_family_k, nargs="+", metavar="FAMILY=K", help="circuits of a given K instead")
    ap.add_argument("--families", nargs="+", choices=sorted(FAMILIES), default=list(FAMILIES))
    ap.add_argument("--depth", type=int, default=20, help="the Merkle trees' depth (default 20)")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--repeats", type=int, default=3, help="proofflow's timed proofs, after a cold one")
    ap.add_argument("--snarkjs-repeats", type=int, default=3, help="snarkjs's timed proofs (after a warm-up if > 1)")
    ap.add_argument("--snarkjs-max", type=int, default=22, help="the largest log2 snarkjs proves (default 22)")
    ap.add_argument("--witness-repeats", type=int, default=3, help="timed witnesses of each (after a warm-up if > 1)")
    ap.add_argument("--work", type=Path, help="where circuits are built and their steps recorded (default: a "
                                              "temporary directory); a run there resumes the steps not recorded")
    ap.add_argument("--keep", action="store_true", help="keep each circuit's large files (r1cs, wasm, zkey, key)")
    ap.add_argument("--out", type=Path, help="results JSON, merged by circuit (default "
                                             "bench/results/circom-family-BACKEND.json)")
    args = ap.parse_args(argv)
    if min(args.repeats, args.snarkjs_repeats, args.witness_repeats) < 1:
        ap.error("repeats must be at least 1")
    missing = [str(p) for p in (SNARKJS, CIRCOM) if not p.exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: npm ci --prefix tests/circom (or set SNARKJS_BIN)")
    options = Options(args.backend, args.repeats, args.snarkjs_repeats, args.witness_repeats, args.snarkjs_max,
                      args.keep)
    out_path = args.out or HERE / "results" / f"circom-family-{args.backend}.json"
    from proofflow.prover.backend.by_name import get_backend
    backend = get_backend(args.backend)
    backend.warm_up()
    result = json.loads(out_path.read_text()) if out_path.exists() else {"circuits": {}}
    result.update({"environment": _env.environment(("numpy", "py-arkworks-bls12381", "wasmtime", "cupy-cuda12x",
                                                    "cupy-cuda13x")), **tool_versions(), "backend": backend.name})
    if backend.name == "gpu":
        from proofflow.prover import device
        result["device"] = device.name()
    with tempfile.TemporaryDirectory(prefix="proofflow-bench-circom-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("PROOFFLOW_HOME", str(work / "home"))  # the registry of this run
        os.environ.setdefault("PROOFFLOW_INPUT_ROOTS", str(work))  # the witnesses it proves
        settings.reload()
        if args.k:
            plan = [(FAMILIES[name], k, None) for name, k in args.k]
        else:
            plan = [(FAMILIES[name], None, log2) for log2 in args.sizes for name in args.families]
        failed = []
        for family, k, log2 in plan:
            if log2 and log2 > family.max_log2:
                print(f"{family.name} at 2^{log2}: skipped, circom2 compiles it up to 2^{family.max_log2}", flush=True)
                continue

            def write(record: dict) -> None:
                if "log2" in record:
                    result["circuits"][f"{record['family']}-2p{record['log2']}"] = record
                    _env.write(out_path, result)
            try:  # one circuit failing (circom2 out of memory, say) leaves the others to run
                k = k or calibrated_k(family, args.depth, log2, work)
                run = CircuitRun(family, k, args.depth, work, options)
                print(f"{run.label}: K = {k}{f' for 2^{log2}' if log2 else ''}", flush=True)
                write(run.run(backend, write))
            except (RuntimeError, ValueError, OSError) as exc:
                failed.append(f"{family.name}{f' at 2^{log2}' if log2 else ''}")
                print(f"{failed[-1]} failed: {exc}", file=sys.stderr, flush=True)
        if failed:
            sys.exit(f"failed: {', '.join(failed)} (the others' results are in {out_path})")
    return result


if __name__ == "__main__":
    main()
