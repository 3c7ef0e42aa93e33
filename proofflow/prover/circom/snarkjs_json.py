"""snarkjs's JSON files: verification_key.json, proof.json and public.json.

Each names its curve as snarkjs does ("curve": ``Curve.snarkjs_name``, "bls12381" for
BLS12-381); a file of a curve not registered here is a WrongField. Numbers are decimal
strings in standard form. A G1 point is [x, y, "1"], a G2 point
[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]; the point at infinity has z = 0 (G1 ["0", "1",
"0"]). public.json lists the public signals, outputs first. snarkjs writes JSON with
one-space indents, and so do the writers here. The verification key written here has the
fields of snarkjs's ``zkey export verificationkey``, vk_alphabeta_12 (e(α, β) as an Fq12,
nested [c0, c1] of Fq6 [c0, c1, c2] of Fq2 [c0, c1]) included; the reader ignores it.
"""
from __future__ import annotations

import json
import re

from proofflow.prover import bounded_json, files, points
from proofflow.prover.circom.errors import CorruptFile, WrongField
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16.data_structures import Proof, VerifyingKey

PROTOCOL = "groth16"
_DECIMAL = re.compile(f"[0-9]{{1,{bounded_json.MAX_DIGITS}}}")
_INFINITY = {"g1": ["0", "1", "0"], "g2": [["0", "0"], ["1", "0"], ["0", "0"]]}


def load_json(path) -> object:
    """A snarkjs JSON file, bounded (``bounded_json``); CorruptFile naming it when refused or unreadable."""
    try:
        return bounded_json.load(path)
    except bounded_json.JsonRefused as exc:
        raise CorruptFile(path, str(exc)) from None
    except OSError as exc:
        raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from None


def _number(path, field: str, text, below: int | None = None) -> int:
    """A non-negative decimal string (or JSON integer) of at most MAX_DIGITS digits,
    optionally checked below a bound; errors name a value by its type and length only."""
    if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and _DECIMAL.fullmatch(text))):
        raise CorruptFile(path, f"{bounded_json.describe(text)} is not a non-negative decimal number of at most "
                                f"{bounded_json.MAX_DIGITS} digits", field)
    value = int(text)
    if value < 0 or (below is not None and value >= below):
        raise CorruptFile(path, f"an integer of {value.bit_length()} bits is not below the base field's prime", field)
    return value


def point_from_json(curve: Curve, path, field: str, group: str, obj):
    """A G1 or G2 point of ``curve`` from its snarkjs JSON, checked on the curve and in the subgroup."""
    g2 = group == "g2"
    try:
        x, y, z = obj
        coords = [*x, *y] if g2 else [x, y]
        z = list(z) if g2 else [z]
    except (TypeError, ValueError):
        raise CorruptFile(path, f"is not a {group.upper()} point in snarkjs's JSON form", field) from None
    if len(coords) != (4 if g2 else 2) or len(z) != (2 if g2 else 1):
        raise CorruptFile(path, f"is not a {group.upper()} point in snarkjs's JSON form", field)
    z = [_number(path, field, v) for v in z]
    if z == [0] * len(z):
        return curve.point_class(group).identity()
    if z != [1] + [0] * (len(z) - 1):
        raise CorruptFile(path, "is not in affine form (z must be 1)", field)
    raw = b"".join(_number(path, field, v, curve.fq.modulus).to_bytes(curve.fq.bytes, "little") for v in coords)
    try:
        return points.from_xy(curve, group, raw)
    except ValueError as exc:
        raise CorruptFile(path, f"is not a point of {group.upper()}: {exc}", field) from None


def point_to_json(curve: Curve, point, group: str) -> list:
    raw, width = points.to_xy(point), curve.fq.bytes
    if not any(raw):
        return _INFINITY[group]
    coords = [str(int.from_bytes(raw[i:i + width], "little")) for i in range(0, len(raw), width)]
    return [coords[0:2], coords[2:4], ["1", "0"]] if group == "g2" else [*coords, "1"]


