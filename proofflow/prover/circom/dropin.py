"""One Groth16 proof from a snarkjs zkey, as ``snarkjs groth16 prove`` and ``fullprove`` make it.

A zkey is read once: what its parse derives (the point tables out of Montgomery form and
checked on the curve, the A and B coefficients as sparse matrices) is kept in the key cache,

    $PROOFFLOW_PARAMS_CACHE/zkeys/<sha256 of the zkey>/
      key/         the proving key (ProvingKey.save: tables memory-mapped on load)
      a/, b/       section 4's matrices (indptr, indices, coeffs .npy)
      zkey.json    sizes and curve, written last: its presence marks the entry usable
    $PROOFFLOW_PARAMS_CACHE/zkeys/by-stat/<digest of the file's stat>   its SHA-256

each entry written whole by ``files.atomic_dir``, so later calls with the same zkey bytes
skip the parse, and those with the same unchanged file skip the hash too. Outputs are
written atomically, only once the proof has verified against the zkey's own verifying key.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings
from proofflow.prover import bounded_json, files
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circom import snarkjs_json
from proofflow.prover.circom.errors import CorruptFile, KeyMismatch
from proofflow.prover.circom.prover import prove, public_signals
from proofflow.prover.circom.wtns import read_wtns
from proofflow.prover.circom.zkey import ZKey, read_zkey
from proofflow.prover.curves import registry
from proofflow.prover.groth16.data_structures import KeyFormatError, ProvingKey
from proofflow.prover.r1cs import SparseMatrix

FORMAT = "proofflow-zkey-cache/1"
_CSR = ("indptr", "indices", "coeffs")
_HEX64 = re.compile("[0-9a-f]{64}")


@dataclass(frozen=True)
class Proved:
    """What a drop-in call did: the backend that proved, and whether the zkey came from the cache."""
    backend: str
    cached: bool
    cache_dir: Path


def cache_dir(digest: str) -> Path:
    return settings.current().params_cache / "zkeys" / digest


def load_zkey(path) -> tuple[ZKey, bool, Path]:
    """The zkey at ``path``, from the key cache when its bytes were seen before (then
    ``True``), else parsed (every check of ``read_zkey``) and put in the cache."""
    path = Path(path)
    try:
        digest = _digest(path)
    except OSError as exc:
        raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from None
    where = cache_dir(digest)
    files.recover_dirs(where.parent, where.name)
    cached = _from_cache(path, where)
    if cached is not None:
        return cached, True, where
    zkey = read_zkey(path)
    if (where / "zkey.json").exists():  # a concurrent first call cached it meanwhile
        return zkey, False, where
    with files.atomic_dir(where) as tmp:
        zkey.pk.save(tmp / "key")
        for name, matrix in (("a", zkey.a), ("b", zkey.b)):
            for part in _CSR:
                files.save_npy(tmp / name / f"{part}.npy", getattr(matrix, part))
        files.write_json(tmp / "zkey.json", {"format": FORMAT, "curve": zkey.curve.name, "n_vars": zkey.n_vars,
                                             "n_public": zkey.n_public, "domain_size": zkey.domain_size})
    return zkey, False, where


def _digest(path: Path) -> str:
    """The zkey's SHA-256, remembered by the file's identity and stat (device, inode, size,
    mtime and ctime: any write changes the ctime), so a multi-GB zkey is hashed once, as
    the key tables' digests are trusted by their stat (``ProvingKey.load``)."""
    st = path.stat()
    ident = hashlib.sha256(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}".encode())
    memo = settings.current().params_cache / "zkeys" / "by-stat" / ident.hexdigest()
    try:
        digest = memo.read_text()
        if _HEX64.fullmatch(digest):
            return digest
    except OSError:
        pass
    digest = files.sha256_file(path)
    files.write_bytes(memo, digest.encode())
    return digest


def _from_cache(path: Path, where: Path) -> ZKey | None:
    """The cached entry, or None when there is none or it is unusable (it is then derived again)."""
    try:
        meta = bounded_json.load(where / "zkey.json")
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            return None
        curve = registry.get_curve(meta["curve"])
        n_vars, n_public, size = int(meta["n_vars"]), int(meta["n_public"]), int(meta["domain_size"])
        pk = ProvingKey.load(where / "key")
        a, b = (SparseMatrix(curve, size, n_vars, *(np.load(where / name / f"{part}.npy", mmap_mode="r",
                                                            allow_pickle=False) for part in _CSR))
                for name in ("a", "b"))
    except (OSError, ValueError, KeyError, TypeError, KeyFormatError):
        return None
    if any(m.indptr.shape != (size + 1,) or m.indices.shape[0] != m.coeffs.shape[0] for m in (a, b)):
        return None
    return ZKey(path, n_vars, n_public, size, pk, a, b)


def prove_files(zkey_path, witness: Callable, proof_path, public_path, backend: str = "auto") -> Proved:
    """``snarkjs groth16 prove``: ``witness(zkey)`` gives the witness's Fr vector, of the
    zkey's size (``wtns_witness``, ``wasm_witness``); proof.json and public.json are written
    in snarkjs's layout. ValueErrors name the file or value at fault."""
    zkey, cached, where = load_zkey(zkey_path)
    engine = get_backend(backend)
    w = witness(zkey)
    proof = prove(zkey, w, engine)
    # both files or neither: each renamed into place only once both are written
    with files.atomic_path(proof_path) as proof_tmp, files.atomic_path(public_path) as public_tmp:
        proof_tmp.write_bytes(snarkjs_json.proof_bytes(proof))
        public_tmp.write_bytes(snarkjs_json.public_bytes(public_signals(zkey, w)))
    return Proved(engine.name, cached, where)


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
