"""A chain of bit gadgets: the prover knows the message words that take a public 32-bit
state x0 to a public state y, each block absorbing one word through Num2Bits, AND and XOR.

The family stands for the circuits made of bit decompositions (circom's Num2Bits and
comparators, SHA-256's word gadgets; Filecoin's circuits are of this kind): ~99% of its
witness is 0 or 1 (the bits), the rest 32-bit words. Its shape is SHA-256's, not its
strength: per block i, with the state's bits s and the message word m_i,
    a = m_i AND rotr(s, ROT),    s' = s XOR a,
and the chain fills 2^log2 rows as MiMC's does (97 rows a block). Each partition derives
its own x0 and message words from the run's seed.

Variables: 0 one, 1 x0, 2 y, 3..34 the bits of x0 (s of block 0), then per block i from
v = 35 + 97i: m_i, its bits mb_j at v+1+j, a_j at v+33+j, s'_j at v+65+j (j < 32; s of
block i > 0 is the s' of block i-1). Constraints, from row 0:
    s_j * (s_j - 1) = 0 (j < 32),  (sum_j 2^j s_j) * 1 = x0,
then per block, from row r = 33 + 97i:
    mb_j * (mb_j - 1) = 0,  (sum_j 2^j mb_j) * 1 = m_i,      (Num2Bits of m_i: 33 rows)
    mb_j * s_(j+ROT mod 32) = a_j,                            (AND: 32 rows)
    (2 s_j) * a_j = s_j + a_j - s'_j,                         (XOR: 32 rows)
and one last row (sum_j 2^j s_j) * 1 = y over the last block's s'. a and s' need no
boolean rows: AND and XOR of bits are bits.
"""
from __future__ import annotations

import hashlib

import numpy as np

from proofflow.prover.circuits.base import Circuit, Instance, derive
from proofflow.prover.r1cs import ConstraintSystem, SparseMatrix

NUM_PUBLIC = 2
WORD = 32  # bits a word, SHA-256's
ROT = 7  # the AND's rotation of the state (SHA-256's sigma0 rotates by 7)
BLOCK = 3 * WORD + 1  # rows and variables a block: m, its bits, a, s'
HEAD_ROWS = WORD + 1  # x0's Num2Bits
VARS_BEFORE_BLOCKS = 1 + NUM_PUBLIC + WORD  # one, x0, y, x0's bits
MASK = (1 << WORD) - 1


def rotr(x: int, r: int) -> int:
    return ((x >> r) | (x << (WORD - r))) & MASK