def _header(path, d, kind: str) -> Curve:
    """The registered curve a snarkjs file names."""
    if not isinstance(d, dict):
        raise CorruptFile(path, f"is not a snarkjs {kind} (a JSON object)")
    if d.get("protocol") != PROTOCOL:
        raise CorruptFile(path, f"protocol {d.get('protocol')!r} is not {PROTOCOL!r}", "protocol")
    curve = registry.by_snarkjs_name(d.get("curve"))
    if curve is None:
        raise WrongField(path, d.get("curve"))
    return curve


def _field(path, d: dict, name: str):
    if name not in d:
        raise CorruptFile(path, "missing", name)
    return d[name]


def read_verification_key(path) -> VerifyingKey:
    d = load_json(path)
    curve = _header(path, d, "verification key")
    ic = _field(path, d, "IC")
    if not isinstance(ic, list) or not ic:
        raise CorruptFile(path, "is not a list of G1 points", "IC")
    n_public = _field(path, d, "nPublic")
    if n_public != len(ic) - 1:
        raise CorruptFile(path, f"nPublic is {n_public!r} but IC holds {len(ic)} points (expected nPublic+1)", "IC")
    return VerifyingKey(curve, point_from_json(curve, path, "vk_alpha_1", "g1", _field(path, d, "vk_alpha_1")),
                        *(point_from_json(curve, path, name, "g2", _field(path, d, name))
                          for name in ("vk_beta_2", "vk_gamma_2", "vk_delta_2")),
                        [point_from_json(curve, path, f"IC[{i}]", "g1", p) for i, p in enumerate(ic)])


def read_proof(path) -> Proof:
    d = load_json(path)
    curve = _header(path, d, "proof")
    return Proof(curve, *(point_from_json(curve, path, name, group, _field(path, d, name))
                          for name, group in (("pi_a", "g1"), ("pi_b", "g2"), ("pi_c", "g1"))))


def read_public(path) -> list[int]:
    """The public signals as integers. Values at or above r are returned as they are: the
    verifier rejects them, as snarkjs does."""
    d = load_json(path)
    if not isinstance(d, list):
        raise CorruptFile(path, "is not a JSON list of public signals")
    return [_number(path, f"[{i}]", v) for i, v in enumerate(d)]


def proof_to_json(proof: Proof) -> dict:
    c = proof.curve
    return {"pi_a": point_to_json(c, proof.a, "g1"), "pi_b": point_to_json(c, proof.b, "g2"),
            "pi_c": point_to_json(c, proof.c, "g1"), "protocol": PROTOCOL, "curve": c.snarkjs_name}


def proof_bytes(proof: Proof) -> bytes:
    """proof.json as ``snarkjs groth16 prove`` writes it."""
    return json.dumps(proof_to_json(proof), indent=1).encode()


def public_bytes(public: list[int]) -> bytes:
    """public.json as ``snarkjs groth16 prove`` writes it."""
    return json.dumps([str(x) for x in public], indent=1).encode()


def write_proof(path, proof: Proof) -> None:
    files.write_bytes(path, proof_bytes(proof))


def write_public(path, public: list[int]) -> None:
    files.write_bytes(path, public_bytes(public))


def fq12_to_json(coefficients: list[int]) -> list:
    """An Fq12's 12 coefficients (tower order) in snarkjs's nested form: 2 Fq6 of 3 Fq2 of 2 Fq."""
    text = [str(x) for x in coefficients]
    return [[text[i:i + 2] for i in range(half, half + 6, 2)] for half in (0, 6)]


def write_verification_key(path, vk: VerifyingKey) -> None:
    """verification_key.json for ``snarkjs groth16 verify`` (and read_verification_key)."""
    c = vk.curve
    d = {"protocol": PROTOCOL, "curve": c.snarkjs_name, "nPublic": vk.num_public,
         "vk_alpha_1": point_to_json(c, vk.alpha_g1, "g1"), "vk_beta_2": point_to_json(c, vk.beta_g2, "g2"),
         "vk_gamma_2": point_to_json(c, vk.gamma_g2, "g2"), "vk_delta_2": point_to_json(c, vk.delta_g2, "g2"),
         "vk_alphabeta_12": fq12_to_json(c.pairing(vk.alpha_g1, vk.beta_g2)),
         "IC": [point_to_json(c, p, "g1") for p in vk.gamma_abc_g1]}
    files.write_bytes(path, json.dumps(d, indent=1).encode())
