"""MiMC-5 encryption chain: the prover knows the key that maps a public plaintext to a
public ciphertext through R rounds x <- (x + k + c_i)^5, then adds k.

MiMC over a curve's scalar field (BLS12-381's) is the kind of arithmetic hash filecoin-era
circuits use, and the chain scales by its round count: R is as many rounds as fit in 2^log2
constraints (3 per round). From log2 9 the cipher has >= 110 rounds, the count MiMC-5
needs over a 255-bit field; log2 8 gives a reduced-round instance for tests.

Each partition gets its own plaintext (its public input, like a challenge), all share the
run's key. Variables: 0 one, 1 plaintext x0, 2 ciphertext y, 3 key k, then per round i
t2_i = 4+3i, t4_i = 5+3i, x_{i+1} = 6+3i.
Constraints per round, with s_i = x_i + k + c_i:
    s_i * s_i = t2_i,    t2_i * t2_i = t4_i,    t4_i * s_i = x_{i+1}
and one last row (x_R + k) * 1 = y.
"""
from __future__ import annotations

import hashlib
from functools import cached_property

import numpy as np

from proofflow import settings
from proofflow.prover import files
from proofflow.prover.circuits.base import Circuit, Instance, derive
from proofflow.prover.curves import registry
from proofflow.prover.field.fr import Fr
from proofflow.prover.r1cs import ConstraintSystem, SparseMatrix

NUM_PUBLIC = 2
VARS_BEFORE_ROUNDS = 4
CONSTANTS_LABEL = "proofflow/mimc5/round-constant"


def round_constants(fr: Fr, count: int) -> np.ndarray:
    """The first ``count`` round constants (Montgomery, in ``fr``), the same for every size:
    derived once per machine and curve by SHA-256 (seconds at 2^24) and kept memory-mapped in
    the cache directory, extended when a larger circuit needs more."""
    path = settings.current().cache_root / "mimc" / f"{registry.path_tag(fr.curve)}round-constants.npy"
    try:
        cached = np.load(path, mmap_mode="r", allow_pickle=False)
        if cached.shape[0] >= count and cached.ndim == 2 and cached.shape[1] == 4:
            return cached[:count]
        have = cached.shape[0]
    except (OSError, ValueError):
        cached, have = None, 0
    p = fr.MODULUS
    more = fr.from_ints(int.from_bytes(hashlib.sha256(f"{CONSTANTS_LABEL}/{i}".encode()).digest(), "little") % p
                        for i in range(have, max(count, 2 * have)))
    full = more if cached is None else np.concatenate([cached, more])
    files.save_npy(path, full)
    return full[:count]


class MimcChain(Circuit):
    name = "mimc"

    @property
    def rounds(self) -> int:
        # 3 rows a round, 1 output row, and one input row per instance variable.
        return ((1 << self.log2) - 1 - (NUM_PUBLIC + 1)) // 3

    @cached_property
    def round_constants(self) -> np.ndarray:
        return round_constants(self.fr, self.rounds)

    @property
    def num_variables(self) -> int:
        return VARS_BEFORE_ROUNDS + 3 * self.rounds

    @property
    def num_constraints(self) -> int:
        return 3 * self.rounds + 1

    @property
    def num_public(self) -> int:
        return NUM_PUBLIC

    def _build(self) -> ConstraintSystem:
        R = self.rounds
        i = np.arange(R, dtype=np.int64)
        x_in = np.where(i == 0, 1, 3 + 3 * i)       # x_0 is the plaintext, x_i the previous output
        t2, t4, x_out = 4 + 3 * i, 5 + 3 * i, 6 + 3 * i
        one, key, ct = 0, 3, 2
        # the coefficients: 1 (index 0), then round constant i (index 1 + i), shared by A, B, C
        values = np.concatenate([self.fr.one(), self.round_constants])
        ones, consts = np.zeros(R, dtype=np.uint32), (1 + i).astype(np.uint32)
        r0, r1, r2, last = 3 * i, 3 * i + 1, 3 * i + 2, 3 * R

        def s_terms(rows):  # the linear combination x_i + k + c_i at each of ``rows``
            return [(rows, x_in, ones), (rows, np.full(R, key), ones), (rows, np.full(R, one), consts)]

        def single(rows, cols):
            return [(rows, cols, ones)]

        def at_last(*cols):
            return [(np.array([last]), np.array([c]), np.zeros(1, dtype=np.uint32)) for c in cols]

        a = s_terms(r0) + single(r1, t2) + single(r2, t4) + at_last(x_out[-1], key)
        b = s_terms(r0) + single(r1, t2) + s_terms(r2) + at_last(one)
        c = single(r0, t2) + single(r1, t4) + single(r2, x_out) + at_last(ct)
        rows, cols = 3 * R + 1, VARS_BEFORE_ROUNDS + 3 * R

        def matrix(terms):
            return SparseMatrix.from_triplets(
                self.curve, rows, cols, *(np.concatenate([t[k] for t in terms]) for k in range(3)), values)

        return ConstraintSystem(NUM_PUBLIC, cols, matrix(a), matrix(b), matrix(c))

    def key(self, seed: int) -> int:
        return derive(self.fr.MODULUS, "proofflow/mimc5/key", seed)

    def plaintext(self, seed: int, partition: int) -> int:
        return derive(self.fr.MODULUS, "proofflow/mimc5/plaintext", seed, partition)

    def instance(self, seed: int, partition: int, input=None) -> Instance:
        """The chain run in the C kernels, straight into the witness's round variables."""
        if input is not None:
            raise ValueError("the mimc family derives its inputs from the seed: it takes no input")
        k, x0, fr = self.key(seed), self.plaintext(seed, partition), self.fr
        witness = fr.zeros(self.num_variables)
        witness[:VARS_BEFORE_ROUNDS] = fr.from_ints([1, x0, 0, k])
        fr._lib().mimc_trace(fr.ptr(witness[3:4]), fr.ptr(witness[1:2]), fr.ptr(self.round_constants), self.rounds,
                             fr.ptr(witness[VARS_BEFORE_ROUNDS:]))
        fr.add(witness[-1:], witness[3:4], out=witness[2:3])  # y = x_R + k
        return Instance(partition, [x0, fr.to_ints(witness[2:3])[0]], witness)

    def witness_map(self, witness: np.ndarray, out=None):
        """a/b/c written row by row in the C kernels from the chain's structure, every row checked."""
        fr = self.fr
        return self._native_witness_map(witness, out, lambda a, b, c, n: fr._lib().mimc_abc(
            fr.ptr(witness), fr.ptr(self.round_constants), self.rounds, fr.ptr(a), fr.ptr(b), fr.ptr(c), n))
