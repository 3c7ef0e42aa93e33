"""Compressed proving-key tables (issue #38 item 1): the C encoder and decoder
(proofflow/prover/native/compressed.c) against the point library's own compressed encoding
(py-arkworks-bls12381: zcash's, the independent reference), bad rows refused (by it too),
setup writing compressed tables that prove, keys of the old xy layout loading and proving,
and the resource check's sizes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from proofflow.prover import points
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16 import data_structures, generator, prover, verifier
from proofflow.prover.groth16.data_structures import PK_TABLES, KeyFormatError, ProvingKey
from proofflow.prover.keys import ensure_key, key_bytes
from proofflow.prover.native import compressed
from compressed_rows import bad_rows

fr = Fr.of(CURVE)


def _points(group: str, n: int, seed: int) -> list:
    """n random points, then infinity, and a point beside its negation (both signs of y)."""
    g = CURVE.point_class(group)()
    pts = [g * CURVE.scalar(int(x)) for x in fr.to_ints(fr.random(n, np.random.default_rng(seed)))]
    return pts + [CURVE.point_class(group).identity(), pts[0], -pts[0]]


def _library_rows(pts) -> np.ndarray:
    raw = b"".join(p.to_compressed_bytes() for p in pts)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(pts), -1).copy()


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_round_trips_match_the_point_librarys_encoding(group):
    pts = _points(group, 200, 1)
    table = points.PointTable.from_points(CURVE, group, pts)
    ours = compressed.compress(CURVE, group, table.xy)
    assert ours.shape == (len(pts), CURVE.compressed_bytes(group)) and ours.shape[1] * 2 == table.xy.shape[1]
    assert np.array_equal(ours, _library_rows(pts))
    assert np.array_equal(compressed.decompress(CURVE, group, ours), table.xy)
    signs = {bool(r[0] & CURVE.compression.larger) for r in ours[:-3]}
    assert signs == {True, False}  # both signs of y among the random points
    assert ours[-3, 0] == CURVE.compression.infinity | CURVE.compression.marker and not ours[-3, 1:].any()
    assert ours[-2, 0] ^ ours[-1, 0] == CURVE.compression.larger  # p and -p: the sign flag alone differs
    lazily = points.PointTable.of_compressed(CURVE, group, ours)  # the CPU path's table: xy on first use
    assert lazily.encoding == "compressed" and len(lazily) == len(pts) and lazily.xy_nbytes == table.xy.nbytes
    assert np.array_equal(lazily.xy, table.xy) and lazily.points()[-2] == pts[-2]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bad_rows_are_refused_naming_the_table_and_row(group):
    good = _library_rows(_points(group, 6, 2))
    cls = CURVE.point_class(group)
    for reason, rows in bad_rows(group).items():
        for bad in rows:
            flags = bad[0, 0] & CURVE.compression.flags
            if flags & CURVE.compression.infinity and flags & CURVE.compression.marker:
                # infinity with x or the sign set: the library reads it as infinity, which zcash's
                # encoding (and its own writer) gives only as flags and zeros; refused here
                assert cls.from_compressed_bytes_unchecked(bad.tobytes()) == cls.identity()
            else:
                with pytest.raises(Exception):  # the library refuses them too (unchecked: no subgroup test)
                    cls.from_compressed_bytes_unchecked(bad.tobytes())
            table = np.concatenate([good, bad, good])
            with pytest.raises(KeyFormatError) as refused:
                compressed.decompress(CURVE, group, table, origin="a_query.npy")
            assert str(refused.value) == (f"a_query.npy: row 9 is not a compressed BLS12-381 {group.upper()} point: "
                                          f"{compressed.REASONS[reason]}")
            lazily = points.PointTable.of_compressed(CURVE, group, table, origin="h_query.npy")
            with pytest.raises(KeyFormatError, match=r"^h_query\.npy: row 9 "):
                lazily.points()


def test_compressing_refuses_a_point_off_the_curve():
    xy = points.PointTable.from_points(CURVE, "g1", _points("g1", 4, 3)).xy.copy()
    xy[2, 50] ^= 1  # y changed: off the curve
    with pytest.raises(KeyFormatError, match="^t: row 2 is not a BLS12-381 G1 point: x is not on the curve"):
        compressed.compress(CURVE, "g1", xy, origin="t")


def test_the_encoding_suits_only_curves_it_covers():
    import dataclasses
    with pytest.raises(ValueError, match="flags in the 3 top bits"):
        compressed.constants(dataclasses.replace(CURVE, compression=dataclasses.replace(CURVE.compression,
                                                                                          larger=0x10)))
    assert compressed.row_bytes(CURVE, "g2", "compressed") == 96 and compressed.row_bytes(CURVE, "g2", "xy") == 192
    with pytest.raises(ValueError, match="unknown key table encoding"):
        compressed.row_bytes(CURVE, "g1", "packed")


# ---- keys ----

SEED = 3


def _prove_and_verify(directory) -> None:
    pk = ProvingKey.load(directory)
    circuit = get_circuit(pk.circuit, pk.log2)
    inst = circuit.instance(SEED, 1)
    proof = prover.prove(pk, circuit.constraint_system, inst.witness, CpuBackend())
    assert verifier.verify(pk.vk, inst.public_inputs, proof)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The same key (mimc 2^8) set up compressed and in the old xy layout (auto's, at this size)."""
    root = tmp_path_factory.mktemp("keys")
    mp = pytest.MonkeyPatch()
    try:
        ensure_key(root / "xy", "mimc", 8, SEED, backend="cpu")
        mp.setenv("PROOFFLOW_KEY_TABLES", "compressed")
        ensure_key(root / "compressed", "mimc", 8, SEED, backend="cpu")
    finally:
        mp.undo()
    return root


