"""The preload listener: a job process imports the tasks' modules before it forks them, a
task process imports nothing, PROOFFLOW_PRELOAD=0 turns it off, and preloading stays
fork-safe (no CuPy, no thread). Each case runs in a fresh interpreter: sys.modules is the
subject."""
import json
import os
import subprocess
import sys

import pytest

from proofflow.airflow import preload

PROBE = """
import json, sys, threading
from proofflow.airflow import preload
component = type(sys.argv[1], (), {})()
preload.on_starting(component)
print(json.dumps({"loaded": [m for m in preload.MODULES if m in sys.modules], "cupy": "cupy" in sys.modules,
                  "threads": threading.active_count()}))
"""


def _probe(component: str, **env) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, component], capture_output=True, text=True, timeout=300,
                         env={**os.environ, **env}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_job_process_imports_every_module_and_nothing_fork_unsafe():
    got = _probe("Job")
    assert got["loaded"] == list(preload.MODULES)
    assert got["cupy"] is False and got["threads"] == 1


@pytest.mark.parametrize("component, env", [("TaskRunnerMarker", {}), ("Job", {"PROOFFLOW_PRELOAD": "0"})])
def test_a_task_process_or_the_switch_off_preloads_nothing(component, env):
    got = _probe(component, **env)
    assert "great_expectations" not in got["loaded"] and "proofflow.prover.pipeline" not in got["loaded"]


def test_the_plugin_registers_the_listener():
    from proofflow.airflow.plugins.plugin import ProofflowPlugin
    assert preload in ProofflowPlugin.listeners


def test_a_module_that_fails_is_skipped(monkeypatch, caplog):
    monkeypatch.setattr(preload, "MODULES", ("json", "proofflow.no_such_module"))
    assert preload.preload() >= 0
    assert "could not import proofflow.no_such_module" in caplog.text
