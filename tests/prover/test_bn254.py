"""BN254 as a registered curve: its constants against the published ones, its fields
against Python's integers, its groups (the engine's C, ``native/curve.c``) against py-ecc
(the Ethereum Foundation's pure-Python BN254, an independent reference), its encodings
(arkworks's compressed bytes against zksnake's arkworks bindings, snarkjs's JSON,
Ethereum's words against EIP-197's generator), the pairing against py-ecc's, and Groth16 on
the CPU backend end to end."""
import random
import sys

import numpy as np
import pytest

_RECURSION_LIMIT = sys.getrecursionlimit()
from py_ecc import optimized_bn128 as ref  # noqa: E402
from py_ecc.optimized_bn128 import optimized_pairing  # noqa: E402

# py_ecc raises the interpreter's recursion limit to 100000 when imported, for the whole test
# session: a later test's 100000-deep JSON would then recurse instead of being refused at once
sys.setrecursionlimit(_RECURSION_LIMIT)

from proofflow.prover import bundle, points
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circom import snarkjs_json
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import bn254_points, ethereum, registry
from proofflow.prover.curves.bn254 import BN254 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator, prover, verifier
from proofflow.prover.groth16.data_structures import Proof, ProvingKey
from proofflow.prover.native.curve import CurveKernels
from proofflow.prover.polynomial.domain import Radix2Domain

R, Q = CURVE.fr.modulus, CURVE.fq.modulus
fr = Fr.of(CURVE)
G1, G2, Scalar = bn254_points.G1Point, bn254_points.G2Point, bn254_points.Scalar


def _ref(point) -> list[int]:
    """A py-ecc point as our coordinates (x, y or x.c0, x.c1, y.c0, y.c1; zeros at infinity)."""
    if ref.is_inf(point):
        return [0, 0] if isinstance(point[0], ref.FQ) else [0, 0, 0, 0]
    x, y = ref.normalize(point)
    if isinstance(x, ref.FQ):
        return [int(x), int(y)]
    return [*map(int, x.coeffs), *map(int, y.coeffs)]


def _ours(group: str, k: int):
    return CURVE.point_class(group)() * Scalar(k)


def _reference(group: str, k: int):
    return ref.multiply(ref.G1 if group == "g1" else ref.G2, k % R)


# ---- constants ------------------------------------------------------------------------

def test_the_constants_are_bn254s():
    assert R == 0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001 == ref.curve_order
    assert Q == 0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47 == ref.field_modulus
    assert (CURVE.fr.limbs, CURVE.fq.limbs, CURVE.fr.bytes, CURVE.fq.bytes) == (4, 4, 32, 32)
    assert CURVE.g1_b == int(ref.b) == 3
    # b' = 3/(9 + u): go-ethereum's and arkworks's twist coefficient, and py-ecc's b2
    assert CURVE.g2_b == (19485874751759354771024239261021720505790618469301721065564631296452457478373,
                          266929791119991161246907387137283842545076965332900288569378510910307636690)
    assert CURVE.g2_b == tuple(map(int, ref.b2.coeffs))
    assert (CURVE.snarkjs_name, CURVE.key_format, CURVE.proof_bytes) == ("bn128", "proofflow-groth16-bn254/1", 128)
    assert (CURVE.xy_bytes("g1"), CURVE.xy_bytes("g2"), CURVE.compressed_bytes("g2")) == (64, 128, 64)


def test_the_scalar_fields_two_adic_domain():
    """2^28 divides r - 1 exactly; 5 is a quadratic non-residue and the first, so it is the
    generator snarkjs (ffjavascript: the first non-residue) and arkworks (GENERATOR = 5)
    take their roots of unity from; the 2^28-th root is arkworks's TWO_ADIC_ROOT_OF_UNITY."""
    assert (R - 1) % (1 << 28) == 0 and ((R - 1) >> 28) % 2 == 1 and CURVE.max_log2 == 28
    assert CURVE.fr.generator == CURVE.fr.first_non_residue() == 5
    w = CURVE.fr.root_of_unity(28)
    assert w == 19103219067921713944291392827692070036145651957329286315305642004821462161904
    for k in (1, 5, 28):
        wk = CURVE.fr.root_of_unity(k)
        assert pow(wk, 1 << k, R) == 1 and pow(wk, 1 << (k - 1), R) == R - 1
    with pytest.raises(ValueError, match="0..28"):
        CURVE.fr.root_of_unity(29)


