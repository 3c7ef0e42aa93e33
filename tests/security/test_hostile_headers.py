"""Finding 2 (binary headers): "Headers that claim huge sizes allocate first and check
later. A 473 KB zkey whose header claims 2^31 constraints raises a raw MemoryError (16 GiB)
at `circuit add`. Claiming 2^27 takes 2 GiB of memory and 6 s before the clear error
arrives. An r1cs claiming 2^32-1 wires makes `proofflow setup --r1cs` die with a numpy
traceback (32 GiB)."

Each hostile file is a valid one with one count changed (or a section cut). The CLI runs
in a process whose address space is capped at 4,000,000 KiB (`ulimit -v 4000000`): it
must refuse the file with exit 2 and one `error:` line naming the file, the section and
the header field, within 1 CPU-second of its own work (timed after the imports), and write nothing.
"""
from __future__ import annotations

import resource
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

import circom_files
from proofflow.prover import circom
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE

ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 4_000_000 * 1024  # ulimit -v 4000000
WORK_S = 1.0
CONSTRAINTS = 64

# The CLI's entry point, its imports done before the clock starts: the time printed is the
# command's own work, in CPU seconds (what a hostile header made it compute or allocate; wall
# time would also count other processes on a loaded CI machine).
RUNNER = """
import sys, time
from proofflow import cli
import proofflow.prover.backend.by_name, proofflow.prover.circom, proofflow.prover.circom.registry
t = time.process_time()
rc = cli.main(sys.argv[1:])
print(f"work_s={time.process_time() - t:.3f}")
sys.exit(rc)
"""



def _parse(data: bytes) -> tuple[bytes, int, list[list]]:
    magic, version, count = struct.unpack_from("<4sII", data)
    pos, sections = 12, []
    for _ in range(count):
        sid, size = struct.unpack_from("<IQ", data, pos)
        sections.append([sid, bytearray(data[pos + 12:pos + 12 + size])])
        pos += 12 + size
    return magic, version, sections


def _edit(data: bytes, sid: int, edit) -> bytes:
    """The file with section ``sid``'s body replaced by ``edit(body)`` (sizes kept right)."""
    magic, version, sections = _parse(data)
    for s in sections:
        if s[0] == sid:
            s[1] = edit(s[1])
    return circom_files.container(magic, version, [(sid_, bytes(body)) for sid_, body in sections])


def _put_u32(at: int, value: int):
    def edit(body: bytearray) -> bytearray:
        struct.pack_into("<I", body, at, value)
        return body
    return edit


def _without(data: bytes, sid: int) -> bytes:
    magic, version, sections = _parse(data)
    return circom_files.container(magic, version, [(s, bytes(b)) for s, b in sections if s != sid])


# Offsets in a BLS12-381 file: the r1cs header is n8, r (32 bytes), nWires, nPubOut,
# nPubIn, nPrvIn, nLabels (u64), nConstraints; the zkey header n8q, q (48), n8r, r (32),
# nVars, nPublic, domainSize.
R1CS_WIRES, R1CS_CONSTRAINTS = 36, 60
ZKEY_VARS, ZKEY_DOMAIN = 88, 96