class BitsChain(Circuit):
    name = "bits"

    @property
    def blocks(self) -> int:
        """As many as fit beside x0's Num2Bits, the output row and one input row per instance
        variable: 2 at log2 8, 172,960 at 2^24."""
        return ((1 << self.log2) - HEAD_ROWS - 1 - (NUM_PUBLIC + 1)) // BLOCK

    @property
    def num_variables(self) -> int:
        return VARS_BEFORE_BLOCKS + BLOCK * self.blocks

    @property
    def num_constraints(self) -> int:
        return HEAD_ROWS + BLOCK * self.blocks + 1

    @property
    def num_public(self) -> int:
        return NUM_PUBLIC

    def _build(self) -> ConstraintSystem:
        B, W = self.blocks, WORD
        one, x0, y = 0, 1, 2
        j = np.arange(W, dtype=np.int64)
        i = np.arange(B, dtype=np.int64)[:, None]
        v = VARS_BEFORE_BLOCKS + BLOCK * i  # each block's first variable, (B, 1)
        r = HEAD_ROWS + BLOCK * i  # and row
        s = np.concatenate([VARS_BEFORE_BLOCKS - W + j[None, :], v[:-1] + 2 * W + 1 + j])  # each block's state
        mb, a, s2 = v + 1 + j, v + W + 1 + j, v + 2 * W + 1 + j  # (B, W) each
        fr = self.fr
        # the coefficients, shared by A, B, C: 2^k at index k (so 1 at 0, 2 at 1), then -1
        values = np.concatenate([fr.from_ints([1 << k for k in range(W)]), fr.constant(-1)])
        ONE, TWO, MINUS_ONE, POW2 = 0, 1, W, j
        terms = {"a": [], "b": [], "c": []}

        def add(m, rows, cols, coeffs):
            rows, cols, coeffs = np.broadcast_arrays(np.atleast_1d(rows), np.atleast_1d(cols), np.atleast_1d(coeffs))
            terms[m].append((rows.ravel(), cols.ravel(), coeffs.ravel()))

        def num2bits(bit_rows, bits, pack_row, word):  # b * (b - 1) = 0, then (sum 2^j b_j) * 1 = word
            add("a", bit_rows, bits, ONE)
            add("b", bit_rows, bits, ONE)
            add("b", bit_rows, one, MINUS_ONE)
            add("a", pack_row, bits, POW2)
            add("b", pack_row, one, ONE)
            add("c", pack_row, word, ONE)

        num2bits(j, VARS_BEFORE_BLOCKS - W + j, W, x0)
        num2bits(r + j, mb, r + W, v)
        and_rows, xor_rows = r + W + 1 + j, r + 2 * W + 1 + j
        add("a", and_rows, mb, ONE)
        add("b", and_rows, s[:, (j + ROT) % W], ONE)
        add("c", and_rows, a, ONE)
        add("a", xor_rows, s, TWO)
        add("b", xor_rows, a, ONE)
        add("c", xor_rows, s, ONE)
        add("c", xor_rows, a, ONE)
        add("c", xor_rows, s2, MINUS_ONE)
        last = HEAD_ROWS + BLOCK * B
        add("a", last, s2[-1], POW2)
        add("b", last, one, ONE)
        add("c", last, y, ONE)
        rows, cols = self.num_constraints, self.num_variables

        def matrix(name):
            parts = terms[name]
            return SparseMatrix.from_triplets(self.curve, rows, cols,
                                              *(np.concatenate([p[k] for p in parts]) for k in range(3)), values)

        return ConstraintSystem(NUM_PUBLIC, cols, matrix("a"), matrix("b"), matrix("c"))

    def start(self, seed: int, partition: int) -> int:
        """x0: the partition's public starting state."""
        return derive(self.fr.MODULUS, "proofflow/bits/start", seed, partition) & MASK

    def messages(self, seed: int, partition: int) -> np.ndarray:
        """The partition's message words (uint32), one a block, from SHAKE-256."""
        label = f"proofflow/bits/messages/{seed}/{partition}".encode()
        return np.frombuffer(hashlib.shake_256(label).digest(4 * self.blocks), dtype="<u4").astype(np.uint32)

    def instance(self, seed: int, partition: int, input=None) -> Instance:
        """The chain run on Python ints (a few operations a block, sequential), the words
        unpacked into bits by numpy and converted to Montgomery form by one pass of the C
        kernels: ~0.5 s at 2^24."""
        if input is not None:
            raise ValueError("the bits family derives its inputs from the seed: it takes no input")
        x0, msgs = self.start(seed, partition), self.messages(seed, partition)
        ands, states, s = [], [], x0
        for m in msgs.tolist():
            a = m & rotr(s, ROT)
            s ^= a
            ands.append(a)
            states.append(s)
        ands, states = np.array(ands, dtype=np.uint32), np.array(states, dtype=np.uint32)
        shifts = np.arange(WORD, dtype=np.uint32)
        bits = lambda words: (words[:, None] >> shifts) & 1  # noqa: E731
        values = np.zeros((self.num_variables, 4), dtype=np.uint64)  # canonical, then Montgomery in place
        values[:VARS_BEFORE_BLOCKS, 0] = [1, x0, s] + bits(np.array([x0], dtype=np.uint32))[0].tolist()
        block = values[VARS_BEFORE_BLOCKS:, 0].reshape(self.blocks, BLOCK)
        block[:, 0] = msgs
        block[:, 1:] = np.concatenate([bits(msgs), bits(ands), bits(states)], axis=1)
        witness = self.fr.from_canonical(values, out=values)
        return Instance(partition, [x0, s], witness)

    def witness_map(self, witness: np.ndarray, out=None):
        """a/b/c written block by block in the C kernels from the chain's structure, every row checked."""
        fr = self.fr
        return self._native_witness_map(witness, out, lambda a, b, c, n: fr._lib().bits_abc(
            fr.ptr(witness), self.blocks, fr.ptr(a), fr.ptr(b), fr.ptr(c), n))
