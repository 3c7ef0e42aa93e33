"""On a GPU: calibrate cuda:0, then move a/b/c of a 2^22 partition (384 MiB) from pinned and
from pageable host memory with the proof run's own timed copy; check_h2d flags the pageable
partitions by their time alone (memory kind not required) and passes the pinned ones."""
import uuid

import pytest

pytestmark = pytest.mark.gpu

LOG2 = 22


def test_pageable_h2d_is_flagged_against_the_pinned_calibration(sqlite_url, tmp_path):
    from proofflow.prover.device import available as gpu_available
    if not gpu_available():
        pytest.skip("no GPU")
    import numpy as np
    from proofflow.prover.device import backend as gpu_mod
    from proofflow.prover.staging.pool import StagingPool

    from proofflow.timing.calibrate import calibrate, partition_bytes
    from proofflow.timing.h2d_check import H2DCheckConfig, check_run
    from proofflow.timing import TimingStore
    from h2d_fixtures import add_run

    store = TimingStore(sqlite_url)
    host = f"gpu-{uuid.uuid4().hex[:6]}"
    cal = calibrate("cuda:0", 16, LOG2, reps=3, host=host, store=store)
    nbytes = partition_bytes(LOG2)
    n = nbytes // 96
    dag, run = "proof_run", "gpu-pinned-vs-pageable"
    add_run(store, dag, run, [1.0] * 4, host=host, device="cuda:0", calibrate_gbps=None)
    pool = StagingPool(nbytes + (1 << 20), pinned=True)
    measured = {}
    with pool.acquire(nbytes) as buf:
        pinned = buf.view(np.uint64, (3, n, 4))
        pinned[...] = 7
        pageable = np.full((3, n, 4), 7, dtype=np.uint64)
        for p, src in enumerate((pinned, pinned, pageable, pageable)):
            ms, kinds = 0.0, set()
            for v in src:
                _, tr = gpu_mod.h2d(np.ascontiguousarray(v))
                ms += tr.ms
                kinds.add(tr.kind)
            (kind,) = kinds
            measured[p] = (ms, kind)
            store.record_transfers([dict(dag_id=dag, run_id=run, task_id="partition.prove_gpu", map_index=p,
                                         partition=p, try_number=1, direction="h2d", bytes=nbytes, memory_kind=kind,
                                         duration_s=ms / 1e3)])
    print("calibrated GB/s at 2^22:", round(cal[-1]["gbps"], 1), "measured ms:", measured)
    assert [measured[p][1] for p in range(4)] == ["pinned", "pinned", "pageable", "pageable"]
    out = check_run(store, dag, run, H2DCheckConfig(), out_dir=tmp_path, data_docs=False)
    flags = {f["partition"]: f for f in out["flags"]}
    assert set(flags) == {2, 3}, out["flags"]
    for p in (2, 3):
        assert "x the expected time" in flags[p]["reason"] and flags[p]["measured_ms"] > 3 * flags[p]["expected_ms"]
    store.dispose()
