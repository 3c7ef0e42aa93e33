"""Key-side density: the rows of a key's table that hold the point at infinity are left out
of the table the device keeps, and an MSM over it takes its scalars at the rows kept.

A Groth16 key has a point per variable in each of A, B_G1 and B_G2, and a variable that no
constraint of a matrix uses has the point at infinity there (its polynomial is zero at tau).
A MiMC chain's t4 variables are in no B row, so a third of both B tables is infinity; the
``bits`` family leaves a third of A so, and circom circuits many B rows. Pippenger would
still sort those rows' digits into buckets, where a lane that meets one idles while its
warp adds: a third of the B MSMs' work for MiMC, its costliest MSM (B_G2) included.
supraseal drops such rows by a density bitmap; here the kept rows are found once, on the
device, when the table is made resident, and each MSM gathers its scalars at them (32 bytes
a kept row of memory traffic, against a bucket addition a window saved a dropped row).

Functions of an array module ``xp`` (CuPy on the GPU, numpy for the CPU twin); no kernels.
"""
from __future__ import annotations

INDEX_BYTES = 8  # a kept row's index on the device


def kept_rows(xp, points):
    """The indices (int64, ascending: the array module's own index type) of the rows of
    ``points`` ((n, affine limbs) u64, the point at infinity all zeros) that are not
    infinity, when the rows left out save more device memory than the indices take (7.7%
    of a G1 table at infinity, 4% of a G2 one); else None (the table is kept whole). So a
    table on the device never takes more than its points' bytes, which is what
    ``proofflow.prover.resources`` and ``keys.key_bytes`` count."""
    n, row_bytes = points.shape[0], points.shape[1] * points.itemsize
    finite = points.any(axis=1)  # reduces without an (n, limbs) temporary
    kept = int(xp.count_nonzero(finite))
    if n == 0 or (n - kept) * row_bytes < INDEX_BYTES * kept:
        return None
    return xp.flatnonzero(finite)


def gather(xp, scalars, rows):
    """The scalars of the rows a table kept (``kept_rows``); all of them for a whole table."""
    return scalars if rows is None else xp.take(scalars, rows, axis=0)
