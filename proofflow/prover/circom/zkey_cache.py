"""snarkjs zkeys in the key cache: read once, what their parse derives kept by their bytes.

    $PROOFFLOW_PARAMS_CACHE/zkeys/<sha256 of the zkey>/
      key/         the proving key (ProvingKey.save: tables memory-mapped on load)
      a/, b/       section 4's matrices (indptr, indices, coeffs .npy)
      zkey.json    sizes and curve, written last: its presence marks the entry usable
    $PROOFFLOW_PARAMS_CACHE/zkeys/by-stat/<digest of the file's stat>   its SHA-256

Each entry is written whole by ``files.atomic_dir``, so later calls with the same zkey
bytes skip the parse, and those with the same unchanged file skip the hash too. A prover
service proves with an entry's key and sizes alone (``keys.KeyCache.get_zkey``): the
caller computes a/b/c with the matrices.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from proofflow import settings
from proofflow.prover import bounded_json, files
from proofflow.prover.circom.errors import CorruptFile
from proofflow.prover.circom.zkey import ZKey, read_zkey
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16.data_structures import KeyFormatError, ProvingKey
from proofflow.prover.r1cs import SparseMatrix

FORMAT = "proofflow-zkey-cache/1"
_CSR = ("indptr", "indices", "coeffs")
_HEX64 = re.compile("[0-9a-f]{64}")
KEY = "key"  # the entry's proving key directory


@dataclass(frozen=True)
class EntrySizes:
    """An entry's zkey.json: what a proof needs of the circuit besides the key and a/b/c."""
    curve: Curve
    n_vars: int
    n_public: int
    domain_size: int


def cache_dir(digest: str) -> Path:
    return settings.current().params_cache / "zkeys" / digest


def read_sizes(where) -> EntrySizes:
    """The entry's sizes; ValueError (KeyFormatError) when zkey.json is missing or malformed."""
    where = Path(where)
    try:
        meta = bounded_json.load(where / "zkey.json")
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError(f"not {FORMAT}")
        sizes = EntrySizes(registry.get_curve(meta["curve"]), int(meta["n_vars"]), int(meta["n_public"]),
                           int(meta["domain_size"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KeyFormatError(f"{where} is no usable zkey cache entry (zkey.json): {exc}") from None
    if not (sizes.domain_size > 0 and sizes.domain_size & (sizes.domain_size - 1) == 0
            and 0 <= sizes.n_public < sizes.n_vars):
        raise KeyFormatError(f"{where}/zkey.json has inconsistent sizes: {sizes}")
    return sizes


def load_zkey(path) -> tuple[ZKey, bool, Path]:
    """The zkey at ``path``, from the key cache when its bytes were seen before (then
    ``True``), else parsed (every check of ``read_zkey``) and put in the cache; also the
    entry's directory. An entry there but unusable (a table changed since) is written again."""
    path = Path(path)
    try:
        digest = _digest(path)
    except OSError as exc:
        raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from None
    where = cache_dir(digest)
    files.recover_dirs(where.parent, where.name)
    existed = (where / "zkey.json").exists()
    cached = _from_cache(path, where)
    if cached is not None:
        return cached, True, where
    zkey = read_zkey(path)
    if not existed and (where / "zkey.json").exists():  # a concurrent first call cached it meanwhile
        return zkey, False, where
    with files.atomic_dir(where) as tmp:
        zkey.pk.save(tmp / KEY)
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
        s = read_sizes(where)
        pk = ProvingKey.load(where / KEY)
        a, b = (SparseMatrix(s.curve, s.domain_size, s.n_vars,
                             *(np.load(where / name / f"{part}.npy", mmap_mode="r", allow_pickle=False)
                               for part in _CSR))
                for name in ("a", "b"))
    except (OSError, ValueError):  # KeyFormatError included
        return None
    if any(m.indptr.shape != (s.domain_size + 1,) or m.indices.shape[0] != m.coeffs.shape[0] for m in (a, b)):
        return None
    return ZKey(path, s.n_vars, s.n_public, s.domain_size, pk, a, b)
