"""The session's circom circuits, compiled and put through small real snarkjs ceremonies, for
every test that needs them (tests/circom, tests/ethereum, bench's): each set is made once per
test run (tests/helpers/session_builds.py) and each session gets its own copy. tests/conftest.py
imports these fixtures, so that one instance serves both directories.

On BLS12-381 (proofflow's default curve): circuits/gadgets.circom (circomlib's Num2Bits,
LessThan and Poseidon), chain (100 steps), chain_k2 (the same shape with other coefficients)
and circuits/arrays.circom (array inputs); all but arrays through one ceremony.

On BN254 (``circom2 -p bn128``, snarkjs's "bn128"): chain (100 steps: the BLS12-381 chain's
shape, so its wasm and r1cs differ from that one's by the prime alone; public signals [y, x])
and gadgets (--O2, so that it fits 2^9), through one ceremony of the smallest power both fit.

The compiler and snarkjs run one process per circuit: they run side by side.
"""
from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from circom_toolchain import CIRCUITS, Circuit, Toolchain, installed, power
from session_builds import built_once

CHAIN_STEPS = 100
BLS_KEYED = ("gadgets", "chain", "chain_k2")


def _parallel(jobs) -> list:
    """Each job (a callable) in a thread of its own: each runs a node process."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return [f.result() for f in [pool.submit(job) for job in jobs]]


def _outputs(directory: Path, stem: str) -> tuple[Path, Path]:
    """(.r1cs, .wasm) where Toolchain.compile puts them."""
    return directory / f"{stem}.r1cs", directory / f"{stem}_js" / f"{stem}.wasm"


# name -> (stem of the compiled files, how to compile it into a directory)
def _bls_sources(toolchain: Toolchain) -> dict:
    return {"gadgets": ("gadgets", lambda d: toolchain.compile(CIRCUITS / "gadgets.circom", d)),
            "chain": (f"chain_{CHAIN_STEPS}_1", lambda d: toolchain.compile_chain(d, CHAIN_STEPS)),
            "chain_k2": (f"chain_{CHAIN_STEPS}_2", lambda d: toolchain.compile_chain(d, CHAIN_STEPS, k=2)),
            "arrays": ("arrays", lambda d: toolchain.compile(CIRCUITS / "arrays.circom", d))}


def _bn_sources(toolchain: Toolchain) -> dict:
    return {"chain": (f"chain_{CHAIN_STEPS}_1", lambda d: toolchain.compile_chain(d, CHAIN_STEPS, prime="bn128")),
            "gadgets": ("gadgets", lambda d: toolchain.compile(CIRCUITS / "gadgets.circom", d, prime="bn128",
                                                               flags=("--O2",)))}


def _compile(sources: dict, out: Path) -> None:
    _parallel([lambda make=make, name=name: make(out / name) for name, (_, make) in sources.items()])


def _ceremony(toolchain: Toolchain, curve: str, compiled: Path, names, out: Path) -> None:
    """``names``' directories of ``compiled`` copied to ``out``, each with c.zkey (one
    contribution) and verification_key.json from one powers-of-tau ceremony on ``curve``."""
    for name in names:
        shutil.copytree(compiled / name, out / name)
    r1cs = [next((out / name).glob("*.r1cs")) for name in names]
    ptau = out / "ptau"
    ptau.mkdir()
    toolchain.snarkjs("powersoftau", "new", curve, power(r1cs), ptau / "pot0.ptau")
    toolchain.snarkjs("powersoftau", "contribute", ptau / "pot0.ptau", ptau / "pot1.ptau", "--name=tests",
                      "-e=proofflow tests")
    toolchain.snarkjs("powersoftau", "prepare", "phase2", ptau / "pot1.ptau", ptau / "pot.ptau")

    def key(r1cs: Path) -> None:
        d = r1cs.parent
        toolchain.snarkjs("groth16", "setup", r1cs, ptau / "pot.ptau", d / "c0.zkey")
        toolchain.snarkjs("zkey", "contribute", d / "c0.zkey", d / "c.zkey", "--name=tests", "-e=proofflow tests")
        toolchain.snarkjs("zkey", "export", "verificationkey", d / "c.zkey", d / "verification_key.json")
    _parallel([lambda r=r: key(r) for r in r1cs])


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return installed()


# --- BLS12-381 ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def compiled(toolchain, tmp_path_factory) -> dict[str, Circuit]:
    """gadgets, chain, chain_k2 and arrays, compiled, with no key."""
    sources = _bls_sources(toolchain)
    root = built_once(tmp_path_factory, "circom-bls12381", lambda out: _compile(sources, out))
    return {name: Circuit(toolchain, name, root / name, *_outputs(root / name, stem))
            for name, (stem, _) in sources.items()}


@pytest.fixture(scope="session")
def ceremony(toolchain, compiled, tmp_path_factory) -> dict[str, Circuit]:
    """gadgets, chain and chain_k2 through one small powers-of-tau ceremony (in directories of
    their own, beside ``compiled``'s)."""
    sources = _bls_sources(toolchain)
    source = compiled["chain"].dir.parent
    root = built_once(tmp_path_factory, "circom-bls12381-keyed",
                      lambda out: _ceremony(toolchain, "bls12381", source, BLS_KEYED, out))
    return {name: Circuit(toolchain, name, root / name, *_outputs(root / name, sources[name][0]),
                          zkey=root / name / "c.zkey", vk=root / name / "verification_key.json")
            for name in BLS_KEYED}


# --- BN254 -------------------------------------------------------------------------------
@dataclass
class Bn128Circuit:
    toolchain: Toolchain
    dir: Path
    r1cs: Path
    wasm: Path
    zkey: Path
    vk: Path

    def witness(self, inputs: dict, label: str) -> Path:
        """A .wtns by ``snarkjs wtns calculate``; ``label`` names its files in the circuit's directory."""
        src, out = self.dir / f"{label}.input.json", self.dir / f"{label}.wtns"
        src.write_text(json.dumps({k: str(v) for k, v in inputs.items()}))
        self.toolchain.snarkjs("wtns", "calculate", self.wasm, src, out)
        return out

    def snarkjs_proof(self, inputs: dict, label: str) -> tuple[Path, Path]:
        """(public.json, proof.json) by ``snarkjs groth16 prove``, in a directory named ``label``."""
        d = self.dir / label
        d.mkdir()
        public, proof = d / "public.json", d / "proof.json"
        self.toolchain.snarkjs("groth16", "prove", self.zkey, self.witness(inputs, label), proof, public)
        return public, proof


@pytest.fixture(scope="session")
def bn128_compiled(toolchain, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """(.r1cs, .wasm) of each BN254 circuit, by name, each in a directory of its own."""
    sources = _bn_sources(toolchain)
    root = built_once(tmp_path_factory, "circom-bn128", lambda out: _compile(sources, out))
    return {name: _outputs(root / name, stem) for name, (stem, _) in sources.items()}


@pytest.fixture(scope="session")
def _bn128_keyed(toolchain, bn128_compiled, tmp_path_factory) -> Path:
    source = bn128_compiled["chain"][0].parent.parent
    return built_once(tmp_path_factory, "circom-bn128-keyed",
                      lambda out: _ceremony(toolchain, "bn128", source, ("chain", "gadgets"), out))


def _keyed(toolchain, root: Path, name: str) -> Bn128Circuit:
    stem = _bn_sources(toolchain)[name][0]
    d = root / name
    return Bn128Circuit(toolchain, d, *_outputs(d, stem), d / "c.zkey", d / "verification_key.json")


@pytest.fixture(scope="session")
def bn128_chain(toolchain, _bn128_keyed) -> Bn128Circuit:
    return _keyed(toolchain, _bn128_keyed, "chain")


@pytest.fixture(scope="session")
def bn128_gadgets(toolchain, _bn128_keyed) -> Bn128Circuit:
    return _keyed(toolchain, _bn128_keyed, "gadgets")
