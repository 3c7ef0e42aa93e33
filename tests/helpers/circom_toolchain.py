"""The circom toolchain (circom2, snarkjs, circomlib; versions pinned by
tests/circom/package-lock.json), run as the tests run it.

It is installed by ``npm ci`` into tests/circom/node_modules when missing; ``installed()``
skips the calling test, saying why, only when node or npm is absent. circom2 runs the
compiler as WASI, which sees only the current directory and its parents: every tool runs
from tests/circom (which holds circuits/ and node_modules/), and absolute paths reach any
tmp directory.
"""
from __future__ import annotations

from dataclasses import dataclass

import json

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "circom"
CIRCUITS = HERE / "circuits"
BIN = HERE / "node_modules" / ".bin"


class Toolchain:
    def run(self, *args, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run a tool from tests/circom; a failure shows its output."""
        proc = subprocess.run([str(a) for a in args], cwd=HERE, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def snarkjs(self, *args, check: bool = True) -> subprocess.CompletedProcess:
        if check:
            return self.run(BIN / "snarkjs", *args)
        return subprocess.run([str(BIN / "snarkjs"), *map(str, args)], cwd=HERE, capture_output=True, text=True,
                              timeout=300)

    def compile(self, source: Path, out: Path, prime: str = "bls12381", flags=()) -> tuple[Path, Path]:
        """(.r1cs, .wasm) of a circuit whose includes lie in circuits/ or circomlib; ``flags``:
        circom's own (e.g. --O2)."""
        out.mkdir(parents=True, exist_ok=True)
        self.run(BIN / "circom2", source, "--r1cs", "--wasm", "-p", prime, *flags, "-l", "circuits", "-l",
                 "node_modules", "-o", out)
        return out / f"{source.stem}.r1cs", out / f"{source.stem}_js" / f"{source.stem}.wasm"

    def compile_chain(self, out: Path, steps: int, k: int = 1, prime: str = "bls12381") -> tuple[Path, Path]:
        """circuits/chain.circom with STEPS and K, through a main component written to ``out``."""
        out.mkdir(parents=True, exist_ok=True)
        source = out / f"chain_{steps}_{k}.circom"
        source.write_text(f'pragma circom 2.0.0;\ninclude "chain.circom";\n'
                          f"component main {{public [x]}} = Chain({steps}, {k});\n")
        return self.compile(source, out, prime)


def installed() -> Toolchain:
    """The toolchain, installed first if missing; skips the test without node and npm."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed: the circom tests run circom2 and snarkjs on node")
    if not all((BIN / tool).exists() for tool in ("snarkjs", "circom2")):
        proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci in {HERE} failed:\n{proc.stdout}\n{proc.stderr}")
    return Toolchain()


@dataclass
class Circuit:
    """A compiled circuit with its zkey (after one contribution) and verification key."""
    toolchain: Toolchain
    name: str
    dir: Path
    r1cs: Path
    wasm: Path
    zkey: Path | None = None
    vk: Path | None = None

    def witness(self, inputs: dict, label: str = "w") -> Path:
        """A .wtns by ``snarkjs wtns calculate`` from the circuit's wasm (values may be
        nested lists); ``label`` names its files in the circuit's directory."""
        src, out = self.dir / f"{label}.input.json", self.dir / f"{label}.wtns"
        src.write_text(json.dumps({k: _decimal_strings(v) for k, v in inputs.items()}))
        self.toolchain.snarkjs("wtns", "calculate", self.wasm, src, out)
        return out


def _decimal_strings(value):
    return [_decimal_strings(v) for v in value] if isinstance(value, list) else str(value)


def power(r1cs_paths) -> int:
    """The smallest powers-of-tau power that fits every circuit: its domain (the smallest
    power of two above nConstraints + nPublic) must be at most 2^power."""
    from proofflow.prover.circom import read_r1cs
    sizes = [read_r1cs(p) for p in r1cs_paths]
    return max((r.n_constraints + r.n_public).bit_length() for r in sizes)


def cpp_toolchain_missing() -> str | None:
    """Why circom's C++ witness generators (``circom --c``) cannot be built here, or None."""
    for tool in ("g++", "make", "nasm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    for header in ("gmp.h", "nlohmann/json.hpp"):
        probe = subprocess.run(["g++", "-x", "c++", "-E", "-"], input=f"#include <{header}>\n", capture_output=True,
                               text=True)
        if probe.returncode:
            return f"<{header}> is missing (libgmp-dev, nlohmann-json3-dev)"
    return None
