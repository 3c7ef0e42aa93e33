"""The backend interface the Groth16 prover calls. A backend serves every registered curve:
each call's curve is its data's (the domain's, the table's), or named (``fixed_base``)."""
from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.groth16 import odd_coset
from proofflow.prover.points import PointTable
from proofflow.prover.polynomial.domain import Radix2Domain
from proofflow.spec import MemoryKind


@dataclass
class Transfer:
    """One host-to-device (or back) copy: bytes, milliseconds, the host memory's kind."""
    nbytes: int
    ms: float
    kind: MemoryKind

    def __post_init__(self):
        self.kind = MemoryKind(self.kind)

    @property
    def gbps(self) -> float:
        return self.nbytes / (self.ms * 1e6) if self.ms > 0 else float("inf")


@dataclass(frozen=True)
class MsmJob:
    """One MSM of a proof: sum scalars[i] * table[i]. ``witness``: the scalars are a witness
    (``Backend.msm_witness`` splits off its 0/1 values); else they are dense (H's
    coefficients: ``msm_g1`` / ``msm_g2``)."""
    table: PointTable
    scalars: object
    witness: bool = True


class Backend(abc.ABC):
    name: str
    # True when msm_g2 runs on the host CPU while the rest runs elsewhere: the prover
    # then overlaps it with the other phases.
    g2_on_host: bool = False

    @abc.abstractmethod
    def ntt(self, domain: Radix2Domain, x: np.ndarray, inverse: bool = False) -> np.ndarray:
        """NTT (or inverse) of an Fr vector; returns a host Fr vector."""

    @abc.abstractmethod
    def coset_ntt(self, domain: Radix2Domain, x: np.ndarray, inverse: bool = False) -> np.ndarray:
        """NTT onto (inverse: from) the coset g*D."""

    @abc.abstractmethod
    def compute_h(self, domain: Radix2Domain, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Coefficients of H = (A*B - C) / Z from the evaluations a, b, c over ``domain``.

        The returned vector has ``domain.size`` entries; the last is always zero
        (deg H <= n - 2). The inputs are not modified.
        """

    def compute_h_odd_coset(self, domain: Radix2Domain, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """A*B - C at the odd points of the 2n domain, in snarkjs's order, from a, b, c over
        snarkjs's domain (its roots of unity, its order): the H vector of a snarkjs key
        (``groth16.odd_coset``). ``domain.size`` entries; the inputs are not modified."""
        return odd_coset.h_odd_coset(self.ntt, domain, a, b, c)

    @abc.abstractmethod
    def msm_g1(self, table: PointTable, scalars):
        """sum scalars[i] * table[i] in G1 (a point of the table's curve's library); scalars host or resident."""

    @abc.abstractmethod
    def msm_g2(self, table: PointTable, scalars):
        """sum scalars[i] * table[i] in G2."""

    def msm_witness(self, table: PointTable, scalars):
        """sum scalars[i] * table[i] in the table's group, for scalars that are a witness:
        in circuits of bit decompositions mostly 0 or 1, which a backend splits off (zeros
        skipped, the points of ones added up, the rest to its MSM). Here: its plain MSM."""
        return (self.msm_g1 if table.group == "g1" else self.msm_g2)(table, scalars)

    def msm_job(self, job: MsmJob):
        if job.witness:
            return self.msm_witness(job.table, job.scalars)
        return (self.msm_g1 if job.table.group == "g1" else self.msm_g2)(job.table, job.scalars)

    def msms(self, jobs: list[MsmJob]) -> list:
        """Each job's MSM, in the jobs' order. The jobs are independent (a proof's A, B, L
        and H), so a backend may run them at once; the results are the same either way.
        Here: one after another."""
        return [self.msm_job(job) for job in jobs]

    # ---- resident data: what the prover keeps where the backend computes ----
    @abc.abstractmethod
    def upload(self, host: np.ndarray, kind: str | None = None) -> tuple[object, Transfer]:
        """Copy a host Fr vector to where this backend computes, timed. ``kind`` names the
        host memory where the backend cannot tell it itself."""

    def compute_h_resident(self, domain: Radix2Domain, a, b, c, basis: str = "monomial"):
        """H in ``basis`` (a key's ``h_basis``) from uploaded a, b, c, left where the backend
        computes (finished on return)."""
        return self.compute_h(domain, a, b, c) if basis == "monomial" else self.compute_h_odd_coset(domain, a, b, c)

    def device_phase(self):
        """A context around one proof's device work (uploads to the last MSM). A stand-in
        backend stretches it to a fixed length; real backends need nothing."""
        return contextlib.nullcontext()

    def warm_up(self) -> None:
        """Pay the one-time costs (kernel compilation, device context) now, not in a proof."""

    def prepare(self, pk, plans: dict | None = None) -> None:
        """Make a proving key's point tables resident where the backend computes, each with
        the precomputed copies of its MSM plan in ``plans`` (by table; None: plain) where
        the backend has such MSMs."""

    def fixed_base(self, curve: Curve, group: str, scalars: np.ndarray,
                   progress: Callable[[int], None] | None = None) -> PointTable | None:
        """[s * G for s in scalars], G the generator of ``curve``'s group, as a table (the
        setup's key tables), with ``progress(count)`` as points are done; None where this
        backend has no kernel for it: the setup then multiplies on the CPU."""
        return None
