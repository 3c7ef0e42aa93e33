"""Groth16 keys and proofs over a registered curve, and their files.

A proving-key directory holds ``params.json`` (what the key is for and over which curve,
its single points, and each table's SHA-256, points and encoding) and one ``.npy`` table per
query, uint8 rows of one point each: compressed (the curve library's compressed points,
``native.compressed``: 48 bytes a G1 point, 96 a G2 one on BLS12-381, 288 bytes a domain point
in all) unless PROOFFLOW_KEY_TABLES says xy (xy-LE, ``proofflow.prover.points``: twice the
bytes). Tables load memory-mapped; the GPU decompresses a compressed one as it uploads it, the
CPU path on first use. Setup can write the tables straight into their files as it computes
them (``KeyTables``), so a large key is never whole in memory. A verifying key is JSON with
compressed points in hex. A proof is the standard compressed bytes: A (G1) || B (G2) || C
(G1), 48 + 96 + 48 on BLS12-381. Every file is written to a temporary name and renamed into
place, so a crash never leaves a half-written artifact.

Keys and manifests record their curve (``curve``, and a ``format`` naming it:
``Curve.key_format``); files of earlier versions name none and are read as the default
curve's (``curves.registry.DEFAULT``, BLS12-381), whose format they carry. A proving key's
params.json is of version 2 of that format (``PK_VERSION``: each table's ``encoding``); one of
version 1 (every table xy-LE, no encoding) still loads.
"""
from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from proofflow import settings
from proofflow.prover import bounded_json, files
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.errors import KeyFormatError
from proofflow.prover.native import compressed
from proofflow.prover.points import PointTable

TOXIC_WASTE_LABEL = ("TEST ONLY: generated from a seed; anyone who knows the seed can forge "
                     "proofs. Never use these keys for anything of value.")
PK_TABLES = {"a_query": "g1", "b_g1_query": "g1", "b_g2_query": "g2", "h_query": "g1", "l_query": "g1"}
# The basis of the H points: "monomial" (tau^i Z(tau) / delta, n - 1 points: proofflow's own
# keys, as arkworks) or "odd-coset" (the Lagrange basis of the 2n domain at its odd points,
# over delta, n points: snarkjs keys; r1cs_to_qap says how the prover's H vector differs).
H_BASES = {"monomial": -1, "odd-coset": 0}  # basis -> H points minus the domain size
PK_VERSION = 2  # params.json's: 1 every table xy-LE; 2 each table's "encoding" (compressed or xy)


def table_points(n: int, num_variables: int, num_instance: int, h_basis: str = "monomial") -> dict[str, int]:
    """The points of each table of a key over a domain of ``n`` points (a, b_g1, b_g2: one
    per variable; l: one per private variable; h: by its basis)."""
    return {"a_query": num_variables, "b_g1_query": num_variables, "b_g2_query": num_variables,
            "h_query": n + H_BASES[h_basis], "l_query": num_variables - num_instance}


def key_format(curve: Curve, version: int = 1) -> str:
    """``curve``'s key format string at ``version`` (``Curve.key_format`` is version 1)."""
    return f"{curve.key_format.rsplit('/', 1)[0]}/{version}"


def file_curve(d: dict, kind: str, versions: tuple[int, ...] = (1,)) -> Curve:
    """The curve a key's or manifest's JSON names (none: the default curve, as written
    before curves were recorded), checked against its format (one of ``versions``);
    KeyFormatError("not a ... <kind>") otherwise."""
    try:
        curve = registry.get_curve(d.get("curve", registry.DEFAULT))
    except registry.UnknownCurve as exc:
        raise KeyFormatError(f"a {kind} over a curve this proofflow does not know ({exc})") from None
    formats = [key_format(curve, v) for v in versions]
    if d.get("format") not in formats:
        raise KeyFormatError(f"not a {' or '.join(formats)} {kind} (format={d.get('format')!r})")
    return curve


def _hex(point) -> str:
    return point.to_compressed_bytes().hex()


def _point(curve: Curve, group: str, text: str):
    try:
        return curve.point_class(group).from_compressed_bytes(bytes.fromhex(text))
    except Exception as exc:  # arkworks raises plain exceptions on bad encodings
        raise KeyFormatError(f"invalid {group} point encoding: {exc}") from exc


