"""The proof-run operators: validate -> setup -> prepare_scratch -> per partition
(synthesize -> stage -> prove_gpu -> finalize_partition) -> finalize_run, and the
cleanup_scratch teardown.

Each is a thin adapter over ``prover``: it reads its inputs from the run's scratch
directory (paths come through XCom, never the data), calls ``prover``, writes its outputs
atomically back to scratch, and records its phases in the timing store (one row per
phase, plus a ``task`` row spanning the whole execution, also when it fails). ``prover``
is imported inside ``execute`` only, so DAG files stay light to parse.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from proofflow import settings
from proofflow.airflow.params import InvalidParams, validate_params
from proofflow.airflow.operators.recorder import Recorder, get_store

log = logging.getLogger(__name__)

FR_BYTES = 32


def _epoch(t) -> float | None:
    if t is None:
        return None
    if isinstance(t, (int, float)):
        return float(t)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def _device(config: dict | None) -> str:
    """The device a task computes on: only prove_gpu uses the GPU, and it records the one
    it used; every other task runs on the host."""
    return "cpu"


def params_dir(config: dict) -> Path:
    return settings.params_cache() / f"{config['circuit']}-log2_{config['log2']}-seed{config['seed']}"


def bundle_dir(dag_id: str, run_id: str) -> Path:
    from proofflow.prover import scratch
    return settings.bundles_root() / scratch.safe_name(dag_id) / scratch.safe_name(run_id)


class ProofflowOperator(BaseOperator):
    """Base: a Recorder around ``run``; the rows are written even when ``run`` fails."""

    template_fields = ("config", "partition")
    ui_color = "#e8f0fe"

    def __init__(self, *, config=None, partition=None, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.partition = partition

    def run(self, context, rec: Recorder):
        raise NotImplementedError

    def execute(self, context):
        part = self.partition if isinstance(self.partition, int) else None
        rec = Recorder(context, partition=part, device=_device(self.config if isinstance(self.config, dict) else None))
        # The ``task`` row spans the attempt from Airflow's start of the task instance (the
        # process start included) to the end of execute: pool-slot holders never overlap.
        now = time.time()
        t0 = min(_epoch(getattr(context["ti"], "start_date", None)) or now, now)
        failed = True
        try:
            out = self.run(context, rec)
            failed = False
            return out
        finally:
            rec.add("task", t0, time.time())
            try:
                rec.flush()
            except Exception:
                if not failed:
                    raise
                log.exception("could not write timing rows of a failed task")

    def run_scratch(self, context) -> Path:
        from proofflow.prover import scratch
        ti = context["ti"]
        return scratch.run_dir(ti.dag_id, ti.run_id)

    def partition_scratch(self, context) -> Path:
        from proofflow.prover import scratch
        ti = context["ti"]
        return scratch.partition_dir(ti.dag_id, ti.run_id, self.partition)


def _require(path: Path, what: str) -> Path:
    if not Path(path).exists():
        raise AirflowFailException(
            f"{what} {path} is missing from the run's scratch directory (removed by cleanup, or the upstream task "
            "did not finish): clear the partition's tasks from synthesize to rebuild it")
    return Path(path)


class ValidateOperator(ProofflowOperator):
    """Checks the run's params before any work; fails (no retry) with one clear message.
    Returns the normalized config (backend 'auto' resolved, partition_ids listed)."""

    ui_color = "#fce8e6"

    def run(self, context, rec):
        ti = context["ti"]
        params = dict(context["params"])
        with rec.phase("validate"):
            try:
                config = validate_params(params)
            except InvalidParams as exc:
                log.error("%s", exc)
                raise AirflowFailException(str(exc)) from None
        rec.device = _device(config)
        dag_run = context.get("dag_run")
        started = getattr(dag_run, "start_date", None) or dt.datetime.now(dt.timezone.utc)
        get_store().upsert_run(ti.dag_id, ti.run_id, circuit=config["circuit"], log2=config["log2"],
                               partitions=config["partitions"], backend=config["backend"],
                               staging=config["staging"], seed=config["seed"], state="running",
                               started_at=started, host=rec.host)
        log.info("proof run %s: %s", ti.run_id, json.dumps(config))
        return config


class SetupOperator(ProofflowOperator):
    """The proving key, cached per (circuit, log2, seed): created once, atomically (a
    temporary directory renamed into place) under a lock file, then reused by every run."""

    def run(self, context, rec):
        from proofflow.prover.circuits import get_circuit
        from proofflow.prover.groth16 import generator
        from proofflow.prover.groth16.data_structures import KeyFormatError, ProvingKey
        cfg = self.config
        final = params_dir(cfg)
        final.parent.mkdir(parents=True, exist_ok=True)
        lock_path = final.parent / f".{final.name}.lock"
        with rec.phase("lock_wait"):
            lock = open(lock_path, "w")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for stale in final.parent.glob(f".{final.name}.*"):  # left by a setup killed mid-save (we hold the lock)
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
            cached = False
            if (final / "params.json").exists():
                with rec.phase("load_cached"):
                    try:
                        pk = ProvingKey.load(final)  # checks every table's digest
                        cached = pk.circuit == cfg["circuit"] and pk.log2 == cfg["log2"]
                    except KeyFormatError as exc:
                        log.warning("cached proving key %s is unusable (%s): regenerating", final, exc)
            if not cached:
                with rec.phase("setup"):
                    pk = generator.setup(get_circuit(cfg["circuit"], cfg["log2"]), cfg["seed"], backend=cfg["backend"])
                with rec.phase("save"):
                    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
                    try:
                        pk.save(tmp)
                        if final.exists():
                            shutil.rmtree(final)
                        os.replace(tmp, final)
                    finally:
                        if tmp.exists():
                            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
        log.info("proving key %s (%s)", final, "cached" if cached else "generated")
        return {"params_dir": str(final), "cached": cached}


class PrepareScratchOperator(ProofflowOperator):
    """Creates the run's scratch directory (the setup of the cleanup teardown) and returns
    the partition ids the per-partition task group is mapped over."""

    def run(self, context, rec):
        from proofflow.prover import scratch
        with rec.phase("prepare"):
            d = self.run_scratch(context)
            d.mkdir(parents=True, exist_ok=True)
            scratch.write_json(d / "run.json", {"config": self.config, "run_id": context["ti"].run_id})
        return list(self.config["partition_ids"])


class SynthesizeOperator(ProofflowOperator):
    """Witness and a/b/c evaluation vectors of one partition, to scratch."""

    def run(self, context, rec):
        from proofflow.prover import scratch
        import numpy as np
        from proofflow.prover.circuits import get_circuit
        from proofflow.prover.groth16 import r1cs_to_qap
        cfg = self.config
        circuit = get_circuit(cfg["circuit"], cfg["log2"])
        with rec.phase("synthesis"):
            cs = circuit.constraint_system
            inst = circuit.instance(cfg["seed"], self.partition)
        with rec.phase("witness_map"):
            abc = np.stack(r1cs_to_qap.witness_map(cs, inst.witness))
        d = self.partition_scratch(context)
        with rec.phase("write"):
            scratch.save_npy(d / "witness.npy", inst.witness)
            scratch.save_npy(d / "abc.npy", abc)
            scratch.write_json(d / "public.json", [hex(x) for x in inst.public_inputs])
        return {"partition": self.partition, "dir": str(d), "n": int(abc.shape[1]),
                "public_inputs": [hex(x) for x in inst.public_inputs]}


def _staging_pool(cfg: dict, nbytes: int, pinned: bool = False):
    """A staging pool for one task's buffer (pinned only when asked for)."""
    from proofflow.prover.staging import StagingPool
    budget = max(int(os.environ.get("PROOFFLOW_STAGING_BUDGET", 8 << 30)), nbytes + (1 << 16))
    return StagingPool(budget, pinned=pinned)


