"""Witness files (.wtns, version 2) as Fr vectors.

Section 1: u32 n8, the prime, u32 count. Section 2: the values, n8 bytes each, little-endian
in standard form, in wire order (value 0 is the constant one).
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.circom import binfile
from proofflow.prover.circom.encoding import fr_from_standard
from proofflow.prover.circom.errors import CorruptFile
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr

HEADER, VALUES = 1, 2


def read_header(path, curve: Curve) -> tuple[binfile.BinFile, int]:
    """The file and its witness's count of values, checked: a .wtns of ``curve``'s scalar
    field, whose values section holds that many."""
    f = binfile.read(path, "wtns", max_version=2)
    head = f.reader(HEADER, "header")
    head.field(curve)
    count = head.u32()
    head.end()
    f.holds(VALUES, "witness values", "count", count, Fr.of(curve).BYTES)
    return f, count


def read_wtns(path, curve: Curve) -> np.ndarray:
    """The witness at ``path``, which must be of ``curve``'s scalar field, as its Fr vector."""
    f, count = read_header(path, curve)
    w = fr_from_standard(curve, f.section(VALUES, "witness values"), f.path, VALUES, "witness value")
    fr = Fr.of(curve)
    if count and not fr.equal(w[:1], fr.one()):
        raise CorruptFile(f.path, "witness value 0 (the constant one) is not 1", VALUES)
    return w
