"""The curve descriptors: BLS12-381's constants against the values the engine hard-coded
before them and against arkworks, their consistency, the registry's lookups, and keys and
bundles that record their curve (or, written before curves were recorded, none)."""
import dataclasses
import json

import pytest

from proofflow import spec
from proofflow.prover import bundle, keys, native
from proofflow.prover.backend.by_name import get_backend
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.curves.descriptor import PrimeField
from proofflow.prover.errors import InputError
from proofflow.prover.groth16 import generator, prover, verifier
from proofflow.prover.groth16.data_structures import KeyFormatError, ProvingKey, VerifyingKey

R, Q = CURVE.fr.modulus, CURVE.fq.modulus


def test_the_registry_names_what_spec_offers():
    assert tuple(spec.CURVES) == registry.NAMES and spec.DEFAULT_CURVE == registry.DEFAULT
    assert spec.DEFAULTS["curve"] is None  # none asked for: the registered circuit's, else the default
    assert spec.RunConfig("mimc", 8, 1, "cpu", spec.MemoryKind.PAGEABLE).curve == registry.DEFAULT


def test_a_run_names_a_registered_curve():
    config = spec.validate_params({"log2": 8, "partitions": 1, "backend": "cpu"}, gpu_available=lambda: False)
    assert config.curve == registry.DEFAULT and spec.RunConfig.from_dict(config.to_dict()) == config
    with pytest.raises(spec.InvalidParams, match="curve must be one of bls12_381, bn254, got 'secp256k1'"):
        spec.validate_params({"curve": "secp256k1"}, gpu_available=lambda: False)
    for bad in ("secp256k1", 7):
        with pytest.raises(spec.InvalidParams, match="curve"):
            spec.RunConfig.from_dict({**config.to_dict(), "curve": bad})


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """Writes a registered circuit's record (circuit.json, what validate_params reads) over a curve."""
    monkeypatch.setenv("PROOFFLOW_CIRCUITS", str(tmp_path / "circuits"))

    def register(name, curve):
        d = tmp_path / "circuits" / name
        d.mkdir(parents=True)
        info = {"name": name, "log2": 9, "wasm": True, **({"curve": curve} if curve else {})}
        (d / "circuit.json").write_text(json.dumps(info))
    return register


def test_a_run_takes_its_registered_circuits_curve(registered, tmp_path):
    """No curve asked for: a registered circuit's own (circuit.json's; none recorded: the default),
    a built-in family's the default; a curve that contradicts the circuit's is refused, naming both."""
    registered("poseidon", "bn254")
    registered("old", None)  # registered before circuit.json recorded the curve: BLS12-381's files
    validate = lambda **p: spec.validate_params(p, gpu_available=lambda: False, input_roots=[tmp_path])
    one = [{"x": 1}]
    assert validate(circuit="poseidon", inputs=one).curve == "bn254"
    assert validate(circuit="poseidon", inputs=one, curve=None).curve == "bn254"
    assert validate(circuit="poseidon", inputs=one, curve="bn254").curve == "bn254"
    assert validate(circuit="old", inputs=one).curve == "bls12_381"
    assert validate(circuit="mimc", log2=8).curve == "bls12_381"
    assert validate(circuit="bits", log2=8, curve="bn254").curve == "bn254"
    with pytest.raises(spec.InvalidParams) as refused:
        validate(circuit="poseidon", inputs=one, curve="bls12_381")
    assert str(refused.value) == ("invalid proof_run parameters: curve bls12_381 contradicts circuit 'poseidon', "
                                  "which is over bn254 (its files' curve): leave the curve out to take the circuit's")
    with pytest.raises(spec.InvalidParams, match="curve bn254 contradicts circuit 'old', which is over bls12_381"):
        validate(circuit="old", inputs=one, curve="bn254")
    with pytest.raises(spec.InvalidParams) as refused:  # an unknown curve is named once, not as a contradiction
        validate(circuit="poseidon", inputs=one, curve="secp256k1")
    assert "got 'secp256k1'" in str(refused.value) and "contradicts" not in str(refused.value)


