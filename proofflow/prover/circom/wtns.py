"""Witness files (.wtns, version 2) as Fr vectors.

Section 1: u32 n8, the prime, u32 count. Section 2: the values, n8 bytes each, little-endian
in standard form, in wire order (value 0 is the constant one).
"""
from __future__ import annotations

import numpy as np

from proofflow.prover.circom import binfile
from proofflow.prover.circom.encoding import fr_from_standard
from proofflow.prover.field import fr

HEADER, VALUES = 1, 2


def read_wtns(path) -> np.ndarray:
    f = binfile.read(path, "wtns", max_version=2)
    head = f.reader(HEADER, "header")
    head.field()
    count = head.u32()
    head.end()
    values = f.reader(VALUES, "witness values")
    w = fr_from_standard(values.take(count * fr.BYTES), f.path, VALUES, "witness value")
    values.end()
    if count and not fr.equal(w[:1], fr.one()):
        raise values.fail("witness value 0 (the constant one) is not 1")
    return w
