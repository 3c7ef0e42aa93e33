"""Solidity calldata for snarkjs's Groth16 verifier contract: the four arguments of its
``verifyProof(uint[2] a, uint[2][2] b, uint[2] c, uint[N] public)``, byte for byte as
``snarkjs zkey export soliditycalldata public.json proof.json`` prints them.

Each number is a quoted 0x and 64 lowercase hex digits. A's and C's coordinates are x, y.
B's are [[x.c1, x.c0], [y.c1, y.c0]]: snarkjs's JSON holds each Fq2 coordinate as
[c0, c1], and the EVM's pairing precompile (EIP-197) takes the imaginary part first. Only
a Groth16 proof on BN254 (snarkjs's "bn128"), the curve of Ethereum's precompiles
(EIP-196/197), has calldata; any other is refused. Numbers are checked to fit a uint256,
not to be field elements or points: the contract itself rejects those.
"""
from __future__ import annotations

import re

from proofflow.prover import bounded_json, files
from proofflow.prover.circom import snarkjs_json
from proofflow.prover.circom.errors import CorruptFile, NotEvmCurve
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16.data_structures import Proof

EVM_CURVE = "bn128"  # snarkjs's name for BN254, the only curve of Ethereum's precompiles
PROTOCOL = "groth16"
_DECIMAL = re.compile(f"[0-9]{{1,{bounded_json.MAX_DIGITS}}}")
_WORD = 1 << 256


def evm_verifiable(curve: Curve) -> bool:
    """Whether a proof on ``curve`` can be verified on Ethereum (and so has calldata)."""
    return curve.snarkjs_name == EVM_CURVE


def _number(source, field: str, text) -> int:
    if isinstance(text, bool) or not (isinstance(text, int) or (isinstance(text, str) and _DECIMAL.fullmatch(text))):
        raise CorruptFile(source, f"{bounded_json.describe(text)} is not a non-negative decimal number", field)
    value = int(text)
    if not 0 <= value < _WORD:
        raise CorruptFile(source, f"an integer of {value.bit_length()} bits does not fit the EVM's 256-bit words",
                          field)
    return value


def _affine(source, field: str, point, g2: bool):
    """A point's affine coordinates (an Fq2 one as [c0, c1]), refusing snarkjs's projective
    forms other than z = 1 (the point at infinity included)."""
    if not (isinstance(point, list) and len(point) == 3
            and (not g2 or all(isinstance(p, list) and len(p) == 2 for p in point))):
        raise CorruptFile(source, f"is not a {'G2' if g2 else 'G1'} point in snarkjs's JSON form", field)
    x, y, z = ([_number(source, field, v) for v in p] if g2 else _number(source, field, p) for p in point)
    if z != ([1, 0] if g2 else 1):
        raise CorruptFile(source, "is not in affine form (z must be 1)", field)
    return x, y


def _hex(value: int) -> str:
    return f'"0x{value:064x}"'


def calldata(proof, public, proof_source="proof.json", public_source="public.json") -> str:
    """soliditycalldata's line (without its newline) for snarkjs's proof.json and public.json
    as parsed JSON; ``*_source`` name them in refusals."""
    if not isinstance(proof, dict):
        raise CorruptFile(proof_source, "is not a snarkjs proof (a JSON object)")
    if proof.get("protocol") != PROTOCOL:
        raise CorruptFile(proof_source, f"protocol {proof.get('protocol')!r} is not {PROTOCOL!r}", "protocol")
    if proof.get("curve") != EVM_CURVE:
        raise NotEvmCurve(proof_source, proof.get("curve"))
    for name in ("pi_a", "pi_b", "pi_c"):
        if name not in proof:
            raise CorruptFile(proof_source, "missing", name)
    a = _affine(proof_source, "pi_a", proof["pi_a"], g2=False)
    (x0, x1), (y0, y1) = _affine(proof_source, "pi_b", proof["pi_b"], g2=True)
    c = _affine(proof_source, "pi_c", proof["pi_c"], g2=False)
    if not isinstance(public, list):
        raise CorruptFile(public_source, "is not a JSON list of public signals")
    signals = [_number(public_source, f"[{i}]", v) for i, v in enumerate(public)]
    return (f"[{_hex(a[0])}, {_hex(a[1])}],"
            f"[[{_hex(x1)}, {_hex(x0)}],[{_hex(y1)}, {_hex(y0)}]],"
            f"[{_hex(c[0])}, {_hex(c[1])}],"
            f"[{','.join(map(_hex, signals))}]")


def calldata_files(public_path, proof_path) -> str:
    """``snarkjs zkey export soliditycalldata public.json proof.json``'s line (argument order
    as snarkjs's), without its newline."""
    return calldata(snarkjs_json.load_json(proof_path), snarkjs_json.load_json(public_path), proof_path, public_path)


def proof_calldata(proof: Proof, public: list[int]) -> str:
    """The calldata of a proof made here, as snarkjs prints it for its proof.json and public.json."""
    return calldata(snarkjs_json.proof_to_json(proof), [str(x) for x in public])


def write_calldata(path, proof: Proof, public: list[int]) -> None:
    """The calldata file: what ``snarkjs zkey export soliditycalldata`` prints, newline included."""
    files.write_bytes(path, (proof_calldata(proof, public) + "\n").encode())
