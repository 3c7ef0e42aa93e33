"""The proof-run operators: validate -> setup -> prepare_scratch -> per partition
(synthesize -> stage -> prove_gpu -> finalize_partition) -> finalize_run, and the
cleanup_scratch teardown.

Each ``run`` is a few lines over ``proofflow.prover.pipeline``: the partition's files live
in the run's scratch directory (paths come through XCom, never the data), and every phase
is recorded in the timing store (one row per phase, plus a ``task`` row spanning the whole
execution, also when it fails). A partition's unusable inputs (``errors.InputError``) or a
proof that does not check fail the task without a retry: the same inputs would fail again.
The engine is imported inside ``run`` only, so DAG files stay light to parse.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import time
from functools import cached_property
from pathlib import Path

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException, AirflowTaskTimeout

from proofflow import settings, spec
from proofflow.spec import RunConfig
from proofflow.airflow import task_end
from proofflow.airflow.hooks.timing import TimingStoreHook
from proofflow.airflow.operators.recorder import Recorder
from proofflow.phases import Phase

log = logging.getLogger(__name__)


def _epoch(t) -> float | None:
    if t is None:
        return None
    if isinstance(t, (int, float)):
        return float(t)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def bundle_dir(dag_id: str, run_id: str) -> Path:
    from proofflow.prover import layout
    return layout.bundle_dir(dag_id, run_id)


class ProofflowOperator(BaseOperator):
    """Base: a Recorder around ``run``; the rows are written even when ``run`` fails. Bad
    params or inputs and proofs that do not check become AirflowFailException (no retry). A
    try that fails for good records the run's cause of failure (``spec.RunFailure``)."""

    template_fields = ("config",)
    ui_color = "#e8f0fe"

    def __init__(self, *, config=None, **kwargs):
        super().__init__(**kwargs)
        self.config = config

    @property
    def run_config(self) -> RunConfig:
        """The run's config, as validate returned it through XCom."""
        return RunConfig.from_dict(self.config)

    @cached_property
    def store(self):
        """The timing store, looked up once a task (a task of a chunk writes a partition's rows
        at a time, and the connection's lookup is a request to the API server)."""
        return TimingStoreHook().get_store()

    def run(self, context, rec: Recorder):
        raise NotImplementedError

    def execute(self, context):
        return self._attempt(context, None, lambda rec: self.run(context, rec), _task_start(context))

    def _attempt(self, context, part: int | None, work, t0: float):
        """``work(rec)`` with the rows of ``part`` (None: a task of the whole run), whose
        ``task`` row spans ``t0`` to the end of the work: pool-slot holders never overlap."""
        from proofflow.prover.errors import InputError, ProofCheckFailed
        rec = Recorder(context, partition=part)
        failed = True
        try:
            out = work(rec)
            failed = False
            return out
        except (InputError, ProofCheckFailed, spec.InvalidParams) as exc:
            self._record_failure(rec, exc, final=True)
            where = f"partition {part}: " if part is not None else ""
            raise AirflowFailException(f"{where}{exc}") from None
        except (Exception, AirflowTaskTimeout) as exc:  # the timeout is a BaseException (the task runner's alarm)
            self._record_failure(rec, exc, final=isinstance(exc, AirflowFailException)
                                 or rec.try_number > (self.retries or 0))
            raise
        finally:
            rec.add(Phase.TASK, t0, time.time())
            try:
                rec.flush(self.store)
            except Exception:
                if not failed:
                    raise
                log.exception("could not write timing rows of a failed task")

    def _record_failure(self, rec: Recorder, exc: BaseException, final: bool) -> None:
        """The run's cause of failure into its runs row, when this try fails for good (no
        retry follows) and neither another task's failure nor finalize_run's success is
        there before it: the first failure is the cause. A try past its execution_timeout
        says so, with the timeout. A skip (validate's duplicate request) is no failure."""
        if not final or isinstance(exc, AirflowSkipException):
            return
        try:
            part = rec.partition
            cfg = RunConfig.from_dict(self.config) if isinstance(self.config, dict) else None
            input = cfg.inputs[part] if cfg and cfg.inputs and part is not None else None
            if isinstance(exc, spec.InvalidInput):  # validate names the partition whose input it refuses
                part, input = exc.partition, exc.input
            message = getattr(exc, "detail", None) or str(exc)
            if isinstance(exc, AirflowTaskTimeout):
                limit = self.execution_timeout.total_seconds() if self.execution_timeout else None
                message = task_end.explain(task_end.TaskEnd(timed_out=True, timeout_s=limit), self.task_id,
                                           rec.try_number, (self.retries or 0) + 1, rec.host)
            cause = spec.RunFailure(self.task_id, message, part,
                                    spec.input_label(input, settings.current().run_input_roots))
            task_end.record(self.store, rec.dag_id, rec.run_id, cause)
        except Exception:  # never hide the task's own error
            log.exception("could not record the cause of the failure of %s", self.task_id)

    def run_scratch(self, context) -> Path:
        from proofflow.prover import layout
        ti = context["ti"]
        return layout.run_dir(ti.dag_id, ti.run_id)

    def run_bundle(self, context) -> Path:
        """The run's bundle while it is written: in its scratch, published by finalize_run."""
        return self.run_scratch(context) / "bundle"


