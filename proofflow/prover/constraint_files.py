"""A constraint system's files in the cache (PROOFFLOW_CACHE/constraint-systems), format 2.

A built-in circuit of 2^27 constraints kept its matrices as int64 row pointers and columns and
a 32-byte coefficient a term: 224 bytes a constraint for the MiMC chain, 30 GB, which beside
the 38.7 GB key passed a 64 GB disk. Most coefficients of a circuit are a few values (1, -1,
powers of two) or one constant a round, so format 2 stores the distinct coefficients once
(``values.npy``, most used first) and each term's index into them, and every index array in
the narrowest unsigned width that holds it (``r1cs.narrow``): the MiMC chain takes ~60 bytes a
constraint, the bits chain ~32 (bench/results/cs-cache-cpu.json). Where the coefficients are
mostly distinct (indices would cost more than they save) each matrix keeps its own
coefficients a term. ``format.json`` names the format, its version, the sizes and every
array's width; the arrays are memory-mapped as stored and the C products read them so, with
every index checked as it is read (``SparseMatrix``).

``load`` refuses a directory it cannot use as it is (an older format, a damaged or tampered
file) with ``UnreadableCache``, one line naming the file and why; its circuit then rebuilds
it (``Circuit.constraint_system``).
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np

from proofflow.prover import files
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.r1cs import INDEX_DTYPES, ConstraintSystem, SparseMatrix, narrow

FORMAT = "proofflow-constraint-system"
VERSION = 2
MANIFEST = "format.json"
_MANIFEST_LIMIT = 64 << 10
_MATRICES = "abc"
_INDEXED, _PER_TERM = "indexed", "per-term"
_FR = np.dtype("<u8")
_DTYPES = {str(t): t for t in INDEX_DTYPES}


class UnreadableCache(ValueError):
    """A cached constraint system that cannot be used as it is: of another format, or damaged."""


# -- writing ---------------------------------------------------------------------------------
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
                dtype=np.uint64)


def _keys(values: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each Fr element, so that finding the distinct ones sorts 8 bytes a
    term rather than 32 (a collision is caught and redone on the bytes, ``intern``)."""
    h = np.zeros(values.shape[0], dtype=np.uint64)
    for limb in range(4):
        h ^= values[:, limb] * _MIX[limb]
        h ^= h >> np.uint64(31)
    return h


def _same(table: np.ndarray, which: np.ndarray, values: np.ndarray, chunk: int = 1 << 20) -> bool:
    return all(np.array_equal(table[which[i:i + chunk]], values[i:i + chunk]) for i in range(0, which.size, chunk))


