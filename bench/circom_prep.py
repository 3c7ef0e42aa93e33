"""A circom circuit registered, with inputs, for bench.stream (bench/device.sh circom-prep).

    python -m bench.circom_prep --home DIR --work DIR [--sizes 20 22] [--families chain]
                                [--inputs 64] [--backend gpu|cpu] [--depth 20] [--out FILE]
                                [--curve bls12_381|bn254] [--witness wasm|cpp]

Per family and size 2^L, the circuit FAMILY-2pL (FAMILY-CURVE-2pL for a curve other than the
default, e.g. chain-bn254-2p22; FAMILY-...-2pL-cpp with --witness cpp):
* compile: bench/circuits' template at bench.circom_family's K (the largest whose domain is
  2^L), by ``circom2 --r1cs --wasm -p PRIME`` (bls12381, or bn128 for BN254);
* zkey: a test-only zkey by ``proofflow setup --r1cs`` on --backend;
* register: ``proofflow circuit add FAMILY-2pL --r1cs --zkey --wasm`` (and ``--cpp``, circom's C++
  generator built with make, with --witness cpp: ``circom2 --c`` compiles it) into --home, the
  PROOFFLOW_HOME that bench.stream's deployment is then given (its --home); the build's large
  files go once it is registered (the registry holds its own copies);
* inputs: --inputs distinct input.json files, HOME/inputs/FAMILY-2pL/NNNN.json (the home's
  input root): the chain's x and c, merkle's and sha256's seeds (bench.circom_inputs);
* warm: the circuit's constraint system and its wasm's compiled code cached on this machine
  (PROOFFLOW_CACHE, which the stream's tasks read: leave it as the deployment has it), input
  0's witness (timed: witness, a/b/c, every constraint checked) and its public signals
  against those computed without the circuit; then inputs 1-3's witness plus a/b/c in core-seconds
  (``witness_abc_core_s``: this process's CPU time, the wasm compiled and the constraint system mapped).
Each step's record is kept in WORK/FAMILY-2pL/steps/ once it ends, and a recorded step is not
run again: a run cut short (a device call's limit) resumes where it stopped. --out: each
circuit's records, merged by name, with where its inputs are.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import _env, circom_family as cf, circom_inputs
from proofflow.prover.curves import registry as curves
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("compile", "zkey", "register", "inputs", "warm")


def circuit_name(family: str, log2: int, curve: Curve = cf.CURVE, witness: str = "wasm") -> str:
    return f"{family}-{curves.path_tag(curve)}2p{log2}" + ("-cpp" if witness == "cpp" else "")


def make_input(family: str, k: int, depth: int, i: int, expected: bool = False,
               curve: Curve = cf.CURVE) -> tuple[dict, list[int] | None]:
    """Input ``i`` of the family's circuit at K over ``curve`` (distinct for each i), and, if
    ``expected``, the public signals it must give (computed without the circuit; the chain's
    takes K steps)."""
    r = Fr.of(curve).MODULUS
    if family == "chain":
        x, c = 3 + i, 11 + i
        return {"x": str(x), "c": str(c)}, circom_inputs.chain(k, r, x, c)[1] if expected else None
    if family == "merkle":
        return circom_inputs.merkle(k, depth, r, cf.POSEIDON_CONSTANTS, seed=i)
    if family == "sha256":
        return circom_inputs.sha256(k, seed=i)
    raise ValueError(f"family {family!r}: one of {', '.join(cf.FAMILIES)}")


def _run(args: list, log: Path, env: dict | None = None) -> None:
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", *map(str, args)], cwd=ROOT, env=env, stdout=f,
                              stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"python -m {' '.join(map(str, args))}: exit {proc.returncode}\n{log.read_text()[-2000:]}")


class Prep:
    """One circuit's steps in WORK/NAME; each one's record in steps/STEP.json once done."""

    def __init__(self, family: cf.Family, log2: int, depth: int, home: Path, work: Path, n_inputs: int,
                 backend: str, curve: Curve = cf.CURVE, witness: str = "wasm"):
        self.family, self.log2, self.depth, self.backend, self.curve = family, log2, depth, backend, curve
        self.home, self.n_inputs, self.cpp = home, n_inputs, witness == "cpp"
        self.name = circuit_name(family.name, log2, curve, witness)
        self.d = work / self.name
        self.steps = self.d / "steps"
        build, stem = self.d / "build", cf.source_stem(self.cpp)
        self.r1cs, self.wasm, self.zkey_file = build / f"{stem}.r1cs", build / f"{stem}_js" / f"{stem}.wasm", \
            self.d / "test.zkey"
        self.cpp_dir = build / f"{stem}_cpp"  # with --witness cpp: built with make as it is registered
        self.inputs_dir = home / "inputs" / self.name
        # the deployment's registry and input root: under its PROOFFLOW_HOME, whatever this process has
        self.env = {"PROOFFLOW_HOME": str(home), "PROOFFLOW_CIRCUITS": str(home / "circuits"),
                    "PROOFFLOW_INPUT_ROOTS": str(home / "inputs")}

    def record(self) -> dict:
        out = {"family": self.family.name, "log2": self.log2, "curve": self.curve.name, "inputs_dir": str(self.inputs_dir)}
        for name in STEPS:
            if (path := self.steps / f"{name}.json").exists():
                out.update(json.loads(path.read_text()))
        out["complete"] = all((self.steps / f"{name}.json").exists() for name in STEPS)
        return out

    def run(self, say=print) -> dict:
        self.d.mkdir(parents=True, exist_ok=True)
        registered = (self.home / "circuits" / self.name / "circuit.json").exists()
        if (self.steps / "register.json").exists() and not registered:
            say(f"  {self.name}: recorded as registered, but not in {self.home}: from the start")
            shutil.rmtree(self.steps)
        for name in STEPS:
            if (self.steps / f"{name}.json").exists() and not (name == "inputs" and self._inputs_changed()):
                continue
            t0 = time.perf_counter()
            rec = getattr(self, name)()
            rec[f"{name}_step_s"] = round(time.perf_counter() - t0, 2)
            _env.write(self.steps / f"{name}.json", rec)
            say(f"  {self.name} {name} ({rec[f'{name}_step_s']} s): {json.dumps(rec)}")
        if (self.steps / "register.json").exists():  # the registry holds its own copies
            shutil.rmtree(self.d / "build", ignore_errors=True)
            self.zkey_file.unlink(missing_ok=True)
        return self.record()

    def compile(self) -> dict:
        prime = self.curve.snarkjs_name
        k = cf.calibrated_k(self.family, self.depth, self.log2, self.d.parent, prime)
        rec = {"k": k, **cf.compile_circuit(self.family, k, self.depth, self.d, prime, self.cpp)}
        if rec["log2"] != self.log2:
            raise RuntimeError(f"{self.name}: K = {k} compiled to a domain of 2^{rec['log2']}, not 2^{self.log2}")
        if self.family.name == "merkle":
            rec["depth"] = self.depth
        return rec

    @property
    def k(self) -> int:
        return json.loads((self.steps / "compile.json").read_text())["k"]

    def zkey(self) -> dict:
        _run(["proofflow.cli", "setup", "--r1cs", self.r1cs, "--out", self.zkey_file, "--seed", cf.SEED,
              "--backend", self.backend, "--force"], self.d / "zkey.log")
        return {"zkey_bytes": self.zkey_file.stat().st_size}

    def register(self) -> dict:
        _run(["proofflow.cli", "circuit", "add", self.name, "--r1cs", self.r1cs, "--zkey", self.zkey_file,
              "--wasm", self.wasm, *(["--cpp", self.cpp_dir] if self.cpp else []), "--replace"],
             self.d / "register.log", self.env)
        info = json.loads((self.home / "circuits" / self.name / "circuit.json").read_text())
        return {"registered": self.name, "constraints": info["constraints"], "signals": info["signals"],
                "public": info["public"]}

    def _inputs_changed(self) -> bool:
        return len(list(self.inputs_dir.glob("*.json"))) != self.n_inputs

    def inputs(self) -> dict:
        from proofflow.prover import files
        expected = None
        with files.atomic_dir(self.inputs_dir) as tmp:
            for i in range(self.n_inputs):
                inputs, public = make_input(self.family.name, self.k, self.depth, i, expected=i == 0,
                                            curve=self.curve)
                expected = expected or public
                (tmp / f"{i:04d}.json").write_text(json.dumps(inputs))
        (self.d / "expected.public.json").write_text(json.dumps([str(v) for v in expected]))
        return {"inputs": self.n_inputs, "input_bytes": (self.inputs_dir / "0000.json").stat().st_size}

    def warm(self) -> dict:
        from proofflow.prover.circuits.by_name import get_circuit
        with _env.this_process_env(**self.env):
            circuit = get_circuit(self.name, self.log2, self.curve.name)
            t0 = time.perf_counter()
            circuit.constraint_system  # built once, then mapped from the cache
            cs_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            inst = circuit.instance(0, 0, str(self.inputs_dir / "0000.json"))
            witness_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            circuit.witness_map(inst.witness)  # every constraint checked
            abc_s = time.perf_counter() - t0
            # issue #36's figure: witness plus a/b/c warm, in CPU time (every thread, and the C++
            # generator's process)
            core = []
            for i in range(1, min(self.n_inputs, 4)):
                c0 = _env.cpu_seconds()
                circuit.witness_map(circuit.instance(0, 0, str(self.inputs_dir / f"{i:04d}.json")).witness)
                core.append(_env.cpu_seconds() - c0)
        expected = [int(v) for v in json.loads((self.d / "expected.public.json").read_text())]
        if list(inst.public_inputs) != expected:
            raise RuntimeError(f"{self.name}: input 0's public signals {inst.public_inputs} are not those computed "
                               f"without the circuit, {expected}")
        rec = {"constraint_system_s": round(cs_s, 2), "witness_cold_s": round(witness_s, 3),
               "witness_map_s": round(abc_s, 3), "public_matches_expected": True}
        if core:  # input 0's cold witness was the warm-up
            rec["witness_abc_core_s"] = cf.stats(core, warmup=1)
        return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.circom_prep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, required=True, help="bench.stream's PROOFFLOW_HOME (its --home)")
    ap.add_argument("--work", type=Path, required=True, help="the circuits' builds and step records (resumable)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 22], help="domain log2s (default 20 22)")
    ap.add_argument("--families", nargs="+", choices=sorted(cf.FAMILIES), default=["chain"])
    ap.add_argument("--depth", type=int, default=20, help="merkle's tree depth (default 20)")
    ap.add_argument("--inputs", type=int, default=64, help="distinct input.json files a circuit (default 64)")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="gpu", help="the test zkey's setup")
    ap.add_argument("--curve", choices=curves.NAMES, default=cf.CURVE.name,
                    help="the curve the circuits are compiled for and proved over (default %(default)s)")
    ap.add_argument("--witness", choices=("wasm", "cpp"), default="wasm",
                    help="the witness generator registered: the wasm, or also circom's C++ one (circom --c, built "
                         "with make: g++, nasm, libgmp-dev, nlohmann-json3-dev), which proofflow then uses; "
                         "the circuit is named FAMILY-...-2pL-cpp (default %(default)s)")
    ap.add_argument("--out", type=Path, help="the circuits' records, merged by name (default WORK/circom-prep.json)")
    args = ap.parse_args(argv)
    if args.inputs < 1:
        ap.error("--inputs must be at least 1")
    missing = [str(p) for p in (cf.CIRCOM,) if not p.exists()]
    if missing:
        return _fail(f"missing {', '.join(missing)}: npm ci --prefix tests/circom (or set SNARKJS_BIN)")
    home, work = args.home.absolute(), args.work.absolute()
    out_path = args.out or work / "circom-prep.json"
    result = json.loads(out_path.read_text()) if out_path.exists() else {"circuits": {}}
    result.update(home=str(home), environment=_env.environment(("numpy", "py-arkworks-bls12381", "wasmtime")))
    work.mkdir(parents=True, exist_ok=True)
    failed = []
    for log2 in args.sizes:
        for name in args.families:
            family = cf.FAMILIES[name]
            if log2 > family.max_log2:
                print(f"{name} at 2^{log2}: skipped, circom2 compiles it up to 2^{family.max_log2}", flush=True)
                continue
            prep = Prep(family, log2, args.depth, home, work, args.inputs, args.backend, curves.get_curve(args.curve),
                        args.witness)
            print(f"{prep.name}: ...", flush=True)
            try:
                result["circuits"][prep.name] = prep.run()
            except (RuntimeError, ValueError, OSError) as exc:  # one failing leaves the others to run
                failed.append(prep.name)
                result["circuits"][prep.name] = prep.record()
                print(f"{prep.name} failed: {exc}", file=sys.stderr, flush=True)
            _env.write(out_path, result)
    if failed:
        return _fail(f"failed: {', '.join(failed)} (the others' records are in {out_path})")
    print(f"complete: {', '.join(result['circuits'])} in {home} ({out_path})", flush=True)
    return 0


def _fail(msg: str) -> int:
    print(msg, file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
