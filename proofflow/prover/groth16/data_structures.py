"""Groth16 keys and proofs, and their files.

A proving-key directory holds ``params.json`` (what the key is for, its single points, and
the SHA-256 of every table) and one ``.npy`` table per query, points as xy-LE bytes
(``proofflow.prover.curve``): tables load memory-mapped, and the GPU uploads them unchanged.
A verifying key is JSON with compressed points in hex. A proof is the standard 192
compressed bytes: A (G1, 48) || B (G2, 96) || C (G1, 48). Every file is written to a
temporary name and renamed into place, so a crash never leaves a half-written artifact.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from proofflow.prover import curve, files
from proofflow.prover.curve import PointTable

PROOF_BYTES = 192
FORMAT = "proofflow-groth16-bls12-381/1"
TOXIC_WASTE_LABEL = ("TEST ONLY: generated from a seed; anyone who knows the seed can forge "
                     "proofs. Never use these keys for anything of value.")
PK_TABLES = {"a_query": "g1", "b_g1_query": "g1", "b_g2_query": "g2", "h_query": "g1", "l_query": "g1"}
# The basis of the H points: "monomial" (tau^i Z(tau) / delta, n - 1 points: proofflow's own
# keys, as arkworks) or "odd-coset" (the Lagrange basis of the 2n domain at its odd points,
# over delta, n points: snarkjs keys; r1cs_to_qap says how the prover's H vector differs).
H_BASES = {"monomial": -1, "odd-coset": 0}  # basis -> H points minus the domain size


class KeyFormatError(ValueError):
    """A key or proof file is missing, truncated, corrupted or of another format."""


def _hex(point) -> str:
    return point.to_compressed_bytes().hex()


def _point(group: str, text: str):
    try:
        return curve.point_class(group).from_compressed_bytes(bytes.fromhex(text))
    except Exception as exc:  # arkworks raises plain exceptions on bad encodings
        raise KeyFormatError(f"invalid {group} point encoding: {exc}") from exc


@dataclass
class VerifyingKey:
    alpha_g1: object
    beta_g2: object
    gamma_g2: object
    delta_g2: object
    gamma_abc_g1: list  # one per instance variable (the constant one first)

    @property
    def num_public(self) -> int:
        return len(self.gamma_abc_g1) - 1

    def to_json(self) -> dict:
        return {"format": FORMAT, "alpha_g1": _hex(self.alpha_g1), "beta_g2": _hex(self.beta_g2),
                "gamma_g2": _hex(self.gamma_g2), "delta_g2": _hex(self.delta_g2),
                "gamma_abc_g1": [_hex(p) for p in self.gamma_abc_g1]}

    @classmethod
    def from_json(cls, d: dict) -> "VerifyingKey":
        try:
            if d.get("format") != FORMAT:
                raise KeyFormatError(f"not a {FORMAT} verifying key (format={d.get('format')!r})")
            return cls(_point("g1", d["alpha_g1"]), _point("g2", d["beta_g2"]), _point("g2", d["gamma_g2"]),
                       _point("g2", d["delta_g2"]), [_point("g1", h) for h in d["gamma_abc_g1"]])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, KeyFormatError):
                raise
            raise KeyFormatError(f"malformed verifying key: {exc!r}") from exc

    def save(self, path) -> None:
        files.write_bytes(path, json.dumps(self.to_json(), indent=1).encode())

    @classmethod
    def load(cls, path) -> "VerifyingKey":
        try:
            d = json.loads(Path(path).read_text())
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

    def save(self, directory) -> None:
        """Write the tables, then params.json last: a directory with params.json is complete."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        digests = {name: files.sha256_file(files.save_npy(directory / f"{name}.npy", getattr(self, name).xy))
                   for name in PK_TABLES}
        self.vk.save(directory / "vk.json")
        params = {"format": FORMAT, "warning": TOXIC_WASTE_LABEL, "circuit": self.circuit, "log2": self.log2,
                  "h_basis": self.h_basis,
                  "beta_g1": _hex(self.beta_g1), "delta_g1": _hex(self.delta_g1),
                  "tables": {name: {"sha256": digests[name], "points": len(getattr(self, name))} for name in PK_TABLES}}
        files.write_bytes(directory / "params.json", json.dumps(params, indent=1).encode())

    @classmethod
    def load(cls, directory, verify_digests: bool = True) -> "ProvingKey":
        directory = Path(directory)
        try:
            params = json.loads((directory / "params.json").read_text())
        except (OSError, ValueError) as exc:
            raise KeyFormatError(f"{directory} holds no readable proving key (params.json): {exc}") from exc
        if not isinstance(params, dict) or params.get("format") != FORMAT:
            raise KeyFormatError(f"{directory}/params.json is not a {FORMAT} proving key")
        try:
            metas = {name: (params["tables"][name]["sha256"], int(params["tables"][name]["points"]))
                     for name in PK_TABLES}
            circuit, log2 = str(params["circuit"]), int(params["log2"])
            beta_g1, delta_g1 = params["beta_g1"], params["delta_g1"]
            h_basis = params.get("h_basis", "monomial")
            if h_basis not in H_BASES:
                raise ValueError(f"h_basis {h_basis!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyFormatError(f"{directory}/params.json is malformed: missing or bad {exc}") from None
        tables = {}
        for name, group in PK_TABLES.items():
            path = directory / f"{name}.npy"
            digest, points = metas[name]
            if verify_digests and (not path.exists() or files.sha256_file(path) != digest):
                raise KeyFormatError(f"{path} is missing or does not match its digest in params.json")
            try:
                xy = np.load(path, mmap_mode="r", allow_pickle=False)
                tables[name] = PointTable(group, xy)
            except (OSError, ValueError) as exc:
                raise KeyFormatError(f"cannot read {path}: {exc}") from exc
            if len(tables[name]) != points:
                raise KeyFormatError(f"{path} has {len(tables[name])} points, params.json says {points}")
        return cls(circuit, log2, VerifyingKey.load(directory / "vk.json"), _point("g1", beta_g1),
                   _point("g1", delta_g1), **tables, h_basis=h_basis)


@dataclass
class Proof:
    a: object  # G1
    b: object  # G2
    c: object  # G1

    def to_bytes(self) -> bytes:
        return self.a.to_compressed_bytes() + self.b.to_compressed_bytes() + self.c.to_compressed_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Proof":
        """Decode 192 bytes. A wrong length is a KeyFormatError; bytes of the right length
        that are not valid subgroup points raise ValueError (the proof is simply invalid)."""
        if len(data) != PROOF_BYTES:
            raise KeyFormatError(f"a proof is {PROOF_BYTES} bytes, got {len(data)}")
        try:
            return cls(curve.point_class("g1").from_compressed_bytes(data[:48]),
                       curve.point_class("g2").from_compressed_bytes(data[48:144]),
                       curve.point_class("g1").from_compressed_bytes(data[144:]))
        except Exception as exc:
            raise ValueError(f"proof bytes are not valid curve points: {exc}") from exc