def _task_start(context) -> float:
    """When Airflow started the task instance (its process start included), at the latest now."""
    now = time.time()
    return min(_epoch(getattr(context["ti"], "start_date", None)) or now, now)


class PartitionOperator(ProofflowOperator):
    """A task of the per-partition group, mapped over the run's chunks (``RunConfig.chunk_ids``):
    ``run_partition`` for each partition of its chunk in turn, each with its own timing rows
    and cause of failure, the first one's ``task`` row from the task's start, each next one's
    from the end of the one before. Returns their results, a list; ``upstream`` names the
    template field holding the upstream task's list, whose items go to ``run_partition`` in
    the same order."""

    template_fields = ("config", "chunk")
    upstream: str | None = None

    def __init__(self, *, chunk=None, **kwargs):
        super().__init__(**kwargs)
        self.chunk = chunk

    def run_partition(self, context, rec: Recorder, partition: int, item, first: bool):
        raise NotImplementedError

    def execute(self, context):
        parts = self.run_config.chunk(int(self.chunk))
        items = getattr(self, self.upstream) if self.upstream else [None] * len(parts)
        if len(items) != len(parts):
            raise AirflowFailException(f"chunk {self.chunk}: {len(items)} upstream results for partitions {parts}")
        out, t0 = [], _task_start(context)
        for i, (part, item) in enumerate(zip(parts, items)):
            out.append(self._attempt(context, part, lambda rec, part=part, item=item, first=i == 0:
                                     self.run_partition(context, rec, part, item, first), t0))
            t0 = time.time()
        return out

    def partition_scratch(self, context, partition: int) -> Path:
        from proofflow.prover import layout
        ti = context["ti"]
        return layout.partition_dir(ti.dag_id, ti.run_id, partition)


class ValidateOperator(ProofflowOperator):
    """Checks the run's params, every input's content against the circuit, and that the run
    fits this machine, before any work; fails
    (no retry) with one clear message.
    Returns the normalized config (backend and staging as they will really be used,
    partition_ids listed). A run whose request_id an earlier run holds is skipped here."""

    ui_color = "#fce8e6"

    def run(self, context, rec):
        from proofflow.prover import device, resources
        from proofflow.prover.circom.inputs import check_run_inputs
        ti = context["ti"]
        with rec.phase(Phase.VALIDATE):  # the params' domains, every input's content, then the fit to this
            # machine (disk, memory, staging); InvalidParams fails the task without a retry
            config = spec.validate_params(dict(context["params"]), gpu_available=device.available,
                                          fit_check=resources.fit_check, input_check=check_run_inputs)
        dag_run = context.get("dag_run")
        started = getattr(dag_run, "start_date", None) or dt.datetime.now(dt.timezone.utc)
        # what ran beside what was asked for: the dag run's conf keeps the request as typed
        row = dict(circuit=config.circuit, log2=config.log2, partitions=config.partitions, backend=config.backend,
                   staging=config.staging.value, backend_requested=config.backend_requested,
                   staging_requested=config.staging_requested.value, seed=config.seed, curve=config.curve,
                   state="running", started_at=started, host=rec.host)
        if config.request_id:
            self._claim(ti, config.request_id, row)
        else:
            self.store.upsert_run(ti.dag_id, ti.run_id, **row)
        log.info("proof run %s: %s", ti.run_id, json.dumps(config.to_dict()))
        return config.to_dict()

    def _claim(self, ti, request_id: str, row: dict) -> None:
        """The run's request held by this run, or the run skipped (the rest of it with it, but
        for the teardowns): an earlier run holds the request (``proofflow.timing.requests``),
        which the XCom ``request`` names for REST clients, as the run's note does."""
        from dataclasses import asdict
        from proofflow.timing.requests import claim
        served = claim(self.store, ti.dag_id, ti.run_id, request_id, row)
        if served is not None:
            ti.xcom_push(key="request", value=asdict(served))
            raise AirflowSkipException(served.line())


