"""One Groth16 proof from a snarkjs zkey, as ``snarkjs groth16 prove`` and ``fullprove`` make it.

The zkey comes through the key cache (``zkey_cache``: parsed once, kept by its bytes). The
proof is made in this process, or by the device's warm prover service (``dropin_service``):
by default on the GPU, where the service keeps the CUDA context, the kernels and the key's
tables resident between calls (PROOFFLOW_GROTH16_SERVICE, ``--service``/``--no-service``).
Outputs are written atomically, only once the proof has verified against the zkey's own
verifying key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings
from proofflow.prover import files
from proofflow.prover.backend.by_name import get_backend, resolve
from proofflow.prover.circom import dropin_service, snarkjs_json
from proofflow.prover.circom.errors import KeyMismatch
from proofflow.prover.circom.prover import prove, public_signals
from proofflow.prover.circom.wtns import read_wtns
from proofflow.prover.circom.zkey import ZKey
from proofflow.prover.circom.zkey_cache import load_zkey


@dataclass(frozen=True)
class Proved:
    """What a drop-in call did: the backend that proved, whether the zkey came from the
    cache (and its entry), and the warm service that proved (None: this process)."""
    backend: str
    cached: bool
    cache_dir: Path
    service: dropin_service.ServiceUse | None = None


def uses_service(backend: str, service: bool | None = None) -> bool:
    """Whether a proof on ``backend`` ("cpu" or "gpu") goes through the warm prover service:
    ``service`` when given (the command line's), else PROOFFLOW_GROTH16_SERVICE (auto: on the GPU)."""
    if service is not None:
        return service
    choice = settings.current().groth16_service
    return choice == "on" or (choice == "auto" and backend == "gpu")


def prove_files(zkey_path, witness: Callable, proof_path, public_path, backend: str = "auto",
                service: bool | None = None) -> Proved:
    """``snarkjs groth16 prove``: ``witness(zkey)`` gives the witness's Fr vector, of the
    zkey's size (``wtns_witness``, ``wasm_witness``); proof.json and public.json are written
    in snarkjs's layout. ``service``: through the warm prover service or not (None: as
    ``uses_service`` decides). ValueErrors name the file or value at fault."""
    zkey, cached, where = load_zkey(zkey_path)
    name = resolve(backend)
    used = None
    if uses_service(name, service):
        w = witness(zkey)
        proof, used = dropin_service.prove(zkey, where, w, name)
    else:
        engine = get_backend(name)
        w = witness(zkey)
        proof = prove(zkey, w, engine)
    # both files or neither: each renamed into place only once both are written
    with files.atomic_path(proof_path) as proof_tmp, files.atomic_path(public_path) as public_tmp:
        proof_tmp.write_bytes(snarkjs_json.proof_bytes(proof))
        public_tmp.write_bytes(snarkjs_json.public_bytes(public_signals(zkey, w)))
    return Proved(name, cached, where, used)


def _sized(zkey: ZKey, w: np.ndarray, source: str) -> np.ndarray:
    if w.shape[0] != zkey.n_vars:
        raise KeyMismatch("the number of signals", f"zkey {zkey.n_vars}, witness {w.shape[0]}", source)
    return w


def wtns_witness(path) -> Callable:
    return lambda zkey: _sized(zkey, read_wtns(path, zkey.curve), f"the witness {path}")


def wasm_witness(input_path, wasm_path) -> Callable:
    """input.json through the circuit's wasm (``witness.calculate_witness``: bounded JSON,
    the inputs checked against the circuit's signals)."""
    def compute(zkey: ZKey) -> np.ndarray:
        from proofflow.prover.circom.witness import calculate_witness  # wasmtime: only when asked for
        w = calculate_witness(Path(wasm_path), Path(input_path), zkey.curve)
        return _sized(zkey, w, f"the witness of {wasm_path}")
    return compute
