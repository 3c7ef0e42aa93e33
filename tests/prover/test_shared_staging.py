"""Shared staging: leases under a budget, idle segments reused in place, dead writers'
segments reclaimed, and a/b/c written once by synthesis and read in place by the prover."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from proofflow.prover import pipeline
from proofflow.prover.keys import KeyCache, ensure_key
from proofflow.prover.staging.mapped import MappedSegments
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.staging.shared import SegmentError, SharedStaging, segment_bytes
from proofflow.prover.staging.pool import StagingTimeout

MiB = 1 << 20


@pytest.fixture
def staging(tmp_path):
    return SharedStaging(tmp_path / "shm", budget_bytes=8 * MiB)


def _write(staging, owner, n=1024, nv=1000, fill=7):
    lease = staging.lease(owner, n, nv, timeout=0)
    seg = staging.open(lease, writer=True)
    for v in seg.abc:
        v[:] = fill
    seg.witness[:] = fill + 1
    seg.close()
    staging.ready(lease)
    return lease


def test_written_once_and_read_in_place(staging):
    lease = _write(staging, "d/r/p0000")
    seg = staging.open(lease.id)
    assert all(v.shape == (1024, 4) and (v == 7).all() for v in seg.abc)
    assert seg.witness.shape == (1000, 4) and (seg.witness == 8).all()
    # the views are the shared memory itself: a write through one mapping shows in another
    other = staging.open(lease.id)
    other.abc[1][0, 0] = 99
    assert seg.abc[1][0, 0] == 99
    seg.close()
    other.close()


def test_a_segment_not_ready_or_of_another_owner_is_refused(staging):
    lease = staging.lease("d/r/p0000", 1024, 10, timeout=0)
    with pytest.raises(SegmentError, match="not fully written"):
        staging.open(lease.id)
    staging.ready(lease)
    with pytest.raises(SegmentError, match="belongs to d/r/p0000, not d/r/p0001"):
        staging.open(lease.id, owner="d/r/p0001")
    staging.release(lease.id)
    with pytest.raises(SegmentError, match="is gone"):
        staging.open(lease.id)


def test_leases_wait_for_room_then_time_out(staging):
    big = 3 * MiB // 32 // 3  # a/b/c of 3 MiB: two fit the 8 MiB budget, a third does not
    a = staging.lease("d/r/p0000", big, 0, timeout=0)
    staging.lease("d/r/p0001", big, 0, timeout=0)
    t0 = time.monotonic()
    with pytest.raises(StagingTimeout, match="of 8388608 bytes leased"):
        staging.lease("d/r/p0002", big, 0, timeout=0.3)
    assert time.monotonic() - t0 >= 0.3
    staging.release(a.id)
    staging.lease("d/r/p0002", big, 0, timeout=0)
    with pytest.raises(ValueError, match="can never fit"):
        staging.lease("d/r/p0003", 4 * big, 0, timeout=0)


def test_a_released_segment_is_reused_in_place(staging):
    first = _write(staging, "d/r/p0000")
    inode = os.stat(staging.root / f"{first.id}.seg").st_ino
    staging.release(first.id)
    assert staging.stats()["idle"] > 0 and staging.stats()["leased"] == 0
    second = staging.lease("d/r/p0001", 1024, 1000, timeout=0)
    assert os.stat(staging.root / f"{second.id}.seg").st_ino == inode  # same pages: still pinned where mapped
    assert staging.stats()["idle"] == 0


def test_idle_segments_make_room_for_another_size(staging):
    small = _write(staging, "d/r/p0000")
    staging.release(small.id)
    big = 7 * MiB // 32 // 3
    staging.lease("d/r/p0001", big, 0, timeout=0)  # only fits once the idle segment goes
    assert staging.stats()["idle"] == 0


def test_leasing_again_replaces_the_owners_segment(staging):
    first = _write(staging, "d/r/p0000")
    second = _write(staging, "d/r/p0000")
    assert [lease.id for lease in staging.leases()] == [second.id]
    with pytest.raises(SegmentError):
        staging.open(first.id)


def test_a_killed_writers_lease_is_reclaimed(staging):
    code = textwrap.dedent(f"""
        import os, signal
        from proofflow.prover.staging.shared import SharedStaging
        s = SharedStaging({str(staging.root)!r}, {staging.budget})
        lease = s.lease("d/r/p0000", 1024, 10, timeout=0)
        seg = s.open(lease, writer=True)
        seg.abc[0][:10] = 1
        print(lease.id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == -9
    lease_id = out.stdout.strip()
    assert [lease.id for lease in staging.leases()] == [lease_id]
    reclaimed = staging.reclaim()
    assert [(lease.id, "died" in why) for lease, why in reclaimed] == [(lease_id, True)]
    assert staging.leases() == [] and staging.stats()["leased"] == 0


@pytest.mark.parametrize("killed_in", ["_write", "_drop"])
def test_a_holder_killed_between_segment_and_lease_file_leaves_nothing_held(staging, killed_in):
    """Killed after the segment is made and before its lease file is written (leasing), or after
    the segment went idle and before its lease file is removed (releasing): the next reclaim
    ends both halves at once, with no grace period."""
    code = textwrap.dedent(f"""
        import os, signal
        from proofflow.prover.staging.shared import SharedStaging
        s = SharedStaging({str(staging.root)!r}, {staging.budget})
        if {killed_in!r} == "_drop":
            lease = s.lease("d/r/p0000", 1024, 10, timeout=0)
            s.ready(lease)
            os.utime = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # right after the segment goes idle
            s.release(lease.id)
        else:
            SharedStaging._write = lambda self, lease: os.kill(os.getpid(), signal.SIGKILL)
            s.lease("d/r/p0000", 1024, 10, timeout=0)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == -9, out.stderr
    held = staging.stats()
    assert (held["leases"], held["leased"] > 0) == ((0, True) if killed_in == "_write" else (1, False)), held
    staging.reclaim()
    assert staging.leases() == [] and staging.stats()["leased"] == 0


@pytest.mark.parametrize("bound", [False, True])
def test_a_ready_segment_outlives_its_writer_unless_bound_to_it(staging, bound):
    code = textwrap.dedent(f"""
        import os, signal
        from proofflow.prover.staging.shared import SharedStaging
        s = SharedStaging({str(staging.root)!r}, {staging.budget})
        lease = s.lease("groth16/h/1", 1024, 10, timeout=0, bound={bound})
        s.open(lease, writer=True).close()
        s.ready(lease)
        print(lease.id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == -9
    reclaimed = staging.reclaim()
    if bound:  # the drop-in's: its caller waited for the proof and is gone
        assert [(lease.id, "died before its proof" in why) for lease, why in reclaimed] == [(out.stdout.strip(), True)]
        assert staging.leases() == []
    else:  # a synthesize task's: prove_gpu reads it after the writer ended
        assert reclaimed == [] and [lease.state for lease in staging.leases()] == ["ready"]


def test_expired_and_run_owned_leases_end(tmp_path):
    staging = SharedStaging(tmp_path / "shm", 8 * MiB, lease_ttl_s=0.2)
    a, b = _write(staging, "d/r1/p0000"), _write(staging, "d/r1/p0001")
    c = _write(staging, "d/r2/p0000")
    assert staging.release_owned("d/r1/") == 2
    assert [lease.id for lease in staging.leases()] == [c.id]
    time.sleep(0.3)
    assert [lease.id for lease, why in staging.reclaim() if "TTL" in why] == [c.id]
    assert a.id != b.id


def test_synthesis_writes_abc_once_into_the_segment(staging):
    circuit = get_circuit("mimc", 8)
    out = pipeline.synthesize_shared(circuit, 3, 1, staging, "d/r/p0001")
    assert out["n"] == circuit.domain_size and out["bytes"] == 3 * circuit.domain_size * 32
    inst = circuit.instance(3, 1)
    want = circuit.witness_map(inst.witness)
    seg = staging.open(out["segment"], owner="d/r/p0001")
    for got, w in zip(seg.abc, want):
        assert np.array_equal(got, w)
    assert np.array_equal(seg.witness, inst.witness)
    assert out["public_inputs"] == [hex(x) for x in inst.public_inputs]
    assert seg.mapping.size >= segment_bytes(out["n"], out["num_variables"])
    seg.close()


def test_a_proof_from_the_segment_verifies_and_mappings_are_reused(staging, tmp_path):
    circuit = get_circuit("mimc", 8)
    key_dir = tmp_path / "key"
    ensure_key(key_dir, "mimc", 8, 0, backend="cpu")
    key = KeyCache().get(key_dir, "mimc", 8)
    segments = MappedSegments(staging, pin=False)
    seen = []
    for partition in range(2):
        holder = f"d/r/p{partition:04d}"
        out = pipeline.synthesize_shared(circuit, 0, partition, staging, holder)
        info = segments.stage(out["segment"], holder)
        seen.append(info["cached"])
        with segments.get_for(key, out["segment"], holder) as staged:
            assert staged.memory_kind == "pageable"
            proof = pipeline.prove(key, staged, CpuBackend())
        from proofflow.prover.groth16 import verifier
        assert verifier.verify(key.pk.vk, [int(x, 16) for x in out["public_inputs"]], proof)
        staging.release(out["segment"])
    # the second partition leased the first one's released segment: already mapped here
    assert seen == [False, True]
    assert segments.stats()["mapped"] == 1
    with pytest.raises(pipeline.InputError, match="has 256"):
        out = pipeline.synthesize_shared(get_circuit("mimc", 9), 0, 0, staging, "d/r/p0009")
        segments.get_for(key, out["segment"], "d/r/p0009")
    segments.close()


def test_mappings_of_removed_segments_are_dropped(staging):
    segments = MappedSegments(staging, pin=False)
    a = _write(staging, "d/r/p0000")
    segments.stage(a.id)
    staging.release(a.id)
    for p in (staging.root / "idle").iterdir():
        p.unlink()  # evicted
    b = _write(staging, "d/r/p0001", n=2048)
    segments.stage(b.id)
    assert segments.stats()["mapped"] == 1  # a's mapping went once its file was gone
    segments.close()


def test_idle_segments_go_back_to_the_host_after_their_ttl(tmp_path):
    staging = SharedStaging(tmp_path / "shm", 8 * MiB, idle_ttl_s=0.3)
    a = _write(staging, "d/r/p0000")
    staging.release(a.id)
    assert staging.stats()["idle"] > 0
    staging.reclaim()
    assert staging.stats()["idle"] > 0, "released just now: kept for the next partition"
    time.sleep(0.4)
    staging.release_owned("d/other/")  # a run's cleanup reclaims too
    assert staging.stats()["idle"] == 0 and list((staging.root / "idle").iterdir()) == []


def test_drop_idle_frees_idle_segments_and_keeps_leased_ones(staging):
    a, b = _write(staging, "d/r/p0000"), _write(staging, "d/r/p0001")
    staging.release(a.id)
    idle = staging.stats()["idle"]
    assert idle > 0
    assert staging.drop_idle() == idle
    stats = staging.stats()
    assert stats["idle"] == 0 and stats["leases"] == 1 and list((staging.root / "idle").iterdir()) == []
    seg = staging.open(b)  # the leased segment is intact
    assert int(seg.abc[0][0, 0]) == 7
    seg.close()
    assert staging.drop_idle() == 0


def test_drop_idle_of_some_inodes_keeps_the_others(staging):
    a, b = _write(staging, "d/r/p0000"), _write(staging, "d/r/p0001")
    st = (staging.root / f"{a.id}.seg").stat()
    staging.release(a.id)
    staging.release(b.id)
    both = staging.stats()["idle"]
    assert staging.drop_idle({(st.st_dev, st.st_ino)}) == st.st_size  # a's file, renamed into idle/
    assert staging.stats()["idle"] == both - st.st_size
    assert staging.drop_idle(set()) == 0 and staging.stats()["idle"] == both - st.st_size


def test_a_removed_root_is_not_recreated_by_ending_or_counting(staging):
    """A service or a run's cleanup that outlives its home (a test's, a run's scratch) must
    not leave an empty staging directory behind in shared memory; a new lease recreates it."""
    import shutil
    lease = _write(staging, "d/r/p0000")
    shutil.rmtree(staging.root)
    assert staging.drop_idle() == 0 and staging.reclaim() == [] and staging.held_bytes() == 0
    assert staging.release(lease.id) is False and staging.release_owned("d/r/") == 0
    assert staging.stats()["leases"] == 0
    assert not staging.root.exists()
    _write(staging, "d/r/p0001")
    assert staging.stats()["leases"] == 1
