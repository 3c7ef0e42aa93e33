"""A worker's identity: the host name Airflow records for the tasks it runs.

Airflow stamps every task instance with its worker's host name (``[core] hostname_callable``,
by default the FQDN): the REST API shows it as ``hostname``, the timing rows record it as
``host``, and ``proofflow calibrate`` stores a calibration under it, so check_h2d finds the
reference of the GPU host a partition was proved on. Workers that share a host (one per
GPU, or the native test's CPU and GPU workers) tell themselves apart by pointing the
callable here and naming themselves:

    AIRFLOW__CORE__HOSTNAME_CALLABLE=proofflow.airflow.worker.hostname PROOFFLOW_WORKER_NAME=gpu0 \\
        airflow celery worker --queues gpu ...
"""
from __future__ import annotations



def hostname() -> str:
    """PROOFFLOW_WORKER_NAME when set, else Airflow's default (the FQDN): the name
    ``proofflow calibrate`` stores its calibration under (``timing.calibrate.host_name``)."""
    from proofflow.timing.calibrate import host_name
    return host_name()