class SetupOperator(ProofflowOperator):
    """The proving key, cached per (circuit, log2, seed, curve): created once, atomically, under a
    lock file, then reused by every run."""

    def run(self, context, rec):
        from proofflow.prover import layout
        from proofflow.prover.keys import ensure_key
        cfg = self.run_config
        directory = layout.params_dir(cfg.circuit, cfg.log2, cfg.seed, cfg.curve)
        cached = ensure_key(directory, cfg.circuit, cfg.log2, cfg.seed, cfg.backend, rec, curve=cfg.curve)
        log.info("proving key %s (%s)", directory, "cached" if cached else "generated")
        return {"params_dir": str(directory), "cached": cached}


class PrepareScratchOperator(ProofflowOperator):
    """Creates the run's scratch directory (the setup of the cleanup teardown) and returns
    the chunk ids the per-partition task group is mapped over (``RunConfig.chunk_ids``)."""

    def run(self, context, rec):
        from proofflow.prover import files
        with rec.phase(Phase.PREPARE):
            d = self.run_scratch(context)
            d.mkdir(parents=True, exist_ok=True)
            files.write_json(d / "run.json", {"config": self.config, "run_id": context["ti"].run_id})
        return self.run_config.chunk_ids


def _holder(context, partition: int) -> str:
    from proofflow.prover import layout
    return layout.owner(context["ti"].dag_id, context["ti"].run_id, partition)


class SynthesizeOperator(PartitionOperator):
    """Witness and a/b/c evaluation vectors of each partition, written once into a
    shared-memory segment leased for the partition, from which the device uploads in place.
    On a host without the GPU (PROOFFLOW_STAGING_ENDPOINT set) the partition streams into
    the GPU host's shared staging instead (transfer ``net``)."""

    def run_partition(self, context, rec, partition, item, first):
        from proofflow.prover import pipeline
        from proofflow.prover.staging.shared import SharedStaging
        from proofflow.prover.circuits.by_name import get_circuit
        cfg = self.run_config
        input = cfg.inputs[partition] if cfg.inputs else None  # a registered circuit's
        (self.partition_scratch(context, partition) / "proof.bin").unlink(missing_ok=True)  # an earlier synthesis's
        circuit, holder = get_circuit(cfg.circuit, cfg.log2, cfg.curve), _holder(context, partition)
        current = settings.current()
        if current.staging_endpoint:
            out = pipeline.synthesize_remote(circuit, cfg.seed, partition, current.staging_endpoint,
                                             current.staging_token, holder, rec, input=input)
            rec.transfer("net", out.pop("stream_bytes"), "pageable", out.pop("stream_s"),
                         start=out.pop("stream_start"))
        else:
            out = pipeline.synthesize_shared(circuit, cfg.seed, partition, SharedStaging.from_settings(),
                                             holder, rec, input=input)
        return {"partition": partition, **out}