@dataclass
class VerifyingKey:
    curve: Curve
    alpha_g1: object
    beta_g2: object
    gamma_g2: object
    delta_g2: object
    gamma_abc_g1: list  # one per instance variable (the constant one first)

    @property
    def num_public(self) -> int:
        return len(self.gamma_abc_g1) - 1

    def to_json(self) -> dict:
        return {"format": self.curve.key_format, "curve": self.curve.name, "alpha_g1": _hex(self.alpha_g1),
                "beta_g2": _hex(self.beta_g2), "gamma_g2": _hex(self.gamma_g2), "delta_g2": _hex(self.delta_g2),
                "gamma_abc_g1": [_hex(p) for p in self.gamma_abc_g1]}

    @classmethod
    def from_json(cls, d: dict) -> "VerifyingKey":
        try:
            c = file_curve(d, "verifying key")
            return cls(c, _point(c, "g1", d["alpha_g1"]), _point(c, "g2", d["beta_g2"]), _point(c, "g2", d["gamma_g2"]),
                       _point(c, "g2", d["delta_g2"]), [_point(c, "g1", h) for h in d["gamma_abc_g1"]])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, KeyFormatError):
                raise
            raise KeyFormatError(f"malformed verifying key: {exc!r}") from exc

    def save(self, path) -> None:
        files.write_bytes(path, json.dumps(self.to_json(), indent=1).encode())

    @classmethod
    def load(cls, path) -> "VerifyingKey":
        try:
            d = bounded_json.load(path)
        except (OSError, ValueError) as exc:
            raise KeyFormatError(f"cannot read verifying key {path}: {exc}") from exc
        return cls.from_json(d)


