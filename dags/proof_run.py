"""proof_run: one batch of Groth16 proofs.

    validate -> setup -> prepare_scratch -> partition[i]: synthesize -> stage -> prove_gpu
    -> finalize_partition (mapped per chunk: partitions_per_task partitions, one by default,
    each task doing its chunk's one after another) -> finalize_run -> check_h2d
    -> cleanup_scratch -> publish_summary (both teardowns: they run whatever happened, a
    failed validate included)

Params are JSON-schema validated (they build the UI's trigger form); ``validate`` repeats
the checks and adds the ones a schema cannot make (a GPU asked for but absent) before any
work. ``publish_summary`` writes the run's figures as its note (shown in the UI; the
"Proof report" tab of the run has the full report and timeline). ``prove_gpu`` runs in pool ``gpu``, whose slots are the GPU mutex. Data moves through
the run's scratch directory; XCom carries paths and small metadata only. Nothing heavy is
imported here: the operators import ``prover`` when they run.
"""
from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, TriggerRule, task_group

from proofflow import settings
from proofflow.airflow.notifications.run_state import RunStateNotifier
from proofflow.airflow.operators.check_h2d import CheckH2DOperator
from proofflow.airflow.operators.proof import (CleanupScratchOperator, FinalizePartitionOperator, FinalizeRunOperator,
                                               PrepareScratchOperator, ProveGpuOperator, SetupOperator, StageOperator,
                                               SynthesizeOperator, ValidateOperator)
from proofflow.airflow.operators.summary import PublishSummaryOperator
from proofflow.airflow.params import dag_params

deployment = settings.current()

with DAG(
    dag_id="proof_run",
    description="Batch Groth16 proving: synthesize, stage and prove each partition, then bundle and verify.",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    # triggered by hand, REST or proof_batch only (no schedule): ready for them as soon as it is parsed,
    # whatever [core] dags_are_paused_at_creation says
    is_paused_upon_creation=False,
    max_active_runs=deployment.max_active_runs,
    params=dag_params(),
    # weight_rule upstream: a partition further down its chain goes first, so the GPU is fed
    # as soon as one partition is staged while the others are still being synthesized.
    # queue: where the CeleryExecutor sends a task (prove_gpu overrides it with the GPU queue)
    default_args={"retries": deployment.retries, "retry_delay": dt.timedelta(seconds=2), "weight_rule": "upstream",
                  "queue": deployment.cpu_queue},
    on_failure_callback=RunStateNotifier("failed"),
    tags=["proofflow"],
    doc_md=__doc__,
) as dag:
    validate = ValidateOperator(task_id="validate", retries=0)
    config = validate.output
    setup = SetupOperator(task_id="setup", config=config)
    prepare = PrepareScratchOperator(task_id="prepare_scratch", config=config)

    @task_group(group_id="partition")
    def partition(chunk):
        # Synthesis is CPU- and memory-heavy at real sizes: PROOFFLOW_SYNTH_CONCURRENCY bounds
        # the chunks synthesized at once per run (unset: the executor's parallelism).
        synth = SynthesizeOperator(task_id="synthesize", config=config, chunk=chunk,
                                   max_active_tis_per_dagrun=deployment.synth_concurrency)
        stage = StageOperator(task_id="stage", config=config, chunk=chunk, synthesized=synth.output)
        prove = ProveGpuOperator(task_id="prove_gpu", config=config, chunk=chunk, staged=stage.output,
                                 setup_result=setup.output, ready_after_task_id=stage.task_id)
        fin = FinalizePartitionOperator(task_id="finalize_partition", config=config, chunk=chunk,
                                        proved=prove.output, setup_result=setup.output)
        return fin.output

    done = partition.expand(chunk=prepare.output)
    finalize = FinalizeRunOperator(task_id="finalize_run", config=config, partitions_done=done,
                                   setup_result=setup.output)
    # After finalize_run (the proofs are verified and published): a failed check fails this
    # task and alerts (email/webhook notifiers), it never loses a proof.
    check = CheckH2DOperator(task_id="check_h2d")
    cleanup = CleanupScratchOperator(task_id="cleanup_scratch", verdict_task_id=check.task_id)
    # A teardown too: it runs after the cleanup has recorded the run's final state. It counts
    # for the run's state only where it fails, which it does for a run stopped from outside
    # before its proofs (check_h2d skipped: the run would read success); check_h2d's outcome
    # decides the others.
    summary = PublishSummaryOperator(task_id="publish_summary", verdict_task_id=check.task_id)

    validate >> setup >> prepare
    finalize >> check >> cleanup.as_teardown(setups=prepare) >> summary.as_teardown(setups=prepare,
                                                                                   on_failure_fail_dagrun=True)
    # whatever failed, validate or prepare_scratch included: a teardown's own rule would mark
    # them upstream_failed when its setup did not succeed, and the run would get no summary
    cleanup.trigger_rule = summary.trigger_rule = TriggerRule.ALL_DONE