class StageOperator(ProofflowOperator):
    """Packs a partition's a/b/c into the device layout (one contiguous (3, n, 4) Fr block)
    and writes it to scratch as raw bytes, which prove_gpu's side (the device's prover
    service, or the task itself) reads straight into a pinned staging buffer. Records the
    packing copy (``h2s``, host memory)."""

    template_fields = ("config", "partition", "synthesized")

    def __init__(self, *, synthesized=None, **kwargs):
        super().__init__(**kwargs)
        self.synthesized = synthesized

    def run(self, context, rec):
        from proofflow.prover import scratch
        import numpy as np
        cfg = self.config
        d = Path(self.synthesized["dir"])
        with rec.phase("read"):
            abc = np.load(_require(d / "abc.npy", "a/b/c vectors"), mmap_mode="r", allow_pickle=False)
            n = abc.shape[1]
            abc = np.ascontiguousarray(abc)
        nbytes = 3 * n * FR_BYTES
        pool = _staging_pool(cfg, nbytes)
        with rec.phase("stage"):
            with pool.acquire(nbytes, timeout=600) as buf:
                view = buf.view(np.uint64, (3, n, 4))
                t0 = time.time()
                np.copyto(view, abc)
                rec.transfer("h2s", nbytes, "pageable", time.time() - t0, start=t0)
                out = d / "abc.staged"
                with scratch.atomic_path(out) as tmp:
                    view.tofile(tmp)
        return {"partition": self.partition, "staged": str(out), "n": int(n), "bytes": nbytes}