def test_auto_compresses_the_large_keys_only(monkeypatch):
    from proofflow.prover.groth16.data_structures import COMPRESSED_FROM_LOG2, table_encoding
    assert [table_encoding(log2) for log2 in (8, COMPRESSED_FROM_LOG2 - 1, COMPRESSED_FROM_LOG2, 27)] == \
        ["xy", "xy", "compressed", "compressed"]
    assert table_encoding(27, "xy") == "xy" and table_encoding(8, "compressed") == "compressed"
    monkeypatch.setenv("PROOFFLOW_KEY_TABLES", "compressed")
    assert table_encoding(8) == "compressed"


def test_setup_writes_compressed_tables_that_prove(keys):
    params = json.loads((keys / "compressed" / "params.json").read_text())
    assert params["format"] == "proofflow-groth16-bls12-381/2"
    pk = ProvingKey.load(keys / "compressed")
    for name, group in PK_TABLES.items():
        table = getattr(pk, name)
        assert params["tables"][name]["encoding"] == "compressed" == table.encoding
        assert (keys / "compressed" / f"{name}.npy").stat().st_size == len(table) * CURVE.compressed_bytes(group) + 128
    _prove_and_verify(keys / "compressed")


def test_compressed_and_xy_keys_hold_the_same_points(keys):
    small, big = ProvingKey.load(keys / "compressed"), ProvingKey.load(keys / "xy")
    for name in PK_TABLES:
        assert getattr(big, name).encoding == "xy"
        assert np.array_equal(getattr(small, name).xy, getattr(big, name).xy)
    assert key_bytes(small) == key_bytes(big)  # resident as xy either way
    files = {d: sum(p.stat().st_size for p in (keys / d).glob("*.npy")) for d in ("compressed", "xy")}
    assert files["compressed"] - 5 * 128 == (files["xy"] - 5 * 128) // 2


def test_an_old_uncompressed_key_loads_and_proves(keys, tmp_path):
    """A key of before compression: params.json of format /1, its tables xy, no encoding."""
    old = tmp_path / "old"
    shutil.copytree(keys / "xy", old)
    params = json.loads((old / "params.json").read_text())
    params["format"] = "proofflow-groth16-bls12-381/1"
    for meta in params["tables"].values():
        del meta["encoding"]
    (old / "params.json").write_text(json.dumps(params))
    assert all(getattr(ProvingKey.load(old), name).encoding == "xy" for name in PK_TABLES)
    _prove_and_verify(old)
    params["format"] = "proofflow-groth16-bls12-381/3"
    (old / "params.json").write_text(json.dumps(params))
    with pytest.raises(KeyFormatError, match=r"not a proofflow-groth16-bls12-381/1 or proofflow-groth16-bls12-381/2"):
        ProvingKey.load(old)


def test_a_key_saved_in_either_encoding_is_the_same_key(keys, tmp_path):
    pk = ProvingKey.load(keys / "compressed")
    pk.save(tmp_path / "xy", encoding="xy")
    for name in PK_TABLES:
        assert (tmp_path / "xy" / f"{name}.npy").read_bytes() == (keys / "xy" / f"{name}.npy").read_bytes()
    ProvingKey.load(keys / "xy").save(tmp_path / "again", encoding="compressed")
    for name in PK_TABLES:
        assert (tmp_path / "again" / f"{name}.npy").read_bytes() == (keys / "compressed" / f"{name}.npy").read_bytes()


