"""The `proofflow` command run as a fresh clone's user would: a child process with no
Airflow or proofflow settings in its environment (tests/airflow's command-line tests)."""
import os
import shutil
import subprocess
import sys


def clean_env(user_home=None):
    """A clean environment, as on a fresh clone: no Airflow or proofflow settings (and, with
    ``user_home``, a fresh user: HOME and PATH only)."""
    if user_home is not None:
        return {"HOME": str(user_home), "PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PROOFFLOW_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def proofflow(*args, timeout=300, user_home=None, env=None):
    exe = shutil.which("proofflow")
    cmd = [exe] if exe else [sys.executable, "-m", "proofflow.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env={**clean_env(user_home), **(env or {})},
                          timeout=timeout)