def _queued_when(ti) -> float | None:
    """The task instance's queued time from Airflow's REST API, when PROOFFLOW_AIRFLOW_API
    names the API server (task code may not read the metadata DB, and the task context has
    no queued time). Optional bearer token: PROOFFLOW_AIRFLOW_API_TOKEN. Best effort."""
    base = os.environ.get("PROOFFLOW_AIRFLOW_API")
    if not base:
        return None
    import urllib.parse
    import urllib.request
    q = urllib.parse.quote
    mi = ti.map_index if ti.map_index is not None else -1
    path = (f"/api/v2/dags/{q(ti.dag_id, safe='')}/dagRuns/{q(ti.run_id, safe='')}/taskInstances/"
            f"{q(ti.task_id, safe='')}" + (f"/{mi}" if mi >= 0 else ""))
    req = urllib.request.Request(base.rstrip("/") + path)
    if os.environ.get("PROOFFLOW_AIRFLOW_API_TOKEN"):
        req.add_header("Authorization", f"Bearer {os.environ['PROOFFLOW_AIRFLOW_API_TOKEN']}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            value = json.loads(r.read()).get("queued_when")
        return _epoch(dt.datetime.fromisoformat(value.replace("Z", "+00:00"))) if value else None
    except Exception as exc:  # timing is best effort: never fail a proof over it
        log.warning("could not read queued_when from %s: %s", base, exc)
        return None


class ProveGpuOperator(ProofflowOperator):
    """The proof of one partition, in pool ``gpu`` (the pool's slots bound the partitions in
    flight per GPU). With the prover service (default) the task hands the partition to the
    device's long-lived service and waits: the service prefetches its inputs into pinned
    memory while the device finishes the partition before, so the device goes from one
    partition to the next without Airflow's hand-off in between; in-process
    (PROOFFLOW_GPU_SERVICE=0) the task proves itself, paying the device's start-up.

    Phase rows: pool_wait (from the upstream ``stage`` finishing, i.e. the task becoming
    ready, to this task instance's start: Airflow keeps a task waiting for a pool slot in
    'scheduled'), queue_wait (queued -> start, from the REST API when PROOFFLOW_AIRFLOW_API is
    set), then the service's: service_start (when this task started it), key_load,
    staging_wait, prefetch, mutex_wait (waiting for the device), key_upload, h2d, ntt, msm,
    msm_g2_wait (a host G2 MSM), assemble; in-process: load_key, load, h2d, ntt, msm,
    msm_g2_wait, assemble; then finalize (the proof written). Transfers: h2d (a/b/c) and
    h2d_witness, timed on the device."""

    template_fields = ("config", "partition", "staged", "setup_result")

    def __init__(self, *, staged=None, setup_result=None, ready_after_task_id: str | None = None, **kwargs):
        kwargs.setdefault("pool", settings.GPU_POOL)
        kwargs.setdefault("queue", settings.gpu_queue())  # CeleryExecutor: only the GPU workers serve it
        super().__init__(**kwargs)
        self.staged = staged
        self.setup_result = setup_result
        self.ready_after_task_id = ready_after_task_id

    def run(self, context, rec):
        from proofflow.prover import scratch
        staged = _require(Path(self.staged["staged"]), "staged a/b/c block")
        witness = _require(staged.parent / "witness.npy", "witness")
        # the partition goes to the device first; the waits before this task started are
        # history, looked up (timing store, REST API) after it
        try:
            if settings.gpu_service_enabled():
                proof = self._via_service(rec, staged, witness)
            else:
                proof = self._in_process(rec, staged, witness)
            fin0 = time.time()
            out = scratch.write_bytes(staged.parent / "proof.bin", proof)
            rec.add("finalize", fin0, time.time())
        except BaseException:  # a failed try's waits are recorded too, never hiding its error
            try:
                self._record_waits(context["ti"], rec)
            except Exception:
                log.exception("could not look up the waits of a failed prove_gpu try")
            raise
        self._record_waits(context["ti"], rec)
        return {"partition": self.partition, "proof": str(out), "device": rec.device}

    def _record_waits(self, ti, rec) -> None:
        started = _epoch(getattr(ti, "start_date", None)) or time.time()
        ready = None
        if self.ready_after_task_id:
            ready = _epoch(get_store().latest_end(ti.dag_id, ti.run_id, self.ready_after_task_id, rec.map_index))
        rec.add("pool_wait", min(ready if ready is not None else started, started), started)
        queued = _queued_when(ti)
        if queued is not None:
            rec.add("queue_wait", min(queued, started), started)

    def _via_service(self, rec, staged: Path, witness: Path) -> bytes:
        from proofflow.prover.service.client import ServiceClient, ServiceError, least_busy
        cfg = self.config
        devices = settings.gpu_devices()
        device = least_busy(cfg["backend"], devices, prefer=self.partition) if len(devices) > 1 else devices[0]
        client = ServiceClient(cfg["backend"], device)
        t0 = time.time()
        try:
            took = client.ensure_running()
            if took is not None:
                rec.add("service_start", t0, t0 + took)
            reply = client.prove({
                "params_dir": self.setup_result["params_dir"], "circuit": cfg["circuit"], "log2": cfg["log2"],
                "abc_path": str(staged), "n": int(self.staged["n"]), "witness_path": str(witness),
                "staging": cfg["staging"], "standin_s": settings.standin_gpu_s(),
                "job_id": f"{rec.run_id}/{self.partition}/{rec.try_number}"})
        except ServiceError as exc:
            if exc.error_type == "JobError":  # the inputs are wrong: a retry cannot help
                raise AirflowFailException(f"partition {self.partition}: {exc}") from None
            raise RuntimeError(f"partition {self.partition}: prover service: {exc}") from None
        rec.device = reply["device"]
        spans = {phase: (s, e) for phase, s, e in reply["spans"]}
        for phase, (s, e) in spans.items():
            rec.add(phase, s, e)
        for direction, (nbytes, ms, kind) in reply["transfers"].items():
            rec.transfer(direction, nbytes, kind, ms / 1e3, start=spans.get("h2d", (None,))[0])
        return bytes.fromhex(reply["proof"])

    def _in_process(self, rec, staged: Path, witness_path: Path) -> bytes:
        import numpy as np
        from proofflow.prover.backend import get_backend
        from proofflow.prover.backend.standin import StandinBackend
        from proofflow.prover.circuits import get_circuit
        from proofflow.prover.groth16 import prover as groth16_prover
        from proofflow.prover.groth16.data_structures import ProvingKey
        from proofflow.prover.timing import PhaseTimer
        cfg = self.config
        n = int(self.staged["n"])
        with rec.phase("load_key"):
            pk = ProvingKey.load(self.setup_result["params_dir"], verify_digests=False)  # checked by setup
            cs = get_circuit(cfg["circuit"], cfg["log2"]).constraint_system
            backend = get_backend(cfg["backend"])
        if backend.name == "gpu":
            import cupy
            rec.device = f"cuda:{cupy.cuda.Device().id}"
        standin = settings.standin_gpu_s()
        if standin:
            backend = StandinBackend(backend, standin)
        abc_bytes, w_bytes = 3 * n * FR_BYTES, cs.num_variables * FR_BYTES
        pool = _staging_pool(cfg, abc_bytes + w_bytes, pinned=cfg["backend"] == "gpu" and cfg["staging"] == "pinned")
        timer, transfers = PhaseTimer(), {}
        with pool.acquire(abc_bytes + w_bytes, timeout=600) as buf:
            with rec.phase("load"):
                block = buf.array[:abc_bytes].view(np.uint64).reshape(3, n, 4)
                with open(staged, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    if size != abc_bytes or f.readinto(memoryview(block).cast("B")) != abc_bytes:
                        raise AirflowFailException(
                            f"{staged}: {size} bytes, expected {abc_bytes} (3 x {n} Fr elements)")
                w = buf.array[abc_bytes:].view(np.uint64).reshape(-1, 4)
                try:
                    src = np.load(witness_path, mmap_mode="r", allow_pickle=False)
                except (OSError, ValueError, EOFError) as exc:
                    raise AirflowFailException(f"cannot read the witness {witness_path}: {exc}") from None
                if not isinstance(src, np.ndarray) or src.shape != w.shape or src.dtype != np.uint64:
                    raise AirflowFailException(f"{witness_path}: witness of {getattr(src, 'dtype', '?')} "
                                               f"{getattr(src, 'shape', '?')}, expected {w.shape} uint64")
                np.copyto(w, src)
            abc = (block[0], block[1], block[2])
            proof = groth16_prover.prove(pk, cs, w, backend, abc=abc, timer=timer, transfers=transfers,
                                         memory_kind=cfg["staging"])
            try:  # inside the block: w and a/b/c are views into the staging buffer
                groth16_prover.check_proof(pk, cs, w, proof, abc)
            except groth16_prover.ProofCheckFailed as exc:
                raise AirflowFailException(f"partition {self.partition}: no proof written: {exc}") from None
        for s in timer.spans:
            rec.add(s.phase, s.start, s.end)
        h2d0 = next((s.start for s in timer.spans if s.phase == "h2d"), None)
        for direction, tr in transfers.items():
            rec.transfer(direction, tr.nbytes, tr.kind, tr.ms / 1e3, start=h2d0)
        return proof.to_bytes()


class FinalizePartitionOperator(ProofflowOperator):
    """Verifies the partition's proof and publishes it into the run's bundle directory."""

    template_fields = ("config", "partition", "proved", "synthesized", "setup_result")

    def __init__(self, *, proved=None, synthesized=None, setup_result=None, **kwargs):
        super().__init__(**kwargs)
        self.proved, self.synthesized, self.setup_result = proved, synthesized, setup_result

    def run(self, context, rec):
        from proofflow.prover import bundle
        from proofflow.prover.groth16 import verifier
        from proofflow.prover.groth16.data_structures import Proof, VerifyingKey
        ti = context["ti"]
        inputs = [int(x, 16) for x in self.synthesized["public_inputs"]]
        with rec.phase("verify"):
            path = _require(Path(self.proved["proof"]), "proof")
            try:
                proof = Proof.from_bytes(path.read_bytes())
            except ValueError as exc:  # KeyFormatError included: a wrong length
                raise AirflowFailException(f"partition {self.partition}: {path} is not a proof ({exc}): clear the "
                                           "partition's tasks from prove_gpu to prove it again") from None
            vk = VerifyingKey.load(Path(self.setup_result["params_dir"]) / "vk.json")
            ok = verifier.verify(vk, inputs, proof)
        if not ok:
            raise AirflowFailException(f"partition {self.partition}: the proof does not verify")
        with rec.phase("publish"):
            out = bundle_dir(ti.dag_id, ti.run_id)
            out.mkdir(parents=True, exist_ok=True)
            path = bundle.write_proof(out, self.partition, proof)
        return {"partition": self.partition, "proof": str(path), "public_inputs": self.synthesized["public_inputs"],
                "verified": True}


class FinalizeRunOperator(ProofflowOperator):
    """Collects the partitions' proofs, writes the bundle manifest (last: its presence marks
    the bundle complete), verifies the whole bundle, writes the run summary, records the run
    and removes the scratch directory."""

    template_fields = ("config", "partitions_done", "setup_result")

    def __init__(self, *, partitions_done=None, setup_result=None, **kwargs):
        super().__init__(**kwargs)
        self.partitions_done, self.setup_result = partitions_done, setup_result

    def run(self, context, rec):
        from proofflow.prover import scratch
        from proofflow.prover import bundle
        from proofflow.prover.groth16.data_structures import VerifyingKey
        cfg = self.config
        ti = context["ti"]
        # A mapped group of one partition hands its only result over unwrapped (Airflow 3.3)
        results = [self.partitions_done] if isinstance(self.partitions_done, dict) else self.partitions_done
        done = sorted((dict(x) for x in results), key=lambda x: x["partition"])
        if [x["partition"] for x in done] != list(range(cfg["partitions"])):
            raise AirflowFailException(f"expected partitions 0..{cfg['partitions'] - 1}, got "
                                       f"{[x['partition'] for x in done]}")
        out = bundle_dir(ti.dag_id, ti.run_id)
        for tmp in scratch.stale_temporaries(out):  # of finalize_partition attempts killed mid-write
            tmp.unlink(missing_ok=True)
        with rec.phase("manifest"):
            vk = VerifyingKey.load(Path(self.setup_result["params_dir"]) / "vk.json")
            entries = [(x["partition"], [int(v, 16) for v in x["public_inputs"]]) for x in done]
            bundle.write_manifest(out, cfg["circuit"], cfg["log2"], vk, entries)
        with rec.phase("verify"):
            results = bundle.verify_bundle(out)
        verified = sum(r.ok for r in results)
        if verified != cfg["partitions"]:
            bad = [r.partition for r in results if not r.ok]
            raise AirflowFailException(f"{verified}/{cfg['partitions']} proofs verify; failing partitions: {bad}")
        dag_run = context.get("dag_run")
        started = _epoch(getattr(dag_run, "start_date", None))
        store = get_store()
        if started is None:
            run_row = store.run(ti.dag_id, ti.run_id) or {}
            started = _epoch(run_row.get("started_at")) or time.time()
        now = time.time()
        summary = {"dag_id": ti.dag_id, "run_id": ti.run_id, "circuit": cfg["circuit"], "log2": cfg["log2"],
                   "partitions": cfg["partitions"], "backend": cfg["backend"], "staging": cfg["staging"],
                   "seed": cfg["seed"], "proofs_verified": verified, "bundle_dir": str(out),
                   "wall_s": round(now - started, 3)}
        with rec.phase("summary"):
            scratch.write_json(out / "run-summary.json", summary)
            store.upsert_run(ti.dag_id, ti.run_id, state="success", finished_at=now, wall_s=summary["wall_s"],
                             proofs_verified=verified, bundle_dir=str(out))
        with rec.phase("cleanup"):
            scratch.remove_tree(self.run_scratch(context))
        return summary


class CleanupScratchOperator(ProofflowOperator):
    """Teardown: removes the run's scratch directory whatever happened upstream, and marks
    the run failed in the timing store unless finalize_run recorded success."""

    ui_color = "#f1f3f4"

    def run(self, context, rec):
        from proofflow.prover import scratch
        ti = context["ti"]
        with rec.phase("cleanup"):
            removed = scratch.remove_tree(self.run_scratch(context))
            store = get_store()
            row = store.run(ti.dag_id, ti.run_id)
            if row is None or row.get("state") != "success":
                store.upsert_run(ti.dag_id, ti.run_id, state="failed", finished_at=time.time())
        return {"removed": removed}