@pytest.mark.parametrize("field", [CURVE.fr, CURVE.fq], ids=["fr", "fq"])
def test_montgomery_constants_are_consistent(field):
    p, r = field.modulus, field.montgomery_r
    assert r == (1 << 256) % p and field.montgomery_r2 == r * r % p
    for bits in (32, 64):
        assert p * field.montgomery_inverse(bits) % (1 << bits) == (1 << bits) - 1


def test_the_registry_has_bn254():
    assert registry.get_curve("bn254") is CURVE
    assert registry.by_scalar_prime(R) is CURVE and registry.by_snarkjs_name("bn128") is CURVE
    assert registry.path_tag(CURVE) == "bn254-"


# ---- the scalar field ------------------------------------------------------------------

def test_fr_arithmetic_matches_python_ints():
    rnd = random.Random(1)
    a = [rnd.randrange(R) for _ in range(200)] + [0, 1, R - 1]
    b = [rnd.randrange(R) for _ in range(200)] + [R - 1, R - 1, R - 1]
    va, vb = fr.from_ints(a), fr.from_ints(b)
    assert fr.to_ints(va) == a
    assert fr.to_ints(fr.mul(va, vb)) == [x * y % R for x, y in zip(a, b)]
    assert fr.to_ints(fr.add(va, vb)) == [(x + y) % R for x, y in zip(a, b)]
    assert fr.to_ints(fr.sub(va, vb)) == [(x - y) % R for x, y in zip(a, b)]
    assert fr.to_ints(fr.pow_scalar_exp(va, 12345)) == [pow(x, 12345, R) for x in a]
    nz = fr.from_ints(a[:200])
    assert fr.to_ints(fr.batch_inverse(nz)) == [pow(x, -1, R) for x in a[:200]]
    assert fr.to_ints(fr.random(50, np.random.default_rng(0))) == [x % R for x in fr.to_ints(fr.random(
        50, np.random.default_rng(0)))]


def test_ntt_round_trips_and_evaluates():
    d = Radix2Domain(5, CURVE)
    rnd = random.Random(3)
    coeffs = [rnd.randrange(R) for _ in range(32)]
    evals = fr.to_ints(d.ntt(fr.from_ints(coeffs)))
    assert evals == [sum(c * pow(d.omega, i * j, R) for j, c in enumerate(coeffs)) % R for i in range(32)]
    assert fr.to_ints(d.intt(fr.from_ints(evals))) == coeffs


# ---- the groups ------------------------------------------------------------------------

@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_generators_are_eip197s_and_py_eccs(group):
    assert CURVE.point_class(group)().coordinates() == _ref(_reference(group, 1))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_scalar_multiplication_matches_py_ecc(group):
    rnd = random.Random(4)
    for k in [0, 1, 2, 3, R - 1, R, R + 1, 2**255 + 7] + [rnd.randrange(R) for _ in range(4)]:
        assert _ours(group, k).coordinates() == _ref(_reference(group, k)), k


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_the_group_law_matches_py_ecc(group):
    rnd = random.Random(5)
    ident = CURVE.point_class(group).identity()
    for _ in range(4):
        a, b = rnd.randrange(R), rnd.randrange(R)
        pa, pb = _ours(group, a), _ours(group, b)
        assert (pa + pb).coordinates() == _ref(ref.add(_reference(group, a), _reference(group, b)))
        assert (pa - pb).coordinates() == _ref(ref.add(_reference(group, a), ref.neg(_reference(group, b))))
        assert pa + pa == pa * Scalar(2) and pa + ident == pa == ident + pa
        assert (pa + -pa).is_identity() and -ident == ident
    assert (ident + ident).is_identity() and (ident * Scalar(5)).is_identity()


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_multiexp_matches_py_ecc(group):
    rnd = random.Random(6)
    for n in (1, 3, 17):
        ks = [rnd.randrange(R) for _ in range(n)]
        ss = [rnd.randrange(R) for _ in range(n - 1)] + [1]
        pts = [_ours(group, k) for k in ks]
        expected = ref.Z1 if group == "g1" else ref.Z2
        for k, s in zip(ks, ss):
            expected = ref.add(expected, ref.multiply(_reference(group, k), s))
        cls = CURVE.point_class(group)
        assert cls.multiexp_unchecked(pts, [Scalar(s) for s in ss]).coordinates() == _ref(expected)
        table = points.PointTable.from_points(CURVE, group, pts)
        values = fr.from_ints(ss)
        assert points.msm(table, values).coordinates() == _ref(expected)
        assert points.msm_split(table, values) == points.msm(table, values)


