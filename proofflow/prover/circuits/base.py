"""What a circuit family provides to synthesis and setup."""
from __future__ import annotations

import abc
import hashlib
import logging
import shutil
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from proofflow.prover import constraint_files
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr
from proofflow.prover.r1cs import ConstraintSystem, UnsatisfiedConstraint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Instance:
    """One partition's assignment: public inputs (ints) and the full witness (Fr vector,
    the constant one first, then the public inputs, then the private variables)."""

    partition: int
    public_inputs: list[int]
    witness: np.ndarray


def derive(modulus: int, *parts) -> int:
    """An element of the field of ``modulus`` derived from labelled parts by SHA-256
    (deterministic, seedable)."""
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h, "little") % modulus


class Circuit(abc.ABC):
    """A circuit of 2^log2 constraints over ``curve``'s scalar field."""
    name: str

    def __init__(self, log2: int, curve: Curve):
        self.log2 = log2
        self.curve = curve
        self.fr = Fr.of(curve)

    #: What the cached constraint system was built from; a family bumps it when its
    #: constraints change, a registered circuit names its r1cs's digest.
    cache_version = "1"

    @property
    def constraint_system_dir(self):
        """Where this machine keeps the circuit's constraint system (under PROOFFLOW_CACHE); the
        directory names the curve unless it is the default one (as before curves were named)."""
        from proofflow import settings
        name = f"{registry.path_tag(self.curve)}{self.name}-2^{self.log2}-{self.cache_version}"
        return settings.current().cache_root / "constraint-systems" / name

    @cached_property
    def constraint_system(self) -> ConstraintSystem:
        """Built once per circuit and size on this machine, then memory-mapped from the cache
        (a 2^24 MiMC chain takes ~20 s to build, milliseconds to map). A first build is
        mapped back from the files it saved, so its memory is not held. A cache this version
        cannot use (an older format, a damaged file) is removed, saying why, and rebuilt."""
        d = self.constraint_system_dir
        try:
            return constraint_files.load(d, self.curve)
        except FileNotFoundError:
            pass
        except constraint_files.UnreadableCache as exc:
            log.warning("%s: rebuilding it", exc)
            shutil.rmtree(d, ignore_errors=True)  # first: an old 2^27 cache takes 30 GB
        constraint_files.save(self._build(), d)
        return constraint_files.load(d, self.curve)

    @property
    def domain_size(self) -> int:
        """The QAP domain: the constraints and the input rows, rounded up to a power of two."""
        from proofflow.prover.polynomial.domain import Radix2Domain
        return Radix2Domain.for_size(self.num_constraints + self.num_public + 1, self.curve).size

    @property
    def num_variables(self) -> int:
        return self.constraint_system.num_variables

    @property
    def num_constraints(self) -> int:
        return self.constraint_system.num_constraints

    @property
    def num_public(self) -> int:
        return self.constraint_system.num_public

    def witness_map(self, witness: np.ndarray, out=None):
        """The a/b/c vectors of a witness over the domain, every constraint checked
        (``r1cs_to_qap.witness_map``; a family may write them faster from its structure)."""
        from proofflow.prover.groth16 import r1cs_to_qap
        return r1cs_to_qap.witness_map(self.constraint_system, witness, out)

    def _native_witness_map(self, witness: np.ndarray, out, write) -> tuple:
        """a/b/c of a family whose C kernel writes them from its structure (``write(a, b, c,
        n)``: no sparse products, no constraint system built), the sizes checked first and
        every row after (a*b = c)."""
        n, fr = self.domain_size, self.fr
        fr._check(witness, "witness")
        if witness.shape[0] != self.num_variables:
            raise ValueError(f"the witness has {witness.shape[0]} variables, the circuit {self.num_variables}")
        a, b, c = out if out is not None else (fr.zeros(n), fr.zeros(n), fr.zeros(n))
        for v in (a, b, c):
            fr._check(v, "out")
            if v.shape[0] != n:
                raise ValueError(f"a/b/c buffers must hold the domain's {n} elements, got {v.shape[0]}")
        write(a, b, c, n)
        bad = fr._lib().fr_first_unsatisfied(fr.ptr(a), fr.ptr(b), fr.ptr(c), self.num_constraints)
        if bad >= 0:
            raise UnsatisfiedConstraint(int(bad))
        return a, b, c

    @abc.abstractmethod
    def _build(self) -> ConstraintSystem:
        """The constraint system; with its input constraints it fits 2^log2 rows."""

    @abc.abstractmethod
    def instance(self, seed: int, partition: int, input=None) -> Instance:
        """The witness of one partition: derived from the run's seed and its index by a
        built-in family, computed from the partition's ``input`` by a registered circuit."""