def test_a_prove_job_names_its_curve():
    from proofflow.prover.service.protocol import ProveJob
    job = ProveJob("/k", "mimc", 8, "bls12_381", "seg", 256, spec.MemoryKind.PINNED)
    assert ProveJob.from_wire(job.to_wire()) == job
    for bad in ({"curve": "secp256k1"}, {"curve": None}):
        with pytest.raises(InputError, match="curve"):
            ProveJob.from_wire({**job.to_wire(), **bad})


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


def test_the_c_kernels_get_the_constants_fr_c_and_fq_montgomery_c_held():
    assert native.field_defines("FR", CURVE.fr) == (
        "-DFR_LIMBS=4",
        "-DFR_MODULUS=0xffffffff00000001ULL,0x53bda402fffe5bfeULL,0x3339d80809a1d805ULL,0x73eda753299d7d48ULL",
        "-DFR_ONE=0x00000001fffffffeULL,0x5884b7fa00034802ULL,0x998c4fefecbc4ff5ULL,0x1824b159acc5056fULL",
        "-DFR_R2=0xc999e990f3f29c6dULL,0x2b6cedcb87925c23ULL,0x05d314967254398fULL,0x0748d9d99f59ff11ULL",
        "-DFR_INV=0xfffffffeffffffffULL")
    fq = native.field_defines("FQ", CURVE.fq)
    assert fq[1] == ("-DFQ_MODULUS=0xb9feffffffffaaabULL,0x1eabfffeb153ffffULL,0x6730d2a0f6b0f624ULL,"
                     "0x64774b84f38512bfULL,0x4b1ba7b6434bacd7ULL,0x1a0111ea397fe69aULL")
    assert fq[0] == "-DFQ_LIMBS=6" and fq[4] == "-DFQ_INV=0x89f3fffcfffcfffdULL"


def test_the_registry_looks_curves_up():
    assert registry.get_curve("bls12_381") is CURVE and registry.DEFAULT == "bls12_381"
    assert registry.by_scalar_prime(R) is CURVE and registry.by_scalar_prime(Q) is None
    assert registry.by_snarkjs_name("bls12381") is CURVE and registry.by_snarkjs_name("bls12377") is None
    with pytest.raises(registry.UnknownCurve, match="unknown curve 'secp256k1': the registered curves are "
                                                    "bls12_381, bn254"):
        registry.get_curve("secp256k1")
    with pytest.raises(ValueError, match="unknown curve"):
        get_circuit("mimc", 8, "secp256k1")


# ---- keys and bundles record their curve -------------------------------------------------

@pytest.fixture(scope="module")
def key8(tmp_path_factory):
    d = tmp_path_factory.mktemp("key8")
    circuit = get_circuit("mimc", 8)
    generator.setup(circuit, 3).save(d)
    return d, circuit


@pytest.fixture(scope="module")
def proved(key8):
    d, circuit = key8
    pk, inst = ProvingKey.load(d), circuit.instance(0, 0)
    return pk, inst, prover.prove(pk, circuit.constraint_system, inst.witness, get_backend("cpu"))


def _edit(path, change):
    d = json.loads(path.read_text())
    change(d)
    path.write_text(json.dumps(d))


def _copy(key_dir, tmp_path):
    import shutil
    return shutil.copytree(key_dir, tmp_path / "key")


def test_keys_record_their_curve(key8):
    d, _ = key8
    params, vk = (json.loads((d / name).read_text()) for name in ("params.json", "vk.json"))
    assert params["curve"] == vk["curve"] == "bls12_381"
    assert vk["format"] == "proofflow-groth16-bls12-381/1"
    assert params["format"] == "proofflow-groth16-bls12-381/2"  # its version 2: each table's encoding
    assert ProvingKey.load(d).curve is CURVE


