"""The registered curves, by name, and the lookups the readers of other programs' files
need: circom and snarkjs name a curve by its scalar field's prime or by their own name."""
from __future__ import annotations

from proofflow.prover.curves.bls12_381 import BLS12_381
from proofflow.prover.curves.bn254 import BN254
from proofflow.prover.curves.descriptor import Curve

CURVES: dict[str, Curve] = {c.name: c for c in (BLS12_381, BN254)}
NAMES = tuple(CURVES)
# The curve of whatever names none: keys, bundles and runs from before the curve was recorded.
DEFAULT = BLS12_381.name


class UnknownCurve(ValueError):
    """A curve name no descriptor is registered under."""


def get_curve(name: str) -> Curve:
    try:
        return CURVES[name]
    except (KeyError, TypeError):
        raise UnknownCurve(f"unknown curve {name!r}: the registered curves are {', '.join(NAMES)}") from None


def by_scalar_prime(p: int) -> Curve | None:
    """The registered curve whose Fr has prime ``p``."""
    return next((c for c in CURVES.values() if c.fr.modulus == p), None)


def by_snarkjs_name(name) -> Curve | None:
    """The registered curve snarkjs calls ``name`` (its JSON files' "curve")."""
    return next((c for c in CURVES.values() if c.snarkjs_name == name), None)


def path_tag(curve: Curve) -> str:
    """What names a curve in the paths of its keys and caches: nothing for the default curve
    (its paths predate curves), else its name and a dash."""
    return "" if curve.name == DEFAULT else f"{curve.name}-"
