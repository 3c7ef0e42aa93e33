"""The GPU backend against the CPU, bit for bit, for every registered curve (each curve's
kernels, compiled from its descriptor; its CPU backend and point library the reference), and
a proof of each curve verified. Skipped where no CuPy or no GPU."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from proofflow.prover.device import available as gpu_available
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.curves import registry
from proofflow.prover.field.fr import Fr
from proofflow.prover.polynomial.domain import Radix2Domain
from gpu_options import options

cp = pytest.importorskip("cupy")
if not gpu_available():
    pytest.skip("no GPU visible", allow_module_level=True)

from proofflow.prover.device.backend import GpuBackend, d2h, h2d  # noqa: E402  (needs CuPy)

pytestmark = pytest.mark.gpu
CPU = CpuBackend()
SIZES = [0, 1, 2, 3, 8, 10, 11, 12, 13, 14, 16]  # 11+: multi-pass; 0..3: degenerate plans


@pytest.fixture(scope="module", params=["mul32", "mul64", "wide"])
def gpu(request):
    return GpuBackend(options(), request.param)


@pytest.fixture(params=list(registry.CURVES.values()), ids=registry.NAMES)
def curve(request):
    return request.param


def edge_vector(fr, n: int, rng) -> np.ndarray:
    """0, 1 and p-1 (the extremes of the reduced range) interleaved with random values."""
    v = fr.random(n, rng)
    special = fr.from_ints([0, 1, fr.MODULUS - 1, fr.MODULUS - 2, 2])
    v[: min(n, 5)] = special[: min(n, 5)]
    if n >= 16:
        v[n // 2: n // 2 + 4] = fr.from_ints([fr.MODULUS - 1] * 4)
    return v


def test_elementwise_matches_cpu(gpu, curve):
    rng = np.random.default_rng(1)
    fr = Fr.of(curve)
    vals = [0, 1, 2, fr.MODULUS - 1, fr.MODULUS - 2, (fr.MODULUS - 1) // 2]
    a = np.concatenate([fr.from_ints([x for x in vals for _ in vals]), fr.random(4096, rng)])
    b = np.concatenate([fr.from_ints([y for _ in vals for y in vals]), fr.random(4096, rng)])
    assert np.array_equal(gpu.mul_device(curve, a, b).get(), fr.mul(a, b))
    assert np.array_equal(gpu.add_device(curve, a, b).get(), fr.add(a, b))
    assert np.array_equal(gpu.sub_device(curve, a, b).get(), fr.sub(a, b))
    assert np.array_equal(gpu.mul_device(curve, a, b[:1]).get(), fr.mul(a, b[:1]))


@pytest.mark.parametrize("log_n", SIZES)
@pytest.mark.parametrize("inverse", [False, True])
def test_ntt_matches_cpu(gpu, curve, log_n, inverse):
    rng = np.random.default_rng(100 + log_n)
    d, fr = Radix2Domain(log_n, curve), Fr.of(curve)
    for x in (fr.random(d.size, rng), edge_vector(fr, d.size, rng)):
        before = x.copy()
        assert np.array_equal(gpu.ntt(d, x, inverse), CPU.ntt(d, x, inverse))
        assert np.array_equal(gpu.coset_ntt(d, x, inverse), CPU.coset_ntt(d, x, inverse))
        assert np.array_equal(x, before)


@pytest.mark.parametrize("value", [0, 1, -1], ids=["0", "1", "p-1"])
def test_ntt_of_constant_vectors(gpu, curve, value):
    d = Radix2Domain(12, curve)
    x = Fr.of(curve).from_ints([value] * d.size)
    for inverse in (False, True):
        assert np.array_equal(gpu.ntt(d, x, inverse), CPU.ntt(d, x, inverse))
        assert np.array_equal(gpu.coset_ntt(d, x, inverse), CPU.coset_ntt(d, x, inverse))


@pytest.mark.parametrize("log_n", [1, 2, 8, 10, 11, 12, 14, 16])
def test_compute_h_matches_cpu(gpu, curve, log_n):
    rng = np.random.default_rng(200 + log_n)
    d, fr = Radix2Domain(log_n, curve), Fr.of(curve)
    a, b = edge_vector(fr, d.size, rng), fr.random(d.size, rng)
    c = fr.mul(a, b)  # a satisfied system: A*B - C vanishes on the domain
    copies = [v.copy() for v in (a, b, c)]
    h = gpu.compute_h(d, a, b, c)
    assert np.array_equal(h, CPU.compute_h(d, a, b, c))
    assert not h[-1].any()  # deg H <= n - 2
    assert all(np.array_equal(v, w) for v, w in zip((a, b, c), copies))
    # unsatisfied rows make the quotient inexact, but both backends still agree on it
    c[::3] = fr.random(len(c[::3]), rng)
    assert np.array_equal(gpu.compute_h(d, a, b, c), CPU.compute_h(d, a, b, c))


@pytest.mark.parametrize("log_n", [1, 2, 8, 11, 13])
def test_compute_h_odd_coset_matches_cpu(gpu, curve, log_n):
    """snarkjs's H basis (circom keys): relabelling, shift to the odd coset, products."""
    rng = np.random.default_rng(300 + log_n)
    d, fr = Radix2Domain(log_n, curve), Fr.of(curve)
    a, b, c = edge_vector(fr, d.size, rng), fr.random(d.size, rng), fr.random(d.size, rng)
    copies = [v.copy() for v in (a, b, c)]
    h = gpu.compute_h_odd_coset(d, a, b, c)
    assert np.array_equal(h, CPU.compute_h_odd_coset(d, a, b, c))
    assert all(np.array_equal(v, w) for v, w in zip((a, b, c), copies))
    resident = gpu.compute_h_resident(d, cp.asarray(a), cp.asarray(b), cp.asarray(c), "odd-coset")
    assert isinstance(resident, cp.ndarray) and np.array_equal(resident.get(), h)


