"""MiMC-5 encryption chain: the prover knows the key that maps a public plaintext to a
public ciphertext through R rounds x <- (x + k + c_i)^5, then adds k.

MiMC over the BLS12-381 scalar field is the kind of arithmetic hash filecoin-era circuits
use, and the chain scales by its round count: R is as many rounds as fit in 2^log2
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

from functools import cached_property

import numpy as np

from proofflow.prover.circuits.base import Circuit, Instance, derive
from proofflow.prover.field import fr
from proofflow.prover.r1cs import ConstraintSystem, SparseMatrix

NUM_PUBLIC = 2
VARS_BEFORE_ROUNDS = 4


class MimcChain(Circuit):
    name = "mimc"

    @property
    def rounds(self) -> int:
        # 3 rows a round, 1 output row, and one input row per instance variable.
        return ((1 << self.log2) - 1 - (NUM_PUBLIC + 1)) // 3

    @cached_property
    def round_constants(self) -> list[int]:
        return [derive("proofflow/mimc5/round-constant", i) for i in range(self.rounds)]

    def _build(self) -> ConstraintSystem:
        R = self.rounds
        i = np.arange(R, dtype=np.int64)
        x_in = np.where(i == 0, 1, 3 + 3 * i)       # x_0 is the plaintext, x_i the previous output
        t2, t4, x_out = 4 + 3 * i, 5 + 3 * i, 6 + 3 * i
        one, key, ct = 0, 3, 2
        consts = fr.from_ints(self.round_constants)
        ones = fr.ones(R)
        r0, r1, r2, last = 3 * i, 3 * i + 1, 3 * i + 2, 3 * R

        def s_terms(rows):  # the linear combination x_i + k + c_i at each of ``rows``
            return [(rows, x_in, ones), (rows, np.full(R, key), ones), (rows, np.full(R, one), consts)]

        def single(rows, cols):
            return [(rows, cols, ones)]

        final_s = [(np.array([last]), np.array([x_out[-1]]), fr.ones(1)), (np.array([last]), np.array([key]), fr.ones(1))]
        a = s_terms(r0) + single(r1, t2) + single(r2, t4) + final_s
        b = s_terms(r0) + single(r1, t2) + s_terms(r2) + [(np.array([last]), np.array([one]), fr.ones(1))]
        c = single(r0, t2) + single(r1, t4) + single(r2, x_out) + [(np.array([last]), np.array([ct]), fr.ones(1))]
        rows, cols = 3 * R + 1, VARS_BEFORE_ROUNDS + 3 * R

        def matrix(terms):
            return SparseMatrix.from_triplets(
                rows, cols, np.concatenate([t[0] for t in terms]), np.concatenate([t[1] for t in terms]),
                np.concatenate([t[2] for t in terms]))

        return ConstraintSystem(NUM_PUBLIC, cols, matrix(a), matrix(b), matrix(c))

    def key(self, seed: int) -> int:
        return derive("proofflow/mimc5/key", seed)

    def plaintext(self, seed: int, partition: int) -> int:
        return derive("proofflow/mimc5/plaintext", seed, partition)

    def encrypt(self, key: int, x: int) -> list[int]:
        """The chain in plain Python integers: [t2_0, t4_0, x_1, t2_1, ...] then the ciphertext."""
        p = fr.MODULUS
        trace = []
        for c in self.round_constants:
            s = (x + key + c) % p
            t2 = s * s % p
            t4 = t2 * t2 % p
            x = t4 * s % p
            trace += (t2, t4, x)
        trace.append((x + key) % p)
        return trace

    def instance(self, seed: int, partition: int, input=None) -> Instance:
        if input is not None:
            raise ValueError("the mimc family derives its inputs from the seed: it takes no input")
        k, x0 = self.key(seed), self.plaintext(seed, partition)
        trace = self.encrypt(k, x0)
        y = trace.pop()
        witness = fr.from_ints([1, x0, y, k] + trace)
        return Instance(partition, [x0, y], witness)