def test_multiexp_handles_zeros_ones_repeats_and_infinity():
    rnd = random.Random(7)
    g = G1()
    pts = [g * Scalar(rnd.randrange(R)) for _ in range(300)] + [G1.identity(), g, g, -g]
    ks = [rnd.choice([0, 1, R - 1, rnd.randrange(R)]) for _ in pts]
    expected = G1.identity()
    for p, k in zip(pts, ks):
        expected = expected + p * Scalar(k)
    assert G1.multiexp_unchecked(pts, [Scalar(k) for k in ks]) == expected
    assert G1.multiexp_unchecked([], []) == G1.identity()
    table = points.PointTable.from_points(CURVE, "g1", pts)
    assert points.msm(table, fr.from_ints(ks), 100, 250) == G1.multiexp_unchecked(pts[100:250],
                                                                                    [Scalar(k) for k in ks[100:250]])


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_multiples_match_scalar_multiplication(group):
    rnd = random.Random(8)
    ks = [0, 1, R - 1] + [rnd.randrange(R) for _ in range(40)]
    table = generator.fixed_base(CURVE, group, fr.from_ints(ks), workers=1)
    assert [p.coordinates() for p in table.points()] == [_ref(_reference(group, k)) for k in ks]


def _off_twist_point() -> bytes:
    """An xy-LE point on G2's curve (the twist) but outside its order-r subgroup: the twist's
    group has order r times a cofactor, so a point of a random x is almost surely outside."""
    from py_ecc.fields import optimized_bn128_FQ2 as FQ2
    rnd, one = random.Random(9), FQ2.one()
    while True:
        x = FQ2([rnd.randrange(Q), rnd.randrange(Q)])
        rhs = x ** 3 + ref.b2
        # a square root in Fq2 for q = 3 mod 4 (Adj and Rodriguez-Henriquez, algorithm 9)
        a1 = rhs ** ((Q - 3) // 4)
        alpha = a1 * a1 * rhs
        if alpha ** Q * alpha == -one:
            continue  # not a square
        y = FQ2([0, 1]) * a1 * rhs if alpha == -one else (one + alpha) ** ((Q - 1) // 2) * a1 * rhs
        assert y * y == rhs
        if not ref.is_inf(ref.multiply((x, y, one), R)):
            return b"".join(int(c).to_bytes(32, "little") for c in (*x.coeffs, *y.coeffs))


def test_decoding_checks_the_curve_and_the_subgroup():
    g1, g2 = G1().to_xy_bytes_le(), G2().to_xy_bytes_le()
    assert G1.from_xy_bytes_le(g1) == G1() and G2.from_xy_bytes_le(g2) == G2()
    assert G1.from_xy_bytes_le(bytes(64)).is_identity() and G2.from_xy_bytes_le(bytes(128)).is_identity()
    off = bytearray(g1)
    off[0] ^= 1
    for bad in (bytes(off), g1[:32] + Q.to_bytes(32, "little"), g1[:-1]):
        with pytest.raises(ValueError):
            G1.from_xy_bytes_le(bad)
        with pytest.raises(ValueError):
            G1.from_xy_bytes_unchecked_le(bad)
    outside = _off_twist_point()
    with pytest.raises(ValueError, match="outside the subgroup"):
        G2.from_xy_bytes_le(outside)
    assert G2.from_xy_bytes_unchecked_le(outside).to_xy_bytes_le() == outside  # on the curve: unchecked takes it
    assert CurveKernels.of(CURVE).check("g2", g2 + outside + g2) == 1
    with pytest.raises(ValueError, match="outside BN254's subgroup cannot be paired"):
        CURVE.pairing_check([G1()], [G2.from_xy_bytes_unchecked_le(outside)])
    table = points.PointTable(CURVE, "g1", np.frombuffer(g1 + bytes(off), dtype=np.uint8).reshape(2, 64).copy())
    with pytest.raises(ValueError, match="g1 point 1 is not on the curve"):
        table.check_on_curve()


# ---- encodings -------------------------------------------------------------------------

def test_compressed_bytes_are_arkworks():
    from zksnake._algebra import ec_bn254 as ark
    rnd = random.Random(10)
    for _ in range(6):
        k = rnd.randrange(R)
        for ours, theirs in ((_ours("g1", k), ark.g1() * k), (_ours("g2", k), ark.g2() * k)):
            for p, a in ((ours, theirs), (-ours, -theirs)):
                raw = p.to_compressed_bytes()
                assert raw == bytes(a.to_bytes())
                assert type(p).from_compressed_bytes(raw) == p
    assert G1.identity().to_compressed_bytes() == bytes(ark.PointG1.identity().to_bytes()) == bytes(31) + b"\x40"
    assert G2.from_compressed_bytes(G2.identity().to_compressed_bytes()).is_identity()
    with pytest.raises(ValueError, match="not a compressed BN254 G1 point"):
        G1.from_compressed_bytes(b"\x05" + bytes(30) + b"\x3f")  # x = 5 + a high limb: x^3 + 3 is no square here
    with pytest.raises(ValueError, match="is 64 bytes"):
        G2.from_compressed_bytes(bytes(32))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_snarkjs_json_round_trips(group):
    p = _ours(group, 987654321)
    obj = snarkjs_json.point_to_json(CURVE, p, group)
    c = p.coordinates()
    assert obj == ([str(c[0]), str(c[1]), "1"] if group == "g1" else [[str(c[0]), str(c[1])], [str(c[2]), str(c[3])],
                                                                      ["1", "0"]])
    assert snarkjs_json.point_from_json(CURVE, "p.json", "pi", group, obj) == p
    ident = CURVE.point_class(group).identity()
    assert snarkjs_json.point_from_json(CURVE, "p.json", "pi", group,
                                        snarkjs_json.point_to_json(CURVE, ident, group)) == ident


def test_ethereum_words_of_eip197s_generators():
    """EIP-197 writes G2's generator as x = 11559...634 i + 10857...781 and
    y = 40823...531 i + 84956...930, each word imaginary part first."""
    assert ethereum.g1_words(G1()) == (1, 2)
    assert ethereum.g2_words(G2()) == (
        (11559732032986387107991004021392285783925812861821192530917403151452391805634,
         10857046999023057135944570762232829481370756359578518086990519993285655852781),
        (4082367875863433681332203403145435568316851327593401208105741076214120093531,
         8495653923123431417604973247489272438418190587263600148770280649306958101930))
    assert ethereum.g1_to_bytes(G1()) == (1).to_bytes(32, "big") + (2).to_bytes(32, "big")
    assert ethereum.g2_to_bytes(G2())[:32] == (11559732032986387107991004021392285783925812861821192530917403151452391805634
                                               ).to_bytes(32, "big")
    for p in (G1(), _ours("g1", 77), G1.identity()):
        assert ethereum.g1_from_bytes(ethereum.g1_to_bytes(p)) == p
    for p in (G2(), _ours("g2", 77), G2.identity()):
        assert ethereum.g2_from_bytes(ethereum.g2_to_bytes(p)) == p
    assert ethereum.g1_to_bytes(G1.identity()) == bytes(64)
    with pytest.raises(ValueError, match="128 bytes"):
        ethereum.g2_from_bytes(bytes(64))
    with pytest.raises(ValueError):
        ethereum.g1_from_bytes((1).to_bytes(32, "big") + (3).to_bytes(32, "big"))


# ---- the pairing -----------------------------------------------------------------------

def _tower_to_py_ecc(coeffs: list[int]):
    """Our Fq12 (tower order: c_i of Fq6 over w, c_j of Fq2 over v = w^2, c_t over u) as
    py-ecc's FQ12 (a polynomial in w with w^6 = 9 + u, so u = w^6 - 9)."""
    w, one = ref.FQ12([0, 1] + [0] * 10), ref.FQ12.one()
    u = w ** 6 - one * 9
    total = ref.FQ12.zero()
    for k, c in enumerate(coeffs):
        i, j, t = k // 6, (k // 2) % 3, k % 2
        total = total + w ** (i + 2 * j) * (u if t else one) * c
    return total


def test_the_pairing_is_py_eccs_to_the_final_exponents_power():
    """arkworks (and snarkjs: tests/circom/test_bn254_snarkjs.py compares vk_alphabeta_12)
    end the Miller loop with the final exponentiation of Fuentes-Castaneda et al., which
    raises the textbook exponent (q^12 - 1)/r, py-ecc's, to the power 2x(6x^2 + 3x + 1) for
    BN254's parameter x: the same pairing up to that fixed power, coprime to r."""
    x = 4965661367192848881
    m = 2 * x * (6 * x * x + 3 * x + 1)
    assert m % R and 6 * x + 2 == optimized_pairing.ate_loop_count
    p, q = _ours("g1", 11), _ours("g2", 13)
    assert _tower_to_py_ecc(CURVE.pairing(p, q)) == ref.pairing(_reference("g2", 13), _reference("g1", 11)) ** m


def test_the_pairing_is_bilinear_and_checks():
    a, b = 1234567, 7654321
    g1, g2 = G1(), G2()
    e = CURVE.pairing(g1 * Scalar(a), g2 * Scalar(b))
    assert e == CURVE.pairing(g1 * Scalar(a * b), g2) == CURVE.pairing(g1, g2 * Scalar(a * b))
    assert e != CURVE.pairing(g1, g2)
    assert CURVE.pairing_check([g1 * Scalar(a), -(g1 * Scalar(a * b))], [g2 * Scalar(b), g2])
    assert not CURVE.pairing_check([g1 * Scalar(a), -(g1 * Scalar(a * b + 1))], [g2 * Scalar(b), g2])
    assert CURVE.pairing_check([G1.identity()], [g2]) and CURVE.pairing_check([], [])
    with pytest.raises(TypeError, match="G2Points"):
        CURVE.pairing_check([g1], [g1])


# ---- Groth16 on the CPU backend --------------------------------------------------------

@pytest.fixture(scope="module")
def key(tmp_path_factory):
    d = tmp_path_factory.mktemp("bn254key")
    circuit = get_circuit("mimc", 8, "bn254")
    generator.setup(circuit, 5).save(d)
    return ProvingKey.load(d), circuit


@pytest.mark.parametrize("threads", [1, 2])
def test_groth16_proves_and_verifies(key, threads):
    pk, circuit = key
    assert pk.curve is CURVE and circuit.curve is CURVE
    backend = get_backend("cpu")
    backend.threads = threads
    for part in range(2):
        inst = circuit.instance(1, part)
        proof = prover.prove(pk, circuit.constraint_system, inst.witness, backend, np.random.default_rng(part))
        raw = proof.to_bytes()
        assert len(raw) == 128
        assert verifier.verify(pk.vk, inst.public_inputs, Proof.from_bytes(CURVE, raw))


def test_a_tampered_proof_fails(key):
    pk, circuit = key
    inst = circuit.instance(1, 0)
    proof = prover.prove(pk, circuit.constraint_system, inst.witness, get_backend("cpu"), np.random.default_rng(3))
    x, y = inst.public_inputs
    assert not verifier.verify(pk.vk, [x, (y + 1) % R], proof)
    g1 = G1()
    assert not verifier.verify(pk.vk, inst.public_inputs, Proof(CURVE, proof.a + g1, proof.b, proof.c))
    assert not verifier.verify(pk.vk, inst.public_inputs, Proof(CURVE, proof.c, proof.b, proof.a))
    raw = bytearray(proof.to_bytes())
    raw[70] ^= 4  # within B's x
    try:
        bad = Proof.from_bytes(CURVE, bytes(raw))
    except ValueError:
        return  # not a point of G2 at all
    assert not verifier.verify(pk.vk, inst.public_inputs, bad)


def test_a_bundle_over_bn254_verifies(key, tmp_path):
    pk, circuit = key
    rows = []
    for part in range(2):
        inst = circuit.instance(2, part)
        bundle.write_proof(tmp_path, part, prover.prove(pk, circuit.constraint_system, inst.witness,
                                                        get_backend("cpu")))
        rows.append((part, inst.public_inputs))
    bundle.write_manifest(tmp_path, "mimc", 8, pk.vk, rows)
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True, True]
