"""Airflow's cluster policy for proof runs (entry point ``airflow.policy``, loaded by every
Airflow process): a proof_run's ``priority`` (``spec.Priority``) moves its tasks' Airflow
``priority_weight`` by the priority's band, so the scheduler queues a high run's tasks, and
hands it the ``gpu`` pool's free slots, before a normal or low run's.

A task's weight is fixed when its DAG is parsed, before any run's conf exists; what Airflow
lets a run's conf decide is its task instances, through ``task_instance_mutation_hook``,
called by the scheduler (and ``dag.test``) as it creates each task instance, mapped ones
included, with the run at hand. The weight set here is the task's own (its weight rule's:
``upstream`` in proof_run) plus the band, recomputed each time, as the hook may run twice on
one task instance."""
from __future__ import annotations

from airflow import settings as airflow_settings
from airflow.policies import hookimpl

from proofflow import spec
from proofflow.airflow.local import DAG_ID

# Airflow 3.3 marks the hook as implemented only when an airflow_local_settings module holds
# one; else it creates a new run's task instances without calling it (its bulk insert), and
# only the mapped partitions', created later, would get their run's band.
airflow_settings.task_instance_mutation_hook.is_noop = False


def run_priority(conf) -> spec.Priority:
    """The priority a run's conf asks for; the default where it names none or no valid one
    (the Params and ``validate`` refuse those)."""
    value = conf.get("priority") if isinstance(conf, dict) else None
    return spec.Priority(value) if value in spec.PRIORITIES else spec.Priority.NORMAL


@hookimpl
def task_instance_mutation_hook(task_instance, dag_run) -> None:
    task = getattr(task_instance, "task", None)
    if dag_run is None or task is None or task_instance.dag_id != DAG_ID:
        return
    from airflow.task.priority_strategy import validate_and_load_priority_weight_strategy
    rule = task.weight_rule
    if not hasattr(rule, "get_weight"):
        rule = validate_and_load_priority_weight_strategy(rule)
    task_instance.priority_weight = rule.get_weight(task_instance) + run_priority(dag_run.conf).weight