def test_a_bad_point_in_a_key_is_refused_with_its_file_and_row(keys, tmp_path):
    """A table whose digest matches params.json (rewritten with it) but holding a point off
    the curve: refused where the CPU path decompresses it."""
    from proofflow.prover import files
    d = tmp_path / "bad"
    shutil.copytree(keys / "compressed", d)
    rows = np.load(d / "l_query.npy")
    rows[7] = bad_rows("g1")[3][0]
    np.save(d / "l_query.npy", rows)
    params = json.loads((d / "params.json").read_text())
    params["tables"]["l_query"]["sha256"] = files.sha256_file(d / "l_query.npy")
    (d / "params.json").write_text(json.dumps(params))
    with pytest.raises(KeyFormatError, match=rf"^{d}/l_query\.npy: row 7 is not a compressed BLS12-381 G1 point: "
                                             "x is not on the curve"):
        _prove_and_verify(d)
    params["tables"]["l_query"]["encoding"] = "zipped"
    (d / "params.json").write_text(json.dumps(params))
    with pytest.raises(KeyFormatError, match="malformed: missing or bad tables.l_query.encoding 'zipped'"):
        ProvingKey.load(d)


def test_setup_streams_compressed_rows_in_chunks(keys, tmp_path, monkeypatch):
    """Setup's tables compressed a chunk at a time into their files: the same files."""
    monkeypatch.setattr(generator, "STREAM_CHUNK", 100)
    monkeypatch.setenv("PROOFFLOW_KEY_TABLES", "compressed")
    pk = generator.setup(get_circuit("mimc", 8), SEED, backend=_ChunkedBackend(), directory=tmp_path / "k")
    pk.save(tmp_path / "k")
    for name in PK_TABLES:
        assert (tmp_path / "k" / f"{name}.npy").read_bytes() == (keys / "compressed" / f"{name}.npy").read_bytes()
    assert data_structures.KeyTables(CURVE).encoding == "xy"  # in memory: always xy


class _ChunkedBackend(CpuBackend):
    def fixed_base(self, curve, group, scalars, progress=None):
        return generator.fixed_base(curve, group, scalars, progress, workers=1)


# ---- the resource check's sizes ----

def test_the_resource_check_counts_compressed_keys(monkeypatch):
    from proofflow.prover import resources
    from proofflow.spec import MemoryKind, RunConfig
    s = resources.Shape(1 << 27, (1 << 27) - 1, 3, CURVE)
    squeezed, full = resources.key_table_bytes(s), resources.key_table_bytes(s, "xy")
    assert f"{squeezed / 1e9:.1f}" == "38.7" and f"{full / 1e9:.1f}" == "77.3"  # the figures
    assert squeezed - 5 * resources.NPY_HEADER == (full - 5 * resources.NPY_HEADER) // 2
    nowhere = resources.Disk(Path("/k"), None)
    machine = resources.Machine(key=nowhere, shared=nowhere, cache=nowhere, key_on_disk=False,
                                cs_cached=True, host_available=None, staging_budget=64 << 30)
    gpu, cpu = (RunConfig("mimc", 27, 1, b, MemoryKind.PINNED) for b in ("gpu", "cpu"))
    need = resources.estimate(gpu, machine, s)
    assert need.key_disk == squeezed + resources.KEY_JSON and need.key_tables == full  # disk compressed, device xy
    cpu_need = resources.estimate(cpu, machine, s)
    monkeypatch.setenv("PROOFFLOW_KEY_TABLES", "xy")
    old_gpu, old_cpu = resources.estimate(gpu, machine, s), resources.estimate(cpu, machine, s)
    assert old_gpu.key_disk == full + resources.KEY_JSON and old_gpu.key_tables == need.key_tables
    assert cpu_need.host_prove == old_cpu.host_prove + full  # the CPU path holds the tables decompressed


# ---- another curve: the C is generic over the descriptor (BN254: 4-limb Fq, arkworks's encoding) ----

