"""What a circuit family provides to synthesis and setup."""
from __future__ import annotations

import abc
import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from proofflow.prover.field import fr
from proofflow.prover.r1cs import ConstraintSystem


@dataclass(frozen=True)
class Instance:
    """One partition's assignment: public inputs (ints) and the full witness (Fr vector,
    the constant one first, then the public inputs, then the private variables)."""

    partition: int
    public_inputs: list[int]
    witness: np.ndarray


def derive(*parts) -> int:
    """A field element derived from labelled parts by SHA-256 (deterministic, seedable)."""
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h, "little") % fr.MODULUS


class Circuit(abc.ABC):
    name: str

    def __init__(self, log2: int):
        self.log2 = log2

    @cached_property
    def constraint_system(self) -> ConstraintSystem:
        return self._build()

    @abc.abstractmethod
    def _build(self) -> ConstraintSystem:
        """The constraint system; with its input constraints it fits 2^log2 rows."""

    @abc.abstractmethod
    def instance(self, seed: int, partition: int, input=None) -> Instance:
        """The witness of one partition: derived from the run's seed and its index by a
        built-in family, computed from the partition's ``input`` by a registered circuit."""