class StageOperator(PartitionOperator):
    """Readies each partition's segment for the device: the device's prover service maps it
    and page-locks it in place (once per segment: a reused one is already pinned), off the
    device's critical path; in-process (PROOFFLOW_GPU_SERVICE=0) the segment is only
    checked. Records the host copy of a/b/c between synthesis and the upload (``h2s``): 0
    bytes, with the pinning's seconds."""

    template_fields = ("config", "chunk", "synthesized")
    upstream = "synthesized"

    def __init__(self, *, synthesized=None, **kwargs):
        kwargs.setdefault("queue", settings.current().gpu_queue)  # the service is on the GPU's host
        super().__init__(**kwargs)
        self.synthesized = synthesized

    def run_partition(self, context, rec, partition, item, first):
        seg, holder = item["segment"], _holder(context, partition)
        with rec.phase(Phase.REGISTER):
            staged = _prover(self.run_config, partition).stage(seg, holder)
        rec.spans(staged.spans)
        rec.transfer("h2s", 0, staged.memory_kind, staged.seconds, start=staged.start)
        # the public inputs ride along to finalize_partition: one upstream XCom a task, as each
        # one inside the mapped group costs the task SDK an XCom read and two count requests
        return {"partition": partition, "segment": seg, "n": int(item["n"]), "bytes": int(item["bytes"]),
                "public_inputs": item["public_inputs"]}


def _prover(config: RunConfig, partition: int):
    from proofflow.prover.provers import prover_for
    current = settings.current()
    return prover_for(config, partition, current.gpu_service, current.gpu_devices, current.standin_gpu_s)


class ProveGpuOperator(PartitionOperator):
    """The proof of each partition of its chunk, in turn, in pool ``gpu`` (the pool's slots
    bound the chunks in flight per GPU). With the prover service (default) the task hands the partition's
    segment to the device's long-lived service and waits: the service uploads it from the
    page-locked segment on a copy stream while the device finishes the partition before, so
    the device goes from one partition to the next without Airflow's hand-off in between;
    in-process (PROOFFLOW_GPU_SERVICE=0) the task proves itself, paying the device's
    start-up and the segment's pinning. With the proof written (proof.bin, which a retry
    reuses), the segment goes back to the shared staging.

    Phase rows: pool_wait (from the upstream ``stage`` finishing, i.e. the task becoming
    ready, to this task instance's start: Airflow keeps a task waiting for a pool slot in
    'scheduled'), queue_wait (queued -> start, from the REST API when the connection
    proofflow_airflow_api is defined), then the service's: service_start (when this task
    started it), key_load, prefetch (the segment mapped), mutex_wait (waiting for the device;
    the upload, h2d, runs within it), key_upload, ntt, msm, msm_g2_wait (a host G2 MSM),
    assemble; in-process: key_load, load, h2d, ntt, msm, msm_g2_wait, assemble; then
    finalize (the proof written). Transfers: h2d (a/b/c) and h2d_witness, timed on the
    device."""

    template_fields = ("config", "chunk", "staged", "setup_result")
    upstream = "staged"

    def __init__(self, *, staged=None, setup_result=None, ready_after_task_id: str | None = None, **kwargs):
        kwargs.setdefault("pool", settings.GPU_POOL)
        kwargs.setdefault("queue", settings.current().gpu_queue)  # CeleryExecutor: only the GPU workers serve it
        super().__init__(**kwargs)
        self.staged = staged
        self.setup_result = setup_result
        self.ready_after_task_id = ready_after_task_id

    def run_partition(self, context, rec, partition, item, first):
        from proofflow.prover import files
        from proofflow.prover.staging.shared import SharedStaging
        segment = item["segment"]
        # the partition goes to the device first; the waits before this task started are
        # history, looked up (timing store, REST API) after it, and are the chunk's first partition's
        try:
            out = self.partition_scratch(context, partition) / "proof.bin"
            if out.exists():  # a try killed after its proof (the segment may be gone): phase "reused"
                rec.add(Phase.REUSED, time.time(), time.time())
            else:
                proved = _prover(self.run_config, partition).prove(
                    self.setup_result["params_dir"], segment, _holder(context, partition),
                    int(item["n"]), f"{rec.run_id}/{partition}/{rec.try_number}")
                if proved.evicted_keys:
                    log.info("the prover service on %s evicted proving key(s) %s to fit this one", proved.device,
                             ", ".join(proved.evicted_keys))
                rec.proved(proved)
                fin0 = time.time()
                files.write_bytes(out, proved.proof)
                rec.add(Phase.FINALIZE, fin0, time.time())
            SharedStaging.from_settings().release(segment)  # proved: the segment goes back
        finally:  # a failed try's waits are recorded too, never hiding its error
            try:
                if first:  # the chunk was ready when its upstream task ended, with its last partition
                    self._record_waits(context["ti"], rec, self.run_config.chunk(int(self.chunk))[-1])
            except Exception:
                log.exception("could not look up the waits of prove_gpu")
        return {"partition": partition, "proof": str(out), "device": rec.device,
                "public_inputs": item["public_inputs"]}

    def _record_waits(self, ti, rec, ready_partition: int) -> None:
        started = _epoch(getattr(ti, "start_date", None)) or time.time()
        ready = None
        if self.ready_after_task_id:
            ready = _epoch(self.store.latest_end(ti.dag_id, ti.run_id, self.ready_after_task_id, ready_partition))
        rec.add(Phase.POOL_WAIT, min(ready if ready is not None else started, started), started)
        queued = _queued_when(ti)
        if queued is not None:
            rec.add(Phase.QUEUE_WAIT, min(queued, started), started)


