"""The test-only zkey writer (proofflow.prover.circom.setup): its points against Python-int
evaluations of the QAP and arkworks scalar multiplications, its layout against snarkjs's,
and (slow, with node) snarkjs itself proving, verifying and exporting with it."""
from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

import circom_files
from proofflow.prover import circom
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.circom import binfile, setup
from proofflow.prover.circom import zkey as zkey_format
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import generator

fr = Fr.of(CURVE)

P = fr.MODULUS
SEED = 11
# Wires: 0 one, 1 out (public output), 2 x (public input), 3 y, 4 z, 5 t (private).
# out = x*y, z = out + 3, 2x*5y = 10z - 30, t = z*z. y has no A entry, t neither A nor B.
CONSTRAINTS = [({2: 1}, {3: 1}, {1: 1}), ({0: 3, 1: 1}, {0: 1}, {4: 1}), ({2: 2}, {3: 5}, {4: 10, 0: -30}),
               ({4: 1}, {4: 1}, {5: 1})]
N_WIRES, N_PUBLIC = 6, 2


def _witness(x: int, y: int) -> list[int]:
    out = x * y % P
    z = (out + 3) % P
    return [1, out, x, y, z, z * z % P]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.r1cs"
    path.write_bytes(circom_files.r1cs(CONSTRAINTS, N_WIRES, 1, 1, 3))
    r1cs = circom.read_r1cs(path)
    vk = setup.write_test_zkey(r1cs, SEED, tmp_path / "tiny.zkey")
    return r1cs, vk, tmp_path / "tiny.zkey"