@dataclass
class ProvingKey:
    circuit: str
    log2: int
    vk: VerifyingKey
    beta_g1: object
    delta_g1: object
    a_query: PointTable
    b_g1_query: PointTable
    b_g2_query: PointTable
    h_query: PointTable
    l_query: PointTable
    h_basis: str = "monomial"
    # tables setup wrote in place (``KeyTables``): name -> (its file, its SHA-256)
    written: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def curve(self) -> Curve:
        return self.vk.curve

    def save(self, directory, encoding: str | None = None) -> None:
        """Write the tables, each in ``encoding`` ("compressed" or "xy"; default
        PROOFFLOW_KEY_TABLES), then params.json last: a directory with params.json is
        complete. A table setup already wrote into this directory (``written``) is kept as
        it is, in its own encoding."""
        encoding = table_encoding(self.log2, encoding)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        digests, encodings = {}, {}
        for name in PK_TABLES:
            path, table = directory / f"{name}.npy", getattr(self, name)
            there, digest = self.written.get(name, (None, None))
            if there is None or Path(there).resolve() != path.resolve() or not path.exists():
                digest = files.sha256_file(files.save_npy(path, _rows_in(table, encoding)))
                encodings[name] = encoding
            else:
                encodings[name] = table.encoding
            digests[name] = digest
        self.vk.save(directory / "vk.json")
        params = {"format": key_format(self.curve, PK_VERSION), "curve": self.curve.name,
                  "warning": TOXIC_WASTE_LABEL, "circuit": self.circuit, "log2": self.log2, "h_basis": self.h_basis,
                  "beta_g1": _hex(self.beta_g1), "delta_g1": _hex(self.delta_g1),
                  "tables": {name: {"sha256": digests[name], "points": len(getattr(self, name)),
                                    "encoding": encodings[name]} for name in PK_TABLES}}
        files.write_bytes(directory / "params.json", json.dumps(params, indent=1).encode())

    @classmethod
    def load(cls, directory, verify_digests: bool = True, rehash: bool = False) -> "ProvingKey":
        """The key in ``directory``, tables memory-mapped. ``verify_digests``: each table must
        match its SHA-256 in params.json; a table unchanged (same file, size and mtime) since
        its digest last matched is trusted without reading it again, unless ``rehash``."""
        directory = Path(directory)
        try:
            params = bounded_json.load(directory / "params.json")
        except (OSError, ValueError) as exc:
            raise KeyFormatError(f"{directory} holds no readable proving key (params.json): {exc}") from exc
        try:
            curve = file_curve(params if isinstance(params, dict) else {}, "proving key", (1, PK_VERSION))
        except KeyFormatError as exc:
            raise KeyFormatError(f"{directory}/params.json is {exc}") from None
        versioned = params["format"] != key_format(curve, 1)
        try:
            metas = {name: (params["tables"][name]["sha256"], int(params["tables"][name]["points"]),
                            params["tables"][name]["encoding"] if versioned else "xy") for name in PK_TABLES}
            for name, (_, _, encoding) in metas.items():
                if encoding not in compressed.ENCODINGS:
                    raise ValueError(f"tables.{name}.encoding {encoding!r}")
            circuit, log2 = str(params["circuit"]), int(params["log2"])
            beta_g1, delta_g1 = params["beta_g1"], params["delta_g1"]
            h_basis = params.get("h_basis", "monomial")
            if h_basis not in H_BASES:
                raise ValueError(f"h_basis {h_basis!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyFormatError(f"{directory}/params.json is malformed: missing or bad {exc}") from None
        if verify_digests:
            _verify_tables(directory, {name: digest for name, (digest, _, _) in metas.items()}, rehash)
        tables = {}
        for name, group in PK_TABLES.items():
            path = directory / f"{name}.npy"
            _, points, encoding = metas[name]
            try:
                rows = np.load(path, mmap_mode="r", allow_pickle=False)
                tables[name] = (PointTable(curve, group, rows, origin=str(path)) if encoding == "xy" else
                                PointTable.of_compressed(curve, group, rows, origin=str(path)))
            except (OSError, ValueError) as exc:
                raise KeyFormatError(f"cannot read {path}: {exc}") from exc
            if len(tables[name]) != points:
                raise KeyFormatError(f"{path} has {len(tables[name])} points, params.json says {points}")
        vk = VerifyingKey.load(directory / "vk.json")
        if vk.curve.name != curve.name:
            raise KeyFormatError(f"{directory}: vk.json is over {vk.curve.name}, params.json over {curve.name}")
        return cls(circuit, log2, vk, _point(curve, "g1", beta_g1), _point(curve, "g1", delta_g1), **tables,
                   h_basis=h_basis)


def _rows_in(table: PointTable, encoding: str) -> np.ndarray:
    """The table's rows in ``encoding``: as stored, else compressed or decompressed here."""
    if table.encoding == encoding:
        return table.rows
    if encoding == "xy":
        return table.xy
    return compressed.compress(table.curve, table.group, table.xy, origin=table.origin)


VERIFIED = ".verified.json"  # each table's stat when its digest last matched
RACY_S = 2.0  # a table modified this recently is not stamped: a same-tick rewrite keeps its mtime


def _stat_sig(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _verify_tables(directory: Path, digests: dict[str, str], rehash: bool) -> None:
    """Raise KeyFormatError unless every table matches its digest. Hashing a 2^24 key's
    tables takes seconds and every run's setup checks the cached key, so the tables hashed
    and found good are stamped with their stat (the racy-clean rule of git's index: only
    files older than the stamp by ``RACY_S``) and trusted while it still matches."""
    stamp_path = directory / VERIFIED
    try:
        stamp = {} if rehash else json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        stamp = {}
    fresh, now_ns = {}, None
    for name, digest in digests.items():
        path = directory / f"{name}.npy"
        sig = _stat_sig(path)
        if sig is not None and stamp.get(name) == [*sig, digest]:
            fresh[name] = stamp[name]
            continue
        if sig is None or files.sha256_file(path) != digest:
            raise KeyFormatError(f"{path} is missing or does not match its digest in params.json")
        now_ns = now_ns or time.time_ns()
        if sig[3] < now_ns - RACY_S * 1e9:
            fresh[name] = [*sig, digest]
    if fresh != stamp:
        try:  # a read-only key directory is still usable: it is hashed every time
            files.write_json(stamp_path, fresh)
        except OSError:
            pass


COMPRESSED_FROM_LOG2 = 24  # PROOFFLOW_KEY_TABLES=auto: smaller keys stay xy, quick for the CPU backend


def table_encoding(log2: int, encoding: str | None = None) -> str:
    """The encoding of a 2^log2 key's tables: ``encoding``, else PROOFFLOW_KEY_TABLES, whose
    "auto" compresses from 2^COMPRESSED_FROM_LOG2 (where disk and host memory bind; the CPU
    backend, which decompresses on first use, proves smaller keys)."""
    encoding = encoding or settings.current().key_encoding
    if encoding == "auto":
        return "compressed" if log2 >= COMPRESSED_FROM_LOG2 else "xy"
    return encoding


class KeyTables:
    """Where setup puts a proving key's tables (of ``curve``) as it computes them, their xy-LE
    rows handed over in order, a chunk at a time: in memory (``directory`` None; xy), or
    straight into each table's memory-mapped ``.npy`` file in ``directory`` in ``encoding``
    (``table_encoding``'s; compressed: each chunk compressed into the file), no table
    ever whole in memory, each file's SHA-256 taken as its rows go in (np.save's bytes, so
    ``ProvingKey.save`` into that directory keeps the files and writes only vk.json and
    params.json). ``tables``: the finished tables (read-only memory maps of their files);
    ``written``: name -> (file, SHA-256)."""

    def __init__(self, curve: Curve, directory=None, encoding: str = "xy"):
        self.curve = curve
        self.directory = None if directory is None else Path(directory)
        self.encoding = "xy" if directory is None else encoding
        self.tables: dict[str, PointTable] = {}
        self.written: dict[str, tuple[Path, str]] = {}

    @contextmanager
    def table(self, name: str, group: str, points: int):
        """Yields ``put(rows)``, which takes the table's next xy-LE rows; the table is complete
        when the block ends (ValueError when the rows do not add up to ``points``)."""
        shape = (points, compressed.row_bytes(self.curve, group, self.encoding))
        if self.directory is None:
            xy = np.empty(shape, dtype=np.uint8)
            put = _rows_into(xy, None, None)
            yield put
            _complete(name, put, points)
            self.tables[name] = PointTable(self.curve, group, xy)
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{name}.npy"
        encode = None
        if self.encoding == "compressed":
            def encode(xy: np.ndarray, out: np.ndarray, lo: int) -> None:
                compressed.compress(self.curve, group, xy, out, origin=f"{name}'s rows from {lo}")
        with files.npy_in_place(path, shape, np.uint8) as rows:
            with open(rows.filename, "rb") as f:
                digest = hashlib.sha256(f.read(rows.offset))  # the .npy header, then the rows in order
            put = _rows_into(rows, digest, encode)
            yield put
            _complete(name, put, points)
        rows = np.load(path, mmap_mode="r", allow_pickle=False)
        self.tables[name] = (PointTable(self.curve, group, rows, origin=str(path)) if encode is None else
                             PointTable.of_compressed(self.curve, group, rows, origin=str(path)))
        self.written[name] = (path, digest.hexdigest())


def _complete(name: str, put, points: int) -> None:
    if put.done != points:
        raise ValueError(f"{name}: {put.done} of {points} rows written")


def _rows_into(table: np.ndarray, digest, encode) -> Callable[[np.ndarray], None]:
    """A ``put`` writing consecutive xy-LE rows into ``table``, through ``encode(rows, out,
    first row)`` when given, and its bytes into ``digest`` when given."""

    def put(rows: np.ndarray) -> None:
        lo = put.done
        if lo + len(rows) > len(table):
            raise ValueError(f"{lo + len(rows)} rows for a table of {len(table)}")
        out = table[lo:lo + len(rows)]
        if encode is None:
            out[:] = rows
        else:
            encode(rows, out, lo)
        if digest is not None:
            digest.update(np.ascontiguousarray(out, dtype=np.uint8).data)
        put.done = lo + len(rows)

    put.done = 0
    return put


@dataclass
class Proof:
    curve: Curve
    a: object  # G1
    b: object  # G2
    c: object  # G1

    def to_bytes(self) -> bytes:
        return self.a.to_compressed_bytes() + self.b.to_compressed_bytes() + self.c.to_compressed_bytes()

    @classmethod
    def from_bytes(cls, curve: Curve, data: bytes) -> "Proof":
        """Decode ``curve.proof_bytes`` bytes. A wrong length is a KeyFormatError; bytes of the
        right length that are not valid subgroup points raise ValueError (the proof is simply
        invalid)."""
        if len(data) != curve.proof_bytes:
            raise KeyFormatError(f"a proof is {curve.proof_bytes} bytes, got {len(data)}")
        g1, g2 = curve.compressed_bytes("g1"), curve.compressed_bytes("g2")
        try:
            return cls(curve, curve.point_class("g1").from_compressed_bytes(data[:g1]),
                       curve.point_class("g2").from_compressed_bytes(data[g1:g1 + g2]),
                       curve.point_class("g1").from_compressed_bytes(data[g1 + g2:]))
        except Exception as exc:
            raise ValueError(f"proof bytes are not valid curve points: {exc}") from exc
