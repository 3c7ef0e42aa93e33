"""Circuits as a user registers them (``proofflow circuit add``): a circom circuit's files,
checked once and kept under the proofflow home, so proof runs name the circuit alone.

    $PROOFFLOW_HOME/circuits/<name>/
      circuit.json             what it is: curve, size, signals, and each file's SHA-256
      circuit.r1cs             the constraints (witness checks, a/b/c)
      circuit.wasm             the witness generator, when registered (inputs as input.json)
      witness-generator[.dat]  circom's C++ witness generator (circom --c, built), when
                               registered with the wasm: used instead of it
      verification_key.json    snarkjs's form, for `snarkjs groth16 verify`
      key/                     the zkey as a proofflow proving key (tables memory-mapped,
                               H in snarkjs's odd-coset basis), so runs never parse the zkey

The directory is written whole and swapped in by renames (``files.atomic_dir``), so a
registration or a replace killed half-way leaves the circuit as it was; what the killed
writer left (a dot-named directory, never listed) is undone or removed at the registry's
next use.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from proofflow import settings, spec
from proofflow.prover import files
from proofflow.prover.circom import native_witness, snarkjs_json
from proofflow.prover.circom.errors import CircomFileError, CorruptFile
from proofflow.prover.circom.r1cs import read_r1cs
from proofflow.prover.circom.zkey import read_zkey

FORMAT = "proofflow-circuit/1"
WASM_MAGIC = b"\0asm"
GENERATOR = "witness-generator"  # the program reads its constants from the same path + ".dat"


class RegistrationError(ValueError):
    """A circuit that cannot be registered under that name (taken, not a valid name)."""


def circuit_dir(name: str) -> Path:
    return settings.current().circuits_dir / name


def _recover() -> None:
    """Restore a circuit whose replace was killed between its renames, and remove what killed writers left."""
    files.recover_dirs(settings.current().circuits_dir)


def add(name: str, r1cs_path, zkey_path, wasm_path=None, replace: bool = False, progress=None,
        generator_path=None) -> dict:
    """Register ``name``: the r1cs and zkey read and checked against each other (CorruptFile,
    WrongField, KeyMismatch name what is wrong), the wasm checked to be the r1cs's witness
    generator (its prime, signals and inputs), the C++ witness generator (with the wasm
    only) to be a program with its .dat beside it, then the
    circuit's directory written. Returns its circuit.json."""
    say = progress or (lambda msg: None)
    if not spec.CIRCUIT_NAME.fullmatch(name or ""):
        raise RegistrationError(f"circuit name {name!r}: use 1 to 63 lower-case letters, digits, '_' or '-', "
                                "starting with a letter")
    if name in spec.CIRCUITS:
        raise RegistrationError(f"{name!r} is a built-in circuit; choose another name")
    _recover()
    final = circuit_dir(name)
    if (final / "circuit.json").exists() and not replace:
        raise RegistrationError(f"circuit {name!r} is registered already ({final}); pass --replace to replace it")
    r1cs_path, zkey_path = Path(r1cs_path), Path(zkey_path)
    say(f"reading {r1cs_path}")
    r1cs = read_r1cs(r1cs_path)  # over the registered curve its prime names
    say(f"reading {zkey_path}")
    zkey = read_zkey(zkey_path)
    zkey.check_matches(r1cs)
    if wasm_path is not None:
        wasm_path = Path(wasm_path)
        say(f"checking {wasm_path}")
        _check_wasm(wasm_path, r1cs_path, r1cs, zkey.pk.curve)
    if generator_path is not None:
        if wasm_path is None:
            raise RegistrationError("a C++ witness generator is registered with the circuit's .wasm (--wasm), "
                                    "which checks the inputs")
        generator_path = native_witness.check_program(Path(generator_path))
    pk = zkey.pk
    pk.circuit = name
    info = {"format": FORMAT, "name": name, "curve": pk.curve.name, "log2": pk.log2,
            "constraints": r1cs.cs.num_constraints,
            "signals": zkey.n_vars, "public": zkey.n_public, "wasm": wasm_path is not None,
            "witness_generator": generator_path is not None,
            "files": {"r1cs": {"source": str(r1cs_path.resolve()), "sha256": files.sha256_file(r1cs_path)},
                      "zkey": {"source": str(zkey_path.resolve()), "sha256": files.sha256_file(zkey_path)}},
            "registered_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with files.atomic_dir(final) as tmp:
        shutil.copyfile(r1cs_path, tmp / "circuit.r1cs")
        if wasm_path is not None:
            shutil.copyfile(wasm_path, tmp / "circuit.wasm")
            info["files"]["wasm"] = {"source": str(wasm_path.resolve()), "sha256": files.sha256_file(wasm_path)}
        if generator_path is not None:
            for suffix in ("", ".dat"):  # the program, and its constants
                src = Path(f"{generator_path}{suffix}")
                shutil.copyfile(src, f"{tmp / GENERATOR}{suffix}")
                info["files"][GENERATOR + suffix] = {"source": str(src.resolve()), "sha256": files.sha256_file(src)}
            (tmp / GENERATOR).chmod(0o755)
        say(f"writing the proving key ({zkey.n_vars} signals, domain 2^{pk.log2})")
        pk.save(tmp / "key")
        snarkjs_json.write_verification_key(tmp / "verification_key.json", zkey.vk)
        files.write_json(tmp / "circuit.json", info)  # last: its presence marks the circuit usable
    return info


def _check_wasm(wasm_path: Path, r1cs_path: Path, r1cs, curve) -> None:
    """The wasm is the r1cs's witness generator: WebAssembly of circom 2, of the r1cs's prime
    (else WrongField), computing its wires from its inputs (a generator of another circuit
    fails at run time otherwise, on every input)."""
    with open(wasm_path, "rb") as f:
        if f.read(4) != WASM_MAGIC:
            raise CorruptFile(wasm_path, "is not WebAssembly (no \\0asm header)")
    from proofflow.prover.circom.witness import generator_sizes  # wasmtime, only when a wasm is given
    n_wires, n_inputs = generator_sizes(wasm_path, curve)
    wanted = r1cs.n_pub_in + r1cs.n_prv_in
    if (n_wires, n_inputs) != (r1cs.n_wires, wanted):
        raise CircomFileError(wasm_path, f"is not the witness generator of {r1cs_path}: it computes {n_wires} "
                                         f"signals from {n_inputs} input values, the r1cs has {r1cs.n_wires} "
                                         f"signals and {wanted} inputs")


def get(name: str) -> dict:
    _recover()
    info = spec.circuit_info(name)
    if info is None:
        raise RegistrationError(f"no registered circuit {name!r} (known: {', '.join(spec.registered_circuits()) or 'none'})")
    return info


def key_dir(name: str) -> Path:
    return circuit_dir(name) / "key"


def remove(name: str) -> bool:
    get(name)
    return files.remove_tree(circuit_dir(name))


def listing() -> list[dict]:
    _recover()
    infos = (spec.circuit_info(name) for name in spec.registered_circuits())
    return [info for info in infos if info is not None]  # one unreadable circuit.json does not hide the others


def dumps(info: dict) -> str:
    return json.dumps(info, indent=1, sort_keys=True)