def intern(values: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct elements of the Fr vector ``values``, most frequent first (``weights``: a
    count each element stands for), and each element's index into them, narrowed."""
    if not values.shape[0]:
        return np.zeros((0, 4), dtype=np.uint64), np.zeros(0, dtype=np.uint8)
    _, first, inverse = np.unique(_keys(values), return_index=True, return_inverse=True)
    if not _same(values[first], inverse, values):
        raw = np.ascontiguousarray(values).view(np.dtype((np.void, 32))).ravel()
        _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    counts = np.bincount(inverse, weights=weights, minlength=first.size)
    order = np.lexsort((first, -counts))  # the commonest first, ties in order of first use
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return np.ascontiguousarray(values[first[order]]), narrow(rank[inverse], order.size - 1)


def encode(cs: ConstraintSystem) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The three matrices' distinct coefficients in one table and each matrix's terms' indices
    into it; None where storing the coefficients a term takes fewer bytes. Matrices that share
    one table already (a family's build) keep it as it is."""
    mats = [getattr(cs, name) for name in _MATRICES]
    parts = [(m.values, m.which) if m.which is not None else intern(m.values) for m in mats]
    if all(table is parts[0][0] for table, _ in parts):
        table, whiches = parts[0][0], [which for _, which in parts]
    else:
        counts = np.concatenate([np.bincount(w, minlength=t.shape[0]) for t, w in parts])
        table, remap = intern(np.concatenate([t for t, _ in parts]), weights=counts)
        offsets = np.cumsum([0] + [t.shape[0] for t, _ in parts])
        whiches = [remap[offset + w.astype(np.int64)] for offset, (_, w) in zip(offsets, parts)]
    whiches = [narrow(w, int(w.max()) if w.size else 0) for w in whiches]
    indexed = table.nbytes + sum(w.nbytes for w in whiches)
    return (table, whiches) if indexed < sum(m.nnz for m in mats) * _FR.itemsize * 4 else None


def save(cs: ConstraintSystem, directory) -> None:
    """``cs`` in format 2 (the directory written whole, then renamed into place)."""
    encoded = encode(cs)
    matrices = {}
    with files.atomic_dir(directory) as tmp:
        if encoded is not None:
            np.save(tmp / "values.npy", encoded[0], allow_pickle=False)
        for i, name in enumerate(_MATRICES):
            m = getattr(cs, name)
            np.save(tmp / f"{name}.indptr.npy", m.indptr, allow_pickle=False)
            np.save(tmp / f"{name}.indices.npy", m.indices, allow_pickle=False)
            entry = {"nnz": m.nnz, "indptr": str(m.indptr.dtype), "indices": str(m.indices.dtype)}
            if encoded is not None:
                np.save(tmp / f"{name}.which.npy", encoded[1][i], allow_pickle=False)
                entry["which"] = str(encoded[1][i].dtype)
            else:
                np.save(tmp / f"{name}.values.npy", np.ascontiguousarray(m.coeffs), allow_pickle=False)
            matrices[name] = entry
        manifest = {"format": FORMAT, "version": VERSION, "curve": cs.curve.name, "num_public": cs.num_public,
                    "num_variables": cs.num_variables, "num_constraints": cs.num_constraints,
                    "coefficients": _INDEXED if encoded is not None else _PER_TERM,
                    "values": int(encoded[0].shape[0]) if encoded is not None else None, "matrices": matrices}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


# -- reading ---------------------------------------------------------------------------------
def _manifest(d: Path) -> dict:
    try:
        raw = files.read_regular(d / MANIFEST, _MANIFEST_LIMIT, follow_symlinks=False)
    except FileNotFoundError:
        if (d / "shape.npy").exists():
            raise UnreadableCache(f"{d}: a constraint system in format 1 (each coefficient in full: 224 bytes a "
                                  f"constraint for the MiMC chain), not format {VERSION}") from None
        raise UnreadableCache(f"{d}: no {MANIFEST}") from None
    except OSError as exc:  # not a regular file, too large
        raise UnreadableCache(f"{d / MANIFEST}: {exc}") from None
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise UnreadableCache(f"{d / MANIFEST}: not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UnreadableCache(f"{d / MANIFEST}: not a {FORMAT} manifest")
    if meta.get("version") != VERSION:
        raise UnreadableCache(f"{d / MANIFEST}: format version {meta.get('version')!r}, this proofflow reads "
                              f"{VERSION}")
    return meta


def version(directory) -> int | None:
    """The format of the constraint system saved in ``directory``: VERSION when ``load`` can
    use it, 1 for the format before, None when there is none (or it is unreadable)."""
    d = Path(directory)
    try:
        _manifest(d)
        return VERSION
    except UnreadableCache:
        return 1 if (d / "shape.npy").exists() else None


def _count(meta: dict, key: str, where: Path, least: int = 0) -> int:
    value = meta.get(key)
    if type(value) is not int or value < least:
        raise UnreadableCache(f"{where}: {key} is {value!r}, not a whole number of at least {least}")
    return value


def _array(path: Path, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """The .npy at ``path``, memory-mapped, which must be a regular file of ``dtype`` and ``shape``."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableCache(f"{path}: not a regular file")
        empty = 0 in shape
        a = np.load(path, mmap_mode=None if empty else "r", allow_pickle=False)
    except UnreadableCache:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise UnreadableCache(f"{path}: {exc}") from None
    if a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous:
        raise UnreadableCache(f"{path}: {a.dtype} {a.shape}, the manifest says {dtype} {shape}")
    return a


def load(directory, curve: Curve) -> ConstraintSystem:
    """The constraint system saved in ``directory`` (of ``curve``'s Fr), memory-mapped.
    FileNotFoundError where there is none; UnreadableCache where there is one ``load``
    cannot use as it is."""
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"no constraint system at {d}")
    meta, where = _manifest(d), d / MANIFEST
    if meta.get("curve") != curve.name:
        raise UnreadableCache(f"{where}: a constraint system over {meta.get('curve')!r}, not {curve.name}")
    public, variables = _count(meta, "num_public", where), _count(meta, "num_variables", where, 1)
    rows = _count(meta, "num_constraints", where)
    if variables < public + 1:
        raise UnreadableCache(f"{where}: {variables} variables cannot hold the one and {public} public inputs")
    mode, names = meta.get("coefficients"), meta.get("matrices")
    if mode not in (_INDEXED, _PER_TERM) or not isinstance(names, dict) or sorted(names) != list(_MATRICES):
        raise UnreadableCache(f"{where}: no coefficients mode {_INDEXED!r} or {_PER_TERM!r} with matrices a, b, c")
    table = _array(d / "values.npy", _FR, (_count(meta, "values", where), 4)) if mode == _INDEXED else None
    matrices = []
    for name in _MATRICES:
        entry = names[name]
        if not isinstance(entry, dict):
            raise UnreadableCache(f"{where}: matrix {name} is {entry!r}")
        nnz = _count(entry, "nnz", where)
        widths = {}
        for part in ("indptr", "indices") + (("which",) if table is not None else ()):
            if entry.get(part) not in _DTYPES:
                raise UnreadableCache(f"{where}: matrix {name}'s {part} in {entry.get(part)!r}, not one of "
                                      f"{', '.join(_DTYPES)}")
            widths[part] = _DTYPES[entry[part]]
        indptr = _array(d / f"{name}.indptr.npy", widths["indptr"], (rows + 1,))
        indices = _array(d / f"{name}.indices.npy", widths["indices"], (nnz,))
        if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
            raise UnreadableCache(f"{d / f'{name}.indptr.npy'}: row pointers from {int(indptr[0])} to "
                                  f"{int(indptr[-1])}, not 0 to the matrix's {nnz} terms")
        if table is not None:
            values, which = table, _array(d / f"{name}.which.npy", widths["which"], (nnz,))
        else:
            values, which = _array(d / f"{name}.values.npy", _FR, (nnz, 4)), None
        try:
            matrices.append(SparseMatrix(curve, rows, variables, indptr, indices, values, which,
                                         origin=f"matrix {name.upper()} of the constraint system at {d}"))
        except ValueError as exc:
            raise UnreadableCache(str(exc)) from None
    return ConstraintSystem(public, variables, *matrices)