def test_device_variants_stay_on_device(gpu, curve):
    rng = np.random.default_rng(3)
    d = Radix2Domain(10, curve)
    x = cp.asarray(Fr.of(curve).random(d.size, rng))
    y = gpu.ntt_device(d, x)
    assert isinstance(y, cp.ndarray)
    assert np.array_equal(gpu.ntt_device(d, y, inverse=True).get(), x.get())
    assert np.array_equal(gpu.coset_ntt_device(d, gpu.coset_ntt_device(d, x), inverse=True).get(), x.get())


def test_rejects_wrong_shape(gpu, curve):
    with pytest.raises(ValueError, match="shape"):
        gpu.ntt(Radix2Domain(4, curve), Fr.of(curve).zeros(8))


def test_transfers_report_kind_and_rate():
    from proofflow.prover.staging.pool import StagingPool
    pool = StagingPool(8 << 20, pinned=True)
    with pool.acquire(4 << 20) as buf:
        host = buf.fr_vector((4 << 20) // 32)
        host[:] = 5
        dev, t = h2d(host)
        assert t.kind == "pinned" and t.nbytes == host.nbytes and t.gbps > 0
        back, t2 = d2h(dev)
        assert np.array_equal(back, host) and t2.kind == "pageable"
    _, t3 = h2d(np.ones((1024, 4), dtype=np.uint64))
    assert t3.kind == "pageable"


def test_a_pinned_copy_is_timed_without_the_host_delay_in_enqueueing_it():
    """The stream is held until the copy and both events are enqueued (stream_gate): a host
    stall between the start event and the copy call (a thread waiting for the GIL in the
    service) is not transfer time. Ungated, the 50 ms stall would be most of it."""
    import time
    from proofflow.prover.device import backend, stream_gate
    from proofflow.prover.staging.pool import StagingPool
    pool = StagingPool(64 << 20, pinned=True)
    with pool.acquire(32 << 20) as buf:
        host = buf.fr_vector((32 << 20) // 32)
        host[:] = 7
        out = cp.empty(host.shape, dtype=host.dtype)

        def stalled_copy(stream):
            time.sleep(0.05)
            out.set(host, stream=stream)

        t = backend._timed(stalled_copy, host.nbytes, "pinned")
        assert stream_gate.available()
        assert np.array_equal(cp.asnumpy(out), host)
        assert t.ms < 25, f"{t.ms:.1f} ms for 32 MiB: the host's stall was timed"


@lru_cache(maxsize=None)
def g1_table(curve):
    """4096 random G1 points of ``curve``, with infinity, a repeated point and a point and its negation."""
    from proofflow.prover import points
    rng = np.random.default_rng(4)
    fr = Fr.of(curve)
    g = curve.point_class("g1")()
    pts = [g * curve.scalar(int(x)) for x in fr.to_ints(fr.random(4093, rng))]
    pts += [curve.point_class("g1").identity(), pts[5], -pts[6]]
    return points.PointTable.from_points(curve, "g1", pts)


@pytest.mark.parametrize("log_n", [0, 1, 4, 8, 10, 12])
def test_msm_g1_matches_the_cpu(curve, log_n):
    from proofflow.prover import points
    n = 1 << log_n
    table = points.PointTable(curve, "g1", g1_table(curve).xy[-n:].copy())  # the tail holds the special points
    s = Fr.of(curve).random(n, np.random.default_rng(log_n))
    assert GpuBackend(options()).msm_g1(table, s) == points.msm(table, s)


@pytest.mark.parametrize("c", [4, 7, 13, 16])
def test_msm_g1_edge_scalars_every_window_width(curve, c):
    from proofflow.prover import points
    from proofflow.prover.device import msm as gpu_msm
    fr = Fr.of(curve)
    p = fr.MODULUS
    ints = [0, 1, p - 1, 2, p - 2, (p - 1) // 2, 1 << (p.bit_length() - 1), (1 << c) - 1, 1 << (c - 1)] * 3
    table = points.PointTable(curve, "g1", g1_table(curve).xy[-len(ints):].copy())
    s = fr.from_ints(ints)
    assert gpu_msm.msm_g1(table, s, options(), c=c) == points.msm(table, s)
    # the same point under every scalar: doublings and cancellations inside buckets
    same = points.PointTable(curve, "g1", np.repeat(g1_table(curve).xy[:1], len(ints), axis=0))
    assert gpu_msm.msm_g1(same, s, options(), c=c) == points.msm(same, s)


def _tiled(table, n: int):
    from proofflow.prover import points
    return points.PointTable(table.curve, "g1", np.tile(table.xy, (-(-n // len(table)), 1))[:n].copy())


@pytest.mark.parametrize("log_n", [12, 16])
def test_msm_g1_mostly_small_scalars(curve, log_n):
    """90% of the scalars 1 or 2, as in bit-valued witnesses: two buckets of the lowest
    window hold most entries, so they are summed in many pieces."""
    from proofflow.prover import points
    rng = np.random.default_rng(50 + log_n)
    n, fr = 1 << log_n, Fr.of(curve)
    table = _tiled(g1_table(curve), n)
    ints = fr.to_ints(fr.random(n, rng))
    small = rng.random(n) < 0.9
    s = fr.from_ints([int(k) if m else v for m, k, v in zip(small, rng.integers(1, 3, n), ints)])
    assert GpuBackend(options()).msm_g1(table, s) == points.msm(table, s)


@pytest.mark.parametrize("value", [1, 2, 1 << 200, -1, None], ids=["1", "2", "2^200", "p-1", "random"])
def test_msm_g1_all_equal_scalars(curve, value):
    """2^16 equal scalars: every window's entries in one bucket (None: a random value)."""
    from proofflow.prover import points
    n, fr = 1 << 16, Fr.of(curve)
    table = _tiled(g1_table(curve), n)
    v = fr.to_ints(fr.random(1, np.random.default_rng(7)))[0] if value is None else value
    s = fr.from_ints([v] * n)
    assert GpuBackend(options()).msm_g1(table, s) == points.msm(table, s)


def test_gpu_proof_verifies(pk10, mimc10):
    from proofflow.prover.groth16 import prover, verifier
    inst = mimc10.instance(11, 0)
    proof = prover.prove(pk10, mimc10.constraint_system, inst.witness, GpuBackend(options()))
    assert verifier.verify(pk10.vk, inst.public_inputs, proof)


def test_a_bn254_proof_verifies_by_the_pairing(tmp_path):
    """A MiMC partition over BN254 proved on the GPU (its key's tables resident, decompressed
    from arkworks's encoding on the device; H and the five MSMs in BN254's kernels) verifies
    by the pairing, and is the CPU backend's proof for the same randomness, byte for byte;
    a changed public input does not verify."""
    from proofflow.prover.circuits.by_name import get_circuit
    from proofflow.prover.groth16 import generator, prover, verifier
    from proofflow.prover.groth16.data_structures import PK_TABLES, ProvingKey
    circuit = get_circuit("mimc", 10, "bn254")
    generator.setup(circuit, 7).save(tmp_path, "compressed")
    pk, inst = ProvingKey.load(tmp_path), circuit.instance(11, 0)
    assert {getattr(pk, name).encoding for name in PK_TABLES} == {"compressed"}
    gpu = GpuBackend(options())
    gpu.prepare(pk)
    cs = circuit.constraint_system
    proof = prover.prove(pk, cs, inst.witness, gpu, rng=np.random.default_rng(5))
    assert pk.curve.name == "bn254" and len(proof.to_bytes()) == 128
    assert verifier.verify(pk.vk, inst.public_inputs, proof)
    assert proof.to_bytes() == prover.prove(pk, cs, inst.witness, CPU, rng=np.random.default_rng(5)).to_bytes()
    wrong = [inst.public_inputs[0], (inst.public_inputs[1] + 1) % pk.curve.fr.modulus]
    assert not verifier.verify(pk.vk, wrong, proof)
