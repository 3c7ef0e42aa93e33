"""Valid inputs for bench/circuits/, and the public signals each must give, computed here
without the circuit: so a benchmark's witness is checked against an independent answer.

* ``Poseidon``: circomlib's Poseidon(n) as poseidon.circom computes it (the optimized rounds
  and their constants C, S, M, P, read from circomlib's poseidon_constants.circom), over the
  circuit's field. On BLS12-381 that is not the BN254 hash circomlibjs computes: the
  constants are the same numbers, the field is not.
* ``merkle``: K leaves at distinct positions of a sparse tree of depth DEPTH (empty leaves 0),
  each with its siblings and position bits; the public signal is the root.
* ``sha256``: a message that pads to K blocks, as bits; the public signals are its digest's
  two 16-byte halves (hashlib's answer).
* ``chain``: x_{i+1} = x_i (x_i + 1) + c for K steps; the public signals are y and x.
"""
from __future__ import annotations

import hashlib
import random
import re
from functools import cached_property
from pathlib import Path

N_ROUNDS_F = 8
N_ROUNDS_P = (56, 57, 56, 60, 60, 63, 64, 63, 60, 66, 60, 65, 70, 60, 64, 68)  # by t - 2, as poseidon.circom


def _constants(text: str, name: str, t: int) -> list[int]:
    """The numbers POSEIDON_<name>(t) returns in poseidon_constants.circom, flattened."""
    body = text.split(f"function POSEIDON_{name}(t)", 1)[1].split("\nfunction ", 1)[0]
    branch = re.search(rf"t\s*==\s*{t}\s*\)\s*\{{(.*?)\}}\s*(else|$)", body, re.S)
    if branch is None:
        raise ValueError(f"poseidon_constants.circom has no POSEIDON_{name}({t})")
    return [int(h, 16) for h in re.findall(r"0x[0-9a-fA-F]+", branch.group(1))]


class Poseidon:
    """circomlib's Poseidon(n_inputs) over the field of prime ``r``."""

    def __init__(self, n_inputs: int, r: int, constants: Path):
        t = self.t = n_inputs + 1
        text = constants.read_text()
        self.r, self.n_p = r, N_ROUNDS_P[t - 2]
        self.c, self.s = _constants(text, "C", t), _constants(text, "S", t)
        m, p = _constants(text, "M", t), _constants(text, "P", t)
        self.m, self.p = [m[j * t:(j + 1) * t] for j in range(t)], [p[j * t:(j + 1) * t] for j in range(t)]

    def _full(self, state: list[int], offset: int, matrix) -> list[int]:
        """A full round as poseidon.circom splits it: S-boxes, the next round's constants, the mix."""
        t, r = self.t, self.r
        state = [(pow(x, 5, r) + self.c[offset + i]) % r for i, x in enumerate(state)]
        return [sum(matrix[j][i] * state[j] for j in range(t)) % r for i in range(t)]

    def __call__(self, *inputs: int) -> int:
        t, r, c, s, half = self.t, self.r, self.c, self.s, N_ROUNDS_F // 2
        assert len(inputs) == t - 1
        state = [(x + c[i]) % r for i, x in enumerate([0, *inputs])]
        for rnd in range(half - 1):
            state = self._full(state, (rnd + 1) * t, self.m)
        state = self._full(state, half * t, self.p)
        for rnd in range(self.n_p):
            first = (pow(state[0], 5, r) + c[(half + 1) * t + rnd]) % r
            base = (2 * t - 1) * rnd
            head = (first * s[base] + sum(s[base + i] * state[i] for i in range(1, t))) % r
            state = [head] + [(state[i] + first * s[base + t + i - 1]) % r for i in range(1, t)]
        for rnd in range(half - 1):
            state = self._full(state, (half + 1) * t + self.n_p + rnd * t, self.m)
        state = [pow(x, 5, r) for x in state]
        return sum(self.m[j][0] * state[j] for j in range(t)) % r


class SparseTree:
    """A Merkle tree of depth ``depth`` (parent = hash(left, right)) holding ``leaves`` (position ->
    value), every other leaf 0; only the nodes above the given leaves are computed."""

    def __init__(self, depth: int, leaves: dict[int, int], hash2):
        self.depth, self.levels, self.empty = depth, [dict(leaves)], [0]
        for d in range(depth):
            nodes, empty = self.levels[-1], self.empty[-1]
            parents = {i >> 1 for i in nodes}
            self.levels.append({i: hash2(nodes.get(2 * i, empty), nodes.get(2 * i + 1, empty)) for i in parents})
            self.empty.append(hash2(empty, empty))

    @cached_property
    def root(self) -> int:
        return self.levels[-1][0]

    def path(self, position: int) -> tuple[list[int], list[int]]:
        """The siblings from the leaf up, and the position's bits (1: the node is a right child)."""
        siblings = [self.levels[d].get((position >> d) ^ 1, self.empty[d]) for d in range(self.depth)]
        return siblings, [(position >> d) & 1 for d in range(self.depth)]


def merkle(k: int, depth: int, r: int, constants: Path, seed: int) -> tuple[dict, list[int]]:
    if k > 1 << depth:
        raise ValueError(f"{k} leaves do not fit a tree of depth {depth}")
    rng = random.Random(seed)
    positions = rng.sample(range(1 << depth), k)
    leaves = {p: rng.randrange(1, r) for p in positions}
    tree = SparseTree(depth, leaves, Poseidon(2, r, constants))
    paths = [tree.path(p) for p in positions]
    inputs = {"leaf": [str(leaves[p]) for p in positions],
              "siblings": [[str(v) for v in sib] for sib, _ in paths],
              "bits": [bits for _, bits in paths]}
    return inputs, [tree.root]


def sha256_message(k: int, seed: int) -> bytes:
    """The longest message that pads to k blocks: 64 k - 9 bytes (0x80 and the 64-bit length follow)."""
    return random.Random(seed).randbytes(64 * k - 9)


def sha256(k: int, seed: int) -> tuple[dict, list[int]]:
    message = sha256_message(k, seed)
    bits = [(byte >> (7 - j)) & 1 for byte in message for j in range(8)]
    digest = hashlib.sha256(message).digest()
    return {"message": bits}, [int.from_bytes(digest[:16], "big"), int.from_bytes(digest[16:], "big")]


def chain(steps: int, r: int, x: int = 3, c: int = 11) -> tuple[dict, list[int]]:
    y = x
    for _ in range(steps):
        y = (y * (y + 1) + c) % r
    return {"x": str(x), "c": str(c)}, [y, x]
