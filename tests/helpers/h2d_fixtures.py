"""Timing rows of a synthetic proof run for the H2D check and alert tests."""
import datetime as dt

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
NB = 100_000_000  # bytes per partition's H2D in the synthetic run
TASKS = ("synthesize", "stage", "prove_gpu", "finalize_partition")


def add_run(store, dag_id, run_id, h2d_ms, host="h1", device="cuda:0", memory_kind="pinned", calibrate_gbps=10.0,
            missing=()):
    """A finished run of len(h2d_ms) partitions; partition p moves NB bytes in h2d_ms[p] ms.
    ``missing``: (partition, task) pairs left out. Stores a calibration of ``calibrate_gbps``
    for (host, device) unless it is None."""
    n = len(h2d_ms)
    rows = [dict(dag_id=dag_id, run_id=run_id, task_id="validate", map_index=-1, try_number=1, partition=None,
                 phase="task", host=host, device=device, start=T0, end=T0 + dt.timedelta(seconds=1))]
    for p in range(n):
        for i, task in enumerate(TASKS):
            if (p, task) in missing:
                continue
            a = T0 + dt.timedelta(seconds=1 + 4 * p + i)
            rows.append(dict(dag_id=dag_id, run_id=run_id, task_id=f"partition.{task}", map_index=p, try_number=1,
                             partition=p, phase="task", host=host, device=device, start=a,
                             end=a + dt.timedelta(seconds=1)))
    store.record_timings(rows)
    store.record_transfers([dict(dag_id=dag_id, run_id=run_id, task_id="partition.prove_gpu", map_index=p, partition=p,
                                 try_number=1, direction="h2d", bytes=NB, memory_kind=memory_kind,
                                 start=T0 + dt.timedelta(seconds=3 + 4 * p), duration_s=ms / 1e3)
                            for p, ms in enumerate(h2d_ms) if (p, "h2d") not in missing])
    store.upsert_run(dag_id, run_id, partitions=n, state="success", proofs_verified=n, backend="gpu",
                     staging=memory_kind, log2=20, started_at=T0)
    if calibrate_gbps is not None:
        store.record_calibration([dict(host=host, device=device, memory_kind="pinned", method="test", bytes=b,
                                       reps=1, median_ms=b / calibrate_gbps / 1e6, best_ms=None, gbps=calibrate_gbps,
                                       batch=f"b-{run_id}") for b in (NB // 100, NB)])


DEVICE_PHASES_S = (("pool_wait", 0.2), ("ntt", 0.2), ("msm", 0.4), ("d2h", 0.01))  # besides h2d


def add_device_phases(store, dag_id, run_id, n, h2d_ms, devices=("cuda:0",)):
    """prove_gpu's phase rows (pool_wait, h2d, ntt, msm, d2h) for partitions 0..n-1 of a run
    made by ``add_run``, inside each partition's prove_gpu task row; partition p on
    ``devices[p % len(devices)]``."""
    rows = []
    for p in range(n):
        a = T0 + dt.timedelta(seconds=1 + 4 * p + 2)
        for ph, d in (DEVICE_PHASES_S[:1] + (("h2d", h2d_ms[p] / 1e3),) + DEVICE_PHASES_S[1:]):
            rows.append(dict(dag_id=dag_id, run_id=run_id, task_id="partition.prove_gpu", map_index=p, try_number=1,
                             partition=p, phase=ph, host="h1", device=devices[p % len(devices)], start=a,
                             end=a + dt.timedelta(seconds=d)))
            a += dt.timedelta(seconds=d)
    store.record_timings(rows)