def _bn254():
    """BN254 as its descriptor describes it (the curve itself is added elsewhere): only the
    constants the compressed tables use, its compression arkworks's (the descriptor's default)."""
    import dataclasses
    from proofflow.prover.curves.descriptor import ARKWORKS, PrimeField
    q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
    r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
    inv82 = pow(82, -1, q)
    return dataclasses.replace(CURVE, name="bn254_test", label="BN254", fr=PrimeField(r, 4, 28, 5),
                               fq=PrimeField(q, 4), g1_b=3, g2_b=(27 * inv82 % q, -3 * inv82 % q),
                               compression=ARKWORKS)


def _fq2_mul(a, b, q):
    return ((a[0] * b[0] - a[1] * b[1]) % q, (a[0] * b[1] + a[1] * b[0]) % q)


def _affine_multiples(p, k: int, q: int, two: bool) -> list:
    """p, 2p, ..., kp in affine coordinates (Python integers; Fq2 as pairs when ``two``)."""
    def add(a, b):
        (x1, y1), (x2, y2) = a, b
        if two:
            num, den = ((y2[0] - y1[0]) % q, (y2[1] - y1[1]) % q), ((x2[0] - x1[0]) % q, (x2[1] - x1[1]) % q)
            if den == (0, 0):  # doubling: (3 x^2) / (2 y)
                num, den = tuple(3 * c % q for c in _fq2_mul(x1, x1, q)), (2 * y1[0] % q, 2 * y1[1] % q)
            norm_inv = pow(den[0] ** 2 + den[1] ** 2, -1, q)
            lam = _fq2_mul(num, (den[0] * norm_inv % q, -den[1] * norm_inv % q), q)
            x3 = tuple((c - d - e) % q for c, d, e in zip(_fq2_mul(lam, lam, q), x1, x2))
            y3 = tuple((c - d) % q for c, d in zip(_fq2_mul(lam, tuple((a_ - b_) % q for a_, b_ in zip(x1, x3)), q), y1))
            return x3, y3
        lam = (y2 - y1) * pow(x2 - x1, -1, q) % q if x1 != x2 else 3 * x1 * x1 * pow(2 * y1, -1, q) % q
        x3 = (lam * lam - x1 - x2) % q
        return x3, (lam * (x1 - x3) - y1) % q
    out = [p]
    while len(out) < k:
        out.append(add(out[-1], p))
    return out


def _arkworks_bn254(x, y, q: int) -> bytes:
    """arkworks's compressed BN254 point: x little-endian (G2: c0 then c1), the top bit of its
    last byte set when y is the larger of y and -y (G2: c1 compared first)."""
    xs, ys = (list(x), list(y)) if isinstance(x, tuple) else ([x], [y])
    raw = bytearray(b"".join(c.to_bytes(32, "little") for c in xs))
    key = ys[1] if len(ys) == 2 and ys[1] else ys[0]
    raw[-1] |= 0x80 if key > (q - 1) // 2 else 0
    return bytes(raw)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_another_curve_needs_only_its_descriptor(group):
    bn = _bn254()
    q = bn.fq.modulus
    if group == "g1":
        pts = _affine_multiples((1, 2), 40, q, two=False)
    else:
        gen = ((10857046999023057135944570762232829481370756359578518086990519993285655852781,
                11559732032986387107991004021392285783925812861821192530917403151452391805634),
               (8495653923123431417604973247489272438418190587263600148770280649306958101930,
                4082367875863433681332203403145435568316851327593401208105741076214120093531))
        pts = _affine_multiples(gen, 12, q, two=True)
    neg = [(x, tuple(-c % q for c in y) if isinstance(y, tuple) else -y % q) for x, y in pts]
    coords = [c for x, y in pts + neg for c in ((*x, *y) if isinstance(x, tuple) else (x, y))]
    xy = np.frombuffer(b"".join(c.to_bytes(32, "little") for c in coords), dtype=np.uint8)
    xy = np.concatenate([xy.reshape(len(pts) * 2, -1), np.zeros((1, bn.xy_bytes(group)), dtype=np.uint8)])
    want = [_arkworks_bn254(x, y, q) for x, y in pts + neg] + [bytes(bn.compressed_bytes(group) - 1) + b"\x40"]
    rows = compressed.compress(bn, group, xy)
    assert [bytes(r) for r in rows] == want
    assert np.array_equal(compressed.decompress(bn, group, rows), xy)
    off = rows.copy()
    off[3, 0] ^= 1  # x changed in its lowest bit: no point of the curve has it (for this row)
    with pytest.raises(KeyFormatError, match="row 3 is not a compressed BN254"):
        compressed.decompress(bn, group, np.concatenate([off[:4]] * 2))