ZKEY_CASES = {  # name: (edit of the valid zkey, section blamed, field named)
    "domainSize 2^31": (lambda z: _edit(z, 2, _put_u32(ZKEY_DOMAIN, 1 << 31)), 9, "domainSize = 2147483648"),
    "domainSize 2^27": (lambda z: _edit(z, 2, _put_u32(ZKEY_DOMAIN, 1 << 27)), 9, "domainSize = 134217728"),
    "nVars 2^32-1": (lambda z: _edit(z, 2, _put_u32(ZKEY_VARS, 2**32 - 1)), 5, "nVars = 4294967295"),
    "coefficient count 2^32-1": (lambda z: _edit(z, 4, _put_u32(0, 2**32 - 1)), 4, "count = 4294967295"),
    "H section one point short": (lambda z: _edit(z, 9, lambda b: b[:-96]), 9, "domainSize ="),
    "file cut inside the H points": (lambda z: z[:-2000], 9, None),
}
R1CS_CASES = {
    "nWires 2^32-1": (lambda r: _edit(r, 1, _put_u32(R1CS_WIRES, 2**32 - 1)), 3, "nWires = 4294967295"),
    "nWires 2^32-1, no wire map": (lambda r: _without(_edit(r, 1, _put_u32(R1CS_WIRES, 2**32 - 1)), 3), 1,
                                   "nWires = 4294967295"),
    "nConstraints 2^32-1": (lambda r: _edit(r, 1, _put_u32(R1CS_CONSTRAINTS, 2**32 - 1)), 2,
                            "nConstraints = 4294967295"),
    "file cut inside the wire map": (lambda r: r[:-5], 3, None),
}


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("valid")
    (d / "c.r1cs").write_bytes(circom_files.chain_r1cs(CONSTRAINTS))
    circom.write_test_zkey(circom.read_r1cs(d / "c.r1cs"), 1, d / "c.zkey")
    return {"r1cs": d / "c.r1cs", "zkey": d / "c.zkey"}


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _cli(*args) -> tuple[subprocess.CompletedProcess, float | None]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", RUNNER, *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env, preexec_fn=_cap_address_space)
    work = [line for line in proc.stdout.splitlines() if line.startswith("work_s=")]
    return proc, float(work[0].split("=")[1]) if work else None


def _tree(d: Path) -> list:
    return sorted((str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*"))


def _assert_refused(proc, work_s, path: Path, section: int, field: str | None) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert work_s < WORK_S, f"{work_s} s of work before the error"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert f"{path}: section {section}: " in errors[0]
    if field is not None:
        assert field in errors[0], errors[0]


@pytest.mark.parametrize("case", ZKEY_CASES)
def test_circuit_add_refuses_a_hostile_zkey_at_once(case, valid, tmp_path):
    edit, section, field = ZKEY_CASES[case]
    bad = tmp_path / "bad.zkey"
    bad.write_bytes(edit(valid["zkey"].read_bytes()))
    home = tmp_path / "home"
    home.mkdir()
    proc, work_s = _cli("--home", home, "circuit", "add", "hostile", "--r1cs", valid["r1cs"], "--zkey", bad)
    _assert_refused(proc, work_s, bad, section, field)
    assert _tree(home) == [], "circuit add wrote into the home"


@pytest.mark.parametrize("case", R1CS_CASES)
def test_setup_refuses_a_hostile_r1cs_at_once(case, valid, tmp_path):
    edit, section, field = R1CS_CASES[case]
    bad = tmp_path / "bad.r1cs"
    bad.write_bytes(edit(valid["r1cs"].read_bytes()))
    out = tmp_path / "out"
    out.mkdir()
    before = _tree(tmp_path)
    proc, work_s = _cli("--home", tmp_path / "home", "setup", "--r1cs", bad, "--out", out / "k.zkey",
                        "--backend", "cpu")
    _assert_refused(proc, work_s, bad, section, field)
    assert _tree(tmp_path) == before, "setup wrote a file"


def test_a_wtns_claiming_2_32_values_is_refused_at_once(tmp_path):
    bad = tmp_path / "bad.wtns"
    bad.write_bytes(_edit(circom_files.wtns([1, 2, 3]), 1, _put_u32(36, 2**32 - 1)))  # n8, r, then count
    tracemalloc.start()
    t = time.process_time()
    try:
        with pytest.raises(circom.CorruptFile) as exc:
            circom.read_wtns(bad, CURVE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - t < WORK_S
    assert peak < 1 << 20, f"{peak} bytes allocated before the error"
    assert str(exc.value) == (f"{bad}: section 2: holds 96 bytes of witness values, not the 137438953440 that "
                              "count = 4294967295 needs (32 bytes each)")


def test_a_device_is_refused_unread(valid, tmp_path):
    """/dev/zero has no length for the counts to be checked against (read, it never ends)."""
    home = tmp_path / "home"
    home.mkdir()
    proc, work_s = _cli("--home", home, "circuit", "add", "hostile", "--r1cs", valid["r1cs"], "--zkey", "/dev/zero")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "error: /dev/zero: is not a regular file" in proc.stderr.splitlines()
    assert work_s < WORK_S and _tree(home) == []
