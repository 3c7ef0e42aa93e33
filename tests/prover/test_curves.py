"""The curve descriptors: BLS12-381's constants against the values the engine hard-coded
before them and against arkworks, their consistency, and the registry's lookups."""
import pytest

from proofflow import spec
from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.curves.descriptor import PrimeField

R, Q = CURVE.fr.modulus, CURVE.fq.modulus


def test_the_registry_names_what_spec_offers():
    if not hasattr(spec, "CURVES"):
        pytest.skip("spec.CURVES is not there yet: the run's typed config (spec.RunConfig) brings it")
    assert tuple(spec.CURVES) == registry.NAMES


def test_bls12_381_is_the_fields_the_engine_had():
    assert R == 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
    assert Q == 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
    assert (CURVE.fr.limbs, CURVE.fq.limbs, CURVE.fr.bytes, CURVE.fq.bytes) == (4, 6, 32, 48)
    assert (CURVE.max_log2, CURVE.fr.generator, CURVE.fr.first_non_residue()) == (32, 7, 5)
    assert CURVE.key_format == "proofflow-groth16-bls12-381/1" and CURVE.snarkjs_name == "bls12381"


@pytest.mark.parametrize("field", [CURVE.fr, CURVE.fq], ids=["fr", "fq"])
def test_montgomery_constants_are_consistent(field):
    p, r = field.modulus, field.montgomery_r
    assert r == (1 << (64 * field.limbs)) % p and r * pow(r, -1, p) % p == 1
    assert field.montgomery_r2 == r * r % p
    for bits in (32, 64):
        assert p * field.montgomery_inverse(bits) % (1 << bits) == (1 << bits) - 1  # p * (-p^-1) = -1


def test_the_two_adic_roots_of_unity_have_their_order():
    s = CURVE.fr.two_adicity
    assert (R - 1) % (1 << s) == 0 and ((R - 1) >> s) % 2 == 1
    for k in (1, 10, s):
        w = CURVE.fr.root_of_unity(k)
        assert pow(w, 1 << k, R) == 1 and pow(w, 1 << (k - 1), R) == R - 1
    with pytest.raises(ValueError, match="0..32"):
        CURVE.fr.root_of_unity(s + 1)


def test_a_field_with_a_wrong_claim_is_refused():
    with pytest.raises(ValueError, match="largest power of two"):
        PrimeField(R, 4, two_adicity=31, generator=7)
    with pytest.raises(ValueError, match="quadratic residue"):
        PrimeField(R, 4, two_adicity=32, generator=4)
    with pytest.raises(ValueError, match="spare bit"):
        PrimeField(Q, 6 - 1)


def test_the_groups_are_the_equations_and_encodings_arkworks_has():
    for group, b in (("g1", CURVE.g1_b), ("g2", CURVE.g2_b)):
        g = CURVE.point_class(group)()
        raw = g.to_xy_bytes_le()
        assert len(raw) == CURVE.xy_bytes(group) and len(g.to_compressed_bytes()) == CURVE.compressed_bytes(group)
        coords = [int.from_bytes(raw[i:i + 48], "little") for i in range(0, len(raw), 48)]
        if group == "g1":
            x, y = coords
            assert (y * y - x ** 3 - b) % Q == 0
        else:  # in Fq2 = Fq[u]/(u^2 - beta)
            beta = CURVE.fq2_non_residue

            def mul(a, c):
                return ((a[0] * c[0] + beta * a[1] * c[1]) % Q, (a[0] * c[1] + a[1] * c[0]) % Q)
            x, y = tuple(coords[:2]), tuple(coords[2:])
            x3 = mul(mul(x, x), x)
            assert mul(y, y) == ((x3[0] + b[0]) % Q, (x3[1] + b[1]) % Q)
    assert CURVE.proof_bytes == 192


def test_the_pairing_check_goes_through_the_descriptor():
    g1, g2, s = CURVE.point_class("g1")(), CURVE.point_class("g2")(), CURVE.scalar(12345)
    assert CURVE.pairing_check([g1 * s, -g1], [g2, g2 * s])
    assert not CURVE.pairing_check([g1 * s, -g1], [g2, g2])



def test_the_registry_looks_curves_up():
    assert registry.get_curve("bls12_381") is CURVE and registry.DEFAULT == "bls12_381"
    assert registry.by_scalar_prime(R) is CURVE and registry.by_scalar_prime(Q) is None
    assert registry.by_snarkjs_name("bls12381") is CURVE and registry.by_snarkjs_name("bn128") is None
    with pytest.raises(registry.UnknownCurve, match="unknown curve 'bn254': the registered curves are bls12_381"):
        registry.get_curve("bn254")