def test_a_key_of_before_curves_were_recorded_is_bls12_381(key8, tmp_path):
    d = _copy(key8[0], tmp_path)
    for name in ("params.json", "vk.json"):
        _edit(d / name, lambda j: j.pop("curve"))
    assert ProvingKey.load(d).curve is CURVE


def test_a_key_of_an_unknown_curve_is_refused_by_name(key8, tmp_path):
    d = _copy(key8[0], tmp_path)
    _edit(d / "params.json", lambda j: j.update(curve="secp256k1", format="proofflow-groth16-secp256k1/1"))
    with pytest.raises(KeyFormatError, match="params.json is a proving key over a curve this proofflow does not "
                                             "know .*unknown curve 'secp256k1'"):
        ProvingKey.load(d)
    _edit(d / "vk.json", lambda j: j.update(curve="secp256k1"))
    with pytest.raises(KeyFormatError, match="verifying key over a curve this proofflow does not know"):
        VerifyingKey.load(d / "vk.json")
    _edit(d / "vk.json", lambda j: j.update(curve="bls12_381", format="proofflow-groth16-bn254/1"))
    with pytest.raises(KeyFormatError, match="not a proofflow-groth16-bls12-381/1 verifying key"):
        VerifyingKey.load(d / "vk.json")


@pytest.fixture
def twin_curve(monkeypatch):
    """A second registered curve: BLS12-381's constants under another name, so the paths
    that tell curves apart run without a second point library."""
    twin = dataclasses.replace(CURVE, name="bls12_381_twin", label="BLS12-381-twin")
    monkeypatch.setitem(registry.CURVES, twin.name, twin)
    return twin


def test_a_run_of_another_curve_refuses_the_key(key8, twin_curve):
    d, circuit = key8
    with pytest.raises(InputError, match="over bls12_381, the run asks for bls12_381_twin"):
        keys.ensure_key(d, "mimc", 8, 3, backend="cpu", curve=twin_curve.name)
    with pytest.raises(InputError, match="over bls12_381, the run asks for bls12_381_twin"):
        keys.KeyCache().get(d, "mimc", 8, curve=twin_curve.name)
    assert keys.KeyCache().get(d, "mimc", 8, curve="bls12_381").pk.curve is CURVE


def test_each_curve_keeps_its_keys_and_caches_apart(twin_curve):
    from proofflow.prover import layout
    assert layout.params_dir("mimc", 10, 0).name == "mimc-log2_10-seed0"  # the default curve's: as before
    assert layout.params_dir("mimc", 10, 0, twin_curve.name).name == "bls12_381_twin-mimc-log2_10-seed0"
    ours, twins = get_circuit("mimc", 8), get_circuit("mimc", 8, twin_curve.name)
    assert twins.curve is twin_curve and ours.constraint_system_dir != twins.constraint_system_dir
    assert twins.constraint_system_dir.name == "bls12_381_twin-" + ours.constraint_system_dir.name


def test_a_proof_of_another_curve_is_refused(proved, twin_curve):
    pk, inst, proof = proved
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
    with pytest.raises(ValueError, match="BLS12-381-twin proof cannot verify under a BLS12-381 key"):
        verifier.verify(pk.vk, inst.public_inputs, dataclasses.replace(proof, curve=twin_curve))


def test_bundles_record_their_curve(proved, tmp_path):
    pk, inst, proof = proved
    bundle.write_proof(tmp_path, 0, proof)
    bundle.write_manifest(tmp_path, "mimc", 8, pk.vk, [(0, inst.public_inputs)])
    manifest = tmp_path / bundle.MANIFEST
    assert json.loads(manifest.read_text())["curve"] == "bls12_381"
    _edit(manifest, lambda j: j.pop("curve"))  # a bundle of before curves were recorded
    assert [r.ok for r in bundle.verify_bundle(tmp_path)] == [True]
    _edit(manifest, lambda j: j.update(curve="secp256k1"))
    with pytest.raises(bundle.BundleError, match="over a curve this proofflow does not know"):
        bundle.verify_bundle(tmp_path)
