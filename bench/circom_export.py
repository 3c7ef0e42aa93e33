"""A built-in circuit written as circom's files: its constraint system as an .r1cs and a
partition's witness as a .wtns, so the very same constraints and witness can be proved both
ways, as the built-in circuit and as a registered circom circuit (bench.circom_partition).

    python -m bench.circom_export --circuit mimc --log2 20 --out DIR [--curve bn254]
                                  (DIR/circuit.r1cs, DIR/input.wtns; over the curve's scalar field)

circom2 compiles no circuit past 2^22 (wasm32's 4 GiB), and a 2^24 circom-compiled r1cs of
hundreds of MB cannot travel to the device machine: the files are written where they are proved.
The r1cs is written in blocks of constraints, each laid out with numpy (counts, wires and
coefficients at their offsets), so 2^24 constraints take seconds, not the minutes of a loop.
"""
from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

from proofflow.prover.circom.r1cs import CONSTRAINTS, HEADER, WIRE_MAP
from proofflow.prover.curves import registry
from proofflow.prover.field.fr import Fr
from proofflow.prover.r1cs import ConstraintSystem

BLOCK = 1 << 20  # constraints laid out at a time: bounds the index arrays' memory


def _section_head(sid: int, size: int) -> bytes:
    return struct.pack("<IQ", sid, size)


def _field(fr: Fr) -> bytes:
    return struct.pack("<I", fr.BYTES) + fr.MODULUS.to_bytes(fr.BYTES, "little")


def _lc_words(cs: ConstraintSystem, rows: slice) -> np.ndarray:
    """Constraints ``rows`` in section 2's layout, as little-endian u32 words: for each
    constraint A, B then C, each a term count and (wire, coefficient in standard form) terms."""
    fr, lo, hi = cs.fr, rows.start, rows.stop
    mats = (cs.a, cs.b, cs.c)
    ptrs = [m.indptr[lo:hi + 1].astype(np.int64) for m in mats]  # the cache's narrow widths would overflow below
    counts = np.stack([np.diff(p) for p in ptrs], axis=1).reshape(-1)  # by (row, matrix)
    words_per_term = 1 + fr.BYTES // 4
    sizes = 1 + words_per_term * counts
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = np.zeros(int(sizes.sum()), dtype="<u4")
    out[starts] = counts
    for m, (mat, ptr) in enumerate(zip(mats, ptrs)):
        first, last = int(ptr[0]), int(ptr[-1])
        k = np.arange(first, last)
        row = np.repeat(np.arange(lo, hi), np.diff(ptr)) - lo
        at = starts[3 * row + m] + 1 + words_per_term * (k - ptr[:-1][row])
        out[at] = mat.indices[first:last]
        coeffs = fr.to_canonical(np.ascontiguousarray(mat.coefficients(first, last))).view("<u4")
        out[at[:, None] + 1 + np.arange(fr.BYTES // 4)] = coeffs
    return out


def write_r1cs(cs: ConstraintSystem, path: Path) -> None:
    """``cs`` as an .r1cs (version 1): its public variables as public inputs, no outputs."""
    fr, n = cs.fr, cs.num_constraints
    header = _field(fr) + struct.pack(
        "<IIIIQI", cs.num_variables, 0, cs.num_public, 0, cs.num_variables, n)
    with open(path, "wb") as f:
        f.write(b"r1cs" + struct.pack("<II", 1, 3))
        f.write(_section_head(HEADER, len(header)) + header)
        size_at = f.tell()
        f.write(_section_head(CONSTRAINTS, 0))
        size = 0
        for lo in range(0, n, BLOCK):
            block = _lc_words(cs, slice(lo, min(n, lo + BLOCK)))
            f.write(block.tobytes())
            size += block.nbytes
        f.write(_section_head(WIRE_MAP, 8 * cs.num_variables))
        f.write(np.arange(cs.num_variables, dtype="<u8").tobytes())
        f.seek(size_at)
        f.write(_section_head(CONSTRAINTS, size))


def write_wtns(witness: np.ndarray, fr: Fr, path: Path) -> None:
    """``witness`` (an Fr vector, Montgomery form) as a .wtns (version 2)."""
    header = _field(fr) + struct.pack("<I", witness.shape[0])
    values = fr.to_canonical(witness).tobytes()
    with open(path, "wb") as f:
        f.write(b"wtns" + struct.pack("<II", 2, 2))
        f.write(_section_head(1, len(header)) + header)
        f.write(_section_head(2, len(values)) + values)


def export(circuit_name: str, log2: int, out: Path, seed: int = 0, partition: int = 0,
           curve: str = registry.DEFAULT) -> dict:
    """The built-in circuit at 2^log2 over ``curve`` as out/circuit.r1cs and its partition's
    witness as out/input.wtns."""
    from proofflow.prover.circuits.by_name import get_circuit
    circuit = get_circuit(circuit_name, log2, curve)
    out.mkdir(parents=True, exist_ok=True)
    cs = circuit.constraint_system
    write_r1cs(cs, out / "circuit.r1cs")
    write_wtns(circuit.instance(seed, partition).witness, circuit.fr, out / "input.wtns")
    return {"circuit": circuit_name, "log2": log2, "curve": curve, "constraints": cs.num_constraints,
            "variables": cs.num_variables, "public": cs.num_public,
            "r1cs_bytes": (out / "circuit.r1cs").stat().st_size}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.circom_export", description=__doc__.split("\n\n")[0])
    p.add_argument("--circuit", default="mimc", help="a built-in circuit (default mimc)")
    p.add_argument("--log2", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--curve", choices=registry.NAMES, default=registry.DEFAULT)
    p.add_argument("--out", type=Path, required=True, help="the directory for circuit.r1cs and input.wtns")
    args = p.parse_args(argv)
    print(export(args.circuit, args.log2, args.out, args.seed, curve=args.curve))
    return 0


if __name__ == "__main__":
    sys.exit(main())