def _queued_when(ti) -> float | None:
    """The task instance's queued time from Airflow's REST API, when the connection
    proofflow_airflow_api names the API server (task code may not read the metadata DB, and
    the task context has no queued time). Best effort."""
    from proofflow.airflow.hooks.api import AirflowApiHook
    try:
        api = AirflowApiHook().get_conn()
    except Exception:  # no connection: no queue_wait row
        return None
    try:
        return api.queued_when(ti.dag_id, ti.run_id, ti.task_id, -1 if ti.map_index is None else ti.map_index)
    except Exception as exc:  # timing is best effort: never fail a proof over it
        log.warning("could not read queued_when from %s: %s", api.base, exc)
        return None


class FinalizePartitionOperator(PartitionOperator):
    """Verifies each partition's proof against its public inputs (both in prove_gpu's result)
    and writes it into the run's bundle in the run's scratch (finalize_run publishes it)."""

    template_fields = ("config", "chunk", "proved", "setup_result")
    upstream = "proved"

    def __init__(self, *, proved=None, setup_result=None, **kwargs):
        super().__init__(**kwargs)
        self.proved, self.setup_result = proved, setup_result

    @cached_property
    def verifying_key(self):
        """The run's verifying key, read once for the chunk."""
        from proofflow.prover.groth16.data_structures import VerifyingKey
        return VerifyingKey.load(Path(self.setup_result["params_dir"]) / "vk.json")

    def run_partition(self, context, rec, partition, item, first):
        from proofflow.prover import pipeline
        inputs = [int(x, 16) for x in item["public_inputs"]]
        with rec.phase(Phase.VERIFY):
            proof = pipeline.read_proof(item["proof"], self.run_config.curve)
            vk = self.verifying_key
        with rec.phase(Phase.PUBLISH):  # into the run's bundle in its scratch: finalize_run publishes it whole
            path = pipeline.publish(proof, vk, inputs, self.run_bundle(context), partition,
                                    snarkjs=self.run_config.circom)
        return {"partition": partition, "proof": str(path), "public_inputs": item["public_inputs"],
                "verified": True}


