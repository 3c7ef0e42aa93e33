"""Finding 6: "A killed CPU setup leaves its worker pool running: 27 processes and 614 MiB,
still alive 7 minutes later."

The setup runs as the leader of a session of its own, so every process it starts (the
forkserver, the resource tracker, the pool's workers) carries its session id: once its
workers exist it is killed with SIGKILL, and no process of that session may be left 5 s
later.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import circom_files

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 5.0
CONSTRAINTS = 8192  # tens of seconds of CPU setup: the workers are busy when the kill comes



def _session(sid: int) -> dict[int, int]:
    """pid -> ppid of the live (not zombie) processes of session ``sid``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found[int(entry.name)] = int(fields[1])
    return found


def test_a_killed_setup_leaves_no_worker(tmp_path):
    r1cs = tmp_path / "c.r1cs"
    r1cs.write_bytes(circom_files.chain_r1cs(CONSTRAINTS))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROOFFLOW_SETUP_WORKERS": "2"}
    with open(tmp_path / "setup.log", "wb") as log:
        setup = subprocess.Popen([sys.executable, "-m", "proofflow.cli", "--home", tmp_path / "home", "setup",
                                  "--r1cs", r1cs, "--out", tmp_path / "k.zkey", "--backend", "cpu"],
                                 stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    seen: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 120
        while not any(ppid != setup.pid for pid, ppid in seen.items() if pid != setup.pid):  # a forkserver child
            assert setup.poll() is None and time.monotonic() < deadline, (tmp_path / "setup.log").read_text()
            time.sleep(0.1)
            seen = _session(setup.pid)
        setup.send_signal(signal.SIGKILL)
        setup.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while (left := _session(setup.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"{len(left)} of the setup's {len(seen) - 1} processes outlived it by {GONE_WITHIN_S} s"
    finally:
        for pid in _session(setup.pid):  # this test's own processes, if the check failed
            os.kill(pid, signal.SIGKILL)


def _pid(_: int) -> int:
    time.sleep(0.05)  # long enough for both workers to get jobs
    return os.getpid()


def test_the_pool_still_computes_and_its_workers_end_with_the_block():
    from proofflow.prover.process_pool import process_pool
    with process_pool(2) as pool:
        workers = set(pool.map(_pid, range(8)))
    assert len(workers) == 2
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