def _lagrange(tau: int, n: int) -> list[int]:
    """L_j(τ) at snarkjs's points x_j = ω^j (ω from the generator 5), as products."""
    w = pow(5, (P - 1) // n, P)
    xs = [pow(w, j, P) for j in range(n)]
    out = []
    for j, xj in enumerate(xs):
        num = den = 1
        for k, xk in enumerate(xs):
            if k != j:
                num, den = num * (tau - xk) % P, den * (xj - xk) % P
        out.append(num * pow(den, -1, P) % P)
    return out


def _extended_matrices() -> list[list[list[int]]]:
    """Dense A, B, C with snarkjs's extra A row (value 1) per public signal and the one."""
    rows = len(CONSTRAINTS) + N_PUBLIC + 1
    dense = [[[0] * N_WIRES for _ in range(rows)] for _ in range(3)]
    for row, constraint in enumerate(CONSTRAINTS):
        for m in range(3):
            for wire, c in constraint[m].items():
                dense[m][row][wire] = c % P
    for s in range(N_PUBLIC + 1):
        dense[0][len(CONSTRAINTS) + s][s] = 1
    return dense


def _times_generator(group: str, scalars: list[int]) -> list:
    g = CURVE.point_class(group)()
    return [g * CURVE.scalar(s) for s in scalars]


def test_query_points_are_the_qap_at_tau(tiny):
    _, vk, path = tiny
    tw = generator.toxic_waste(SEED, CURVE)
    tau, alpha, beta, gamma, delta = (tw[k] for k in ("tau", "alpha", "beta", "gamma", "delta"))
    n = 8  # 4 constraints + 2 public signals: the smallest power of two above 6
    lag = _lagrange(tau, n)
    u, v, w = ([sum(m[j][s] * lag[j] for j in range(len(m))) % P for s in range(N_WIRES)]
               for m in _extended_matrices())
    assert u[3] == 0 and u[5] == v[5] == 0  # the points at infinity below
    mixed = [(beta * u[s] + alpha * v[s] + w[s]) % P for s in range(N_WIRES)]
    k = N_PUBLIC + 1
    key = circom.read_zkey(path)
    assert (key.n_vars, key.n_public, key.domain_size) == (N_WIRES, N_PUBLIC, n)
    assert key.pk.a_query.points() == _times_generator("g1", u)
    assert key.pk.b_g1_query.points() == _times_generator("g1", v)
    assert key.pk.b_g2_query.points() == _times_generator("g2", v)
    assert key.vk.gamma_abc_g1 == _times_generator("g1", [x * pow(gamma, -1, P) % P for x in mixed[:k]])
    assert key.pk.l_query.points() == _times_generator("g1", [x * pow(delta, -1, P) % P for x in mixed[k:]])
    assert not key.pk.a_query.xy[3].any() and not key.pk.b_g2_query.xy[5].any()  # infinity: all zeros
    g1, g2 = (_times_generator(g, [alpha, beta, gamma, delta]) for g in ("g1", "g2"))
    assert (key.vk.alpha_g1, key.pk.beta_g1, key.pk.delta_g1) == (g1[0], g1[1], g1[3])
    assert (key.vk.beta_g2, key.vk.gamma_g2, key.vk.delta_g2) == (g2[1], g2[2], g2[3])
    assert key.vk == vk


def test_h_points_are_the_odd_points_lagrange_basis_over_delta(tiny):
    _, _, path = tiny
    tw = generator.toxic_waste(SEED, CURVE)
    basis = _lagrange(tw["tau"], 16)  # the 2n domain; its odd points are snarkjs's H basis
    expected = [basis[2 * i + 1] * pow(tw["delta"], -1, P) % P for i in range(8)]
    assert circom.read_zkey(path).pk.h_query.points() == _times_generator("g1", expected)


def test_coefficients_are_snarkjs_s_entries_and_order(tiny):
    """Per constraint its A entries, then its B entries, then the extra A rows; c·R² values."""
    r1cs, _, path = tiny
    expected = []
    for row, (a, b, _) in enumerate(CONSTRAINTS):
        for m, lc in ((0, a), (1, b)):
            expected += [(m, row, wire, c % P) for wire, c in sorted(lc.items())]
    expected += [(0, len(CONSTRAINTS) + s, s, 1) for s in range(N_PUBLIC + 1)]
    raw = binfile.read(path, "zkey", 1).section(zkey_format.COEFFICIENTS, "coefficients")
    count = struct.unpack_from("<I", raw)[0]
    r2_inv = pow(1 << 512, -1, P)
    found = []
    for i in range(count):
        m, row, wire = struct.unpack_from("<III", raw, 4 + 44 * i)
        value = int.from_bytes(raw[4 + 44 * i + 12:4 + 44 * (i + 1)], "little")
        found.append((m, row, wire, value * r2_inv % P))
    assert found == expected
    circom.read_zkey(path).check_matches(r1cs)


def test_section_10_names_the_key_test_only(tiny):
    """snarkjs's layout: the 64-byte hash, a u32 count, then per contribution δ·G1, the
    proof of knowledge (G1, G1, G2), a 64-byte transcript, u32 type, u32 parameter bytes,
    parameters (type 1: a name, its length in one byte)."""
    _, _, path = tiny
    data = path.read_bytes()
    assert setup.TEST_ONLY_LABEL.encode() in data
    assert len(setup.TEST_ONLY_LABEL) <= 64  # what snarkjs keeps when it rewrites the section
    f = binfile.read(path, "zkey", 1)
    assert sorted(f.sections) == list(range(1, 11))
    body = bytes(f.section(10, "contributions"))
    hashed = hashlib.blake2b(b"".join(bytes(f.section(sid, "")) for sid in range(1, 10)), digest_size=64).digest()
    assert body[:64] == hashed
    assert struct.unpack_from("<I", body, 64)[0] == 1
    header = bytes(f.section(zkey_format.HEADER, "header"))
    delta1 = 100 + 96 + 96 + 192 + 192  # past the primes, sizes and alpha1, beta1, beta2, gamma2
    pos = 68
    assert body[pos:pos + 96] == header[delta1:delta1 + 96]
    pos += 96 + 96 + 96 + 192 + 64
    kind, size = struct.unpack_from("<II", body, pos)
    name = setup.TEST_ONLY_LABEL.encode()
    assert (kind, size) == (0, 2 + len(name))
    assert body[pos + 8:] == bytes([1, len(name)]) + name


def test_same_seed_same_bytes_other_seed_other_key(tiny, tmp_path):
    r1cs, vk, path = tiny
    again = setup.write_test_zkey(r1cs, SEED, tmp_path / "again.zkey")
    other = setup.write_test_zkey(r1cs, SEED + 1, tmp_path / "other.zkey")
    assert (tmp_path / "again.zkey").read_bytes() == path.read_bytes() and again == vk
    assert (tmp_path / "other.zkey").read_bytes() != path.read_bytes() and other != vk
    assert not list(tmp_path.glob(".*.tmp"))  # written through files' atomic rename


def test_verifying_key_json_reads_back(tiny, tmp_path):
    _, vk, _ = tiny
    circom.write_verification_key(tmp_path / "vk.json", vk)
    assert circom.read_verification_key(tmp_path / "vk.json") == vk


def test_proofflow_proves_with_it(tiny):
    r1cs, vk, path = tiny
    key = circom.read_zkey(path)
    witness = fr.from_ints(_witness(6, 7))
    proof = circom.prove(key, witness, r1cs=r1cs, rng=np.random.default_rng(3))
    assert circom.verify(vk, circom.public_signals(key, witness), proof)
    assert circom.public_signals(key, witness) == [42, 6]
    assert not circom.verify(vk, [43, 6], proof)


class _RecordingBackend(CpuBackend):
    """The CPU backend with a fixed_base of its own (arkworks, so the bytes must match),
    recording what it is asked for."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def fixed_base(self, curve, group, scalars, progress=None):
        self.calls.append((group, len(scalars)))
        return generator.fixed_base(curve, group, scalars, progress)


def test_a_backend_s_fixed_base_makes_the_tables(tiny, tmp_path):
    r1cs, vk, path = tiny
    backend = _RecordingBackend()
    assert setup.write_test_zkey(r1cs, SEED, tmp_path / "backend.zkey", backend=backend) == vk
    assert (tmp_path / "backend.zkey").read_bytes() == path.read_bytes()
    # IC, A (y and t have no entry), B1 and B2 (only the one, y and z have), C, H: zeros
    # are not multiplied
    assert backend.calls == [("g1", 3), ("g1", 4), ("g1", 3), ("g2", 3), ("g1", 3), ("g1", 8)]


# ---- with node: snarkjs reads, proves, verifies and contributes with the written keys ----

INPUTS = {"gadgets": {"secret": 123456789, "salt": 42, "bound": 10**9}, "chain": {"x": 3, "c": 5}}


@pytest.fixture(scope="module")
def written(compiled, tmp_path_factory):
    """Per circuit: a test-only zkey (no ceremony), its verifying key (also as snarkjs's JSON,
    written by proofflow) and a witness."""
    out = {}
    for name, inputs in INPUTS.items():
        c = compiled[name]
        d = tmp_path_factory.mktemp(f"test-zkey-{name}")
        r1cs = circom.read_r1cs(c.r1cs)
        vk = setup.write_test_zkey(r1cs, SEED, d / "test.zkey")
        circom.write_verification_key(d / "test_vk.json", vk)
        wtns = c.witness(inputs, label="zkey-writer")
        out[name] = {"circuit": c, "dir": d, "zkey": d / "test.zkey", "vk": vk, "vk_json": d / "test_vk.json",
                     "r1cs": r1cs, "wtns": wtns}
    return out


def _snarkjs_verifies(c, vk_json, public, proof) -> bool:
    proc = c.toolchain.snarkjs("groth16", "verify", vk_json, public, proof, check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode == 0 and "OK!" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", INPUTS)
def test_snarkjs_exports_proves_and_verifies_with_it(written, name):
    w = written[name]
    c, d = w["circuit"], w["dir"]
    c.toolchain.snarkjs("zkey", "export", "verificationkey", w["zkey"], d / "vk.json")
    assert circom.read_verification_key(d / "vk.json") == w["vk"]
    assert json.loads(w["vk_json"].read_text()) == json.loads((d / "vk.json").read_text())
    c.toolchain.snarkjs("groth16", "prove", w["zkey"], w["wtns"], d / "proof.json", d / "public.json")
    assert _snarkjs_verifies(c, d / "vk.json", d / "public.json", d / "proof.json")
    assert circom.verify_files(d / "vk.json", d / "public.json", d / "proof.json")


@pytest.mark.slow
@pytest.mark.parametrize("name", INPUTS)
def test_proofflow_proof_with_it_verifies_in_snarkjs(written, name):
    w = written[name]
    c, d = w["circuit"], w["dir"]
    key = circom.read_zkey(w["zkey"])
    key.check_matches(w["r1cs"])
    witness = circom.read_wtns(w["wtns"], CURVE)
    proof = circom.prove(key, witness, r1cs=w["r1cs"], rng=np.random.default_rng(2))
    circom.write_proof(d / "ours.json", proof)
    circom.write_public(d / "ours_public.json", circom.public_signals(key, witness))
    assert _snarkjs_verifies(c, w["vk_json"], d / "ours_public.json", d / "ours.json")


@pytest.mark.slow
def test_label_survives_a_snarkjs_contribution(written):
    """snarkjs rewrites section 10 when it contributes: the label stays whole, and the
    contributed key still proves (with the seed's τ, α and β it is still test-only)."""
    w = written["chain"]
    c, d = w["circuit"], w["dir"]
    c.toolchain.snarkjs("zkey", "contribute", w["zkey"], d / "more.zkey", "--name=more", "-e=entropy")
    data = (d / "more.zkey").read_bytes()
    assert setup.TEST_ONLY_LABEL.encode() in data and b"more" in data
    c.toolchain.snarkjs("zkey", "export", "verificationkey", d / "more.zkey", d / "vk_more.json")
    c.toolchain.snarkjs("groth16", "prove", d / "more.zkey", w["wtns"], d / "proof_more.json", d / "public_more.json")
    assert _snarkjs_verifies(c, d / "vk_more.json", d / "public_more.json", d / "proof_more.json")
    more = circom.read_verification_key(d / "vk_more.json")  # a contribution changes δ only
    assert more.gamma_abc_g1 == w["vk"].gamma_abc_g1 and more.delta_g2 != w["vk"].delta_g2