class FinalizeRunOperator(ProofflowOperator):
    """Collects the partitions' proofs, completes the bundle in the run's scratch (its
    manifest written last), verifies the whole bundle, writes the run summary, publishes the
    bundle whole into the bundles directory, records the run and removes the scratch."""

    template_fields = ("config", "partitions_done", "setup_result")

    def __init__(self, *, partitions_done=None, setup_result=None, **kwargs):
        super().__init__(**kwargs)
        self.partitions_done, self.setup_result = partitions_done, setup_result

    def run(self, context, rec):
        from proofflow.prover import files, layout, pipeline
        from proofflow.prover.staging.shared import SharedStaging
        from proofflow.prover.groth16.data_structures import VerifyingKey
        cfg, ti = self.run_config, context["ti"]
        # each chunk's list of its partitions' results; a mapped group of one chunk hands its
        # only result over unwrapped (Airflow 3.3)
        done = self.partitions_done
        chunks = [done] if done and isinstance(done[0], dict) else done
        results = [r for chunk in chunks for r in chunk]
        out = bundle_dir(ti.dag_id, ti.run_id)
        vk = VerifyingKey.load(Path(self.setup_result["params_dir"]) / "vk.json")
        store = self.store
        summary, started = self._summary(context, store, out)
        wall = lambda: round(time.time() - started, 3)  # noqa: E731
        summary["proofs_verified"] = pipeline.publish_bundle(
            self.run_bundle(context), out, cfg, vk, {int(x["partition"]): [int(v, 16) for v in x["public_inputs"]]
                                                     for x in results},
            lambda verified: summary.update(proofs_verified=verified, wall_s=wall()) or summary, rec)
        summary.setdefault("wall_s", wall())  # a retry that found the bundle published
        with rec.phase(Phase.SUMMARY):
            store.upsert_run(ti.dag_id, ti.run_id, state="success", finished_at=time.time(), wall_s=summary["wall_s"],
                             proofs_verified=summary["proofs_verified"], bundle_dir=str(out))
        with rec.phase(Phase.CLEANUP):
            files.remove_tree(self.run_scratch(context))
            SharedStaging.from_settings().release_owned(layout.run_owner(ti.dag_id, ti.run_id))
        return summary

    def _summary(self, context, store, out: Path) -> tuple[dict, float]:
        """The run summary's figures known before the bundle is, and the run's start (epoch)."""
        cfg, ti = self.run_config, context["ti"]
        started = _epoch(getattr(context.get("dag_run"), "start_date", None))
        if started is None:
            started = _epoch((store.run(ti.dag_id, ti.run_id) or {}).get("started_at")) or time.time()
        return {"dag_id": ti.dag_id, "run_id": ti.run_id, "circuit": cfg.circuit, "log2": cfg.log2,
                "partitions": cfg.partitions, "backend": cfg.backend, "staging": cfg.staging.value,
                "backend_requested": cfg.backend_requested, "staging_requested": cfg.staging_requested.value,
                "seed": cfg.seed, "curve": cfg.curve, "bundle_dir": str(out)}, started


class CleanupScratchOperator(ProofflowOperator):
    """Teardown: whatever happened upstream, has this host's prover services drop the run's
    jobs still waiting for the device (a run marked failed in the UI or the REST API: its
    partitions' tasks were stopped), releases its staging leases, removes its scratch
    directory, and marks the run failed in the timing store unless finalize_run recorded
    success (or validate a duplicate request). A run stopped from outside (``verdict_task_id``,
    check_h2d, skipped) gets its cause recorded before its jobs are dropped: the failures of
    the tasks that waited for them are its effect, not its cause."""

    ui_color = "#f1f3f4"

    def __init__(self, *, verdict_task_id: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.verdict_task_id = verdict_task_id

    def run(self, context, rec):
        from proofflow.airflow.cancel import release
        from proofflow.timing.store import SERVED_STATES
        ti = context["ti"]
        with rec.phase(Phase.CLEANUP):
            self._record_stop(ti)
            replies, _, removed = release(ti.dag_id, ti.run_id)
            for reply in replies:
                if reply.dropped:
                    log.warning("the prover service on %s dropped %d job(s) of this run before the device",
                                reply.device, reply.dropped)
            store = self.store
            row = store.run(ti.dag_id, ti.run_id)
            if row is None or row.get("state") not in SERVED_STATES:
                store.upsert_run(ti.dag_id, ti.run_id, state="failed", finished_at=time.time())
        return {"removed": removed}

    def _record_stop(self, ti) -> None:
        """A run stopped from outside gets its cause (``cancel.MARKED_FAILED``; the first cause
        stays: `proofflow cancel` recorded its own). Best effort: what the run holds is
        released even when the timing store is out."""
        from proofflow.airflow.cancel import MARKED_FAILED, stopped_from_outside
        from proofflow.timing.store import SERVED_STATES
        try:
            store = self.store
            row = store.run(ti.dag_id, ti.run_id) or {}
            if self.verdict_task_id and row.get("state") not in SERVED_STATES \
                    and stopped_from_outside(ti, self.verdict_task_id):
                task_end.record(store, ti.dag_id, ti.run_id, MARKED_FAILED)
        except Exception:
            log.exception("could not record the cause of the run stopped from outside")
