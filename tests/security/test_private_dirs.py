"""Finding 5: "The runtime directory can be squatted. `/tmp/proofflow-<uid>/<digest>` is
predictable. Only its last component gets mode 0700, and neither owner nor mode is checked.
A pre-made 0777 directory with a symlinked log had the service append through the symlink.
`/dev/shm` staging has the same problem."

The prover service's runtime directory (its socket, start lock and log), the GPU setup lock
and the shared staging root, each pre-made the ways another user could (world-writable,
another owner, a symlink, a symlinked file inside): refused with an error naming the path,
owner and mode, and nothing written through a symlink. (Tests run as root here: another
user's directory is simulated with chown.)"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from proofflow import settings

OTHER_UID = 54321
SECRET = b"the victim's file\n"


def _client():
    from proofflow.prover.service.client import ServiceClient
    return ServiceClient("cpu", 0, idle_s=5)


def _refused(start, *words: str) -> str:
    """``start()`` must be refused with a PermissionError naming ``words``; a service it
    started anyway (the old code did) is stopped."""
    try:
        with pytest.raises(PermissionError) as refused:
            start()
    finally:
        with contextlib.suppress(PermissionError):
            _client().stop()
    message = str(refused.value)
    assert "\n" not in message and all(w in message for w in words), message
    return message


@pytest.fixture
def victim(tmp_path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(SECRET)
    return path


@pytest.fixture
def runtime(monkeypatch) -> Path:
    """The runtime directory, below a parent in the role of /tmp/proofflow-<uid>; under /tmp,
    not the test's deeper tmp_path: the service's socket path must fit a Unix socket name."""
    top = Path(tempfile.mkdtemp(prefix="pf-rt-", dir="/tmp"))
    parent = top / "proofflow-uid"
    parent.mkdir(mode=0o700)
    monkeypatch.setenv("PROOFFLOW_RUNTIME", str(parent / "digest"))
    yield parent / "digest"
    shutil.rmtree(top, ignore_errors=True)


def test_a_world_writable_runtime_dir_with_a_symlinked_log_is_refused(runtime, victim):
    runtime.mkdir()
    os.chmod(runtime, 0o777)
    client = _client()
    client.path.with_suffix(".log").symlink_to(victim)
    _refused(client.ensure_running, str(runtime), "0777", "writable by group or others")
    assert victim.read_bytes() == SECRET


def test_a_world_writable_parent_of_the_runtime_dir_is_refused(runtime):
    os.chmod(runtime.parent, 0o777)  # /tmp/proofflow-<uid> made first by someone else
    _refused(_client().ensure_running, str(runtime.parent), "0777")


@pytest.mark.skipif(os.getuid() != 0, reason="making a symlink another user owns needs root")
def test_a_parent_of_the_runtime_dir_symlinked_by_another_user_is_refused(runtime, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    runtime.parent.rmdir()
    runtime.parent.symlink_to(elsewhere)
    os.lchown(runtime.parent, OTHER_UID, OTHER_UID)
    _refused(_client().ensure_running, str(runtime.parent), "symlink", f"owner uid {OTHER_UID}")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory another user owns needs root")
def test_a_runtime_dir_of_another_user_is_refused(runtime):
    runtime.mkdir(mode=0o700)
    os.chown(runtime, OTHER_UID, OTHER_UID)
    _refused(_client().ensure_running, str(runtime), f"uid {OTHER_UID}")


def test_a_symlinked_runtime_dir_is_refused(runtime, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    runtime.symlink_to(elsewhere)
    _refused(_client().ensure_running, str(runtime), "symlink")
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_log_in_a_private_runtime_dir_is_not_followed(runtime, victim):
    runtime.mkdir(mode=0o700)
    client = _client()
    client.path.with_suffix(".log").symlink_to(victim)
    _refused(client.ensure_running, ".log", "symlink")
    assert victim.read_bytes() == SECRET


def test_a_stale_socket_path_that_is_not_a_socket_is_not_removed(runtime):
    """The service unlinks what is at its socket path only when it is a socket of its user."""
    runtime.mkdir(mode=0o700)
    squatted = runtime / "cpu-x-0.sock"
    squatted.write_bytes(SECRET)
    proc = subprocess.run([sys.executable, "-m", "proofflow.prover.service", "--socket", str(squatted),
                           "--idle-timeout", "1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "not a socket of this user" in proc.stderr, proc.stderr[-2000:]
    assert squatted.read_bytes() == SECRET


@pytest.mark.parametrize("how", ["world-writable", "symlinked lock"])
def test_the_gpu_setup_lock_is_refused_where_another_user_could_reach_it(how, tmp_path, monkeypatch, victim):
    from proofflow.prover import keys
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    monkeypatch.setenv("PROOFFLOW_SETUP_LOCK", str(locks / "gpu-setup.lock"))
    if how == "world-writable":
        os.chmod(locks, 0o777)
    else:
        (locks / "gpu-setup.lock").symlink_to(victim)
    with pytest.raises(PermissionError, match="refusing .*locks"):
        keys.ensure_key(tmp_path / "params" / "mimc-8", "mimc", 8, 0, backend="gpu")
    assert victim.read_bytes() == SECRET


@pytest.mark.parametrize("how", ["world-writable", "another user", "symlink"])
def test_a_squatted_shared_staging_root_is_refused(how, tmp_path):
    from proofflow.prover.staging.shared import SharedStaging
    root = tmp_path / "proofflow-uid-digest"  # as /dev/shm/proofflow-<uid>-<digest>
    if how == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        root.symlink_to(tmp_path / "elsewhere")
    else:
        root.mkdir(mode=0o700)
    if how == "world-writable":
        os.chmod(root, 0o777)
    elif how == "another user":
        if os.getuid() != 0:
            pytest.skip("making a directory another user owns needs root")
        os.chown(root, OTHER_UID, OTHER_UID)
    staging = SharedStaging(root, 1 << 24)
    with pytest.raises(PermissionError, match=f"refusing {root} as a private directory"):
        staging.lease("dag/run/0", 4, 4)
    assert not (root / "idle").exists()


def test_a_fresh_runtime_dir_is_private_up_to_its_root_and_serves(runtime):
    """Made fresh, /tmp/proofflow-<uid> is 0700 as well as its digest directory (the old
    code left the parent to the umask), and a service starts there and answers."""
    runtime.parent.rmdir()
    client = _client()
    try:
        client.ensure_running()
        assert client.status()["ok"]
    finally:
        client.stop()
    assert [oct(p.stat().st_mode & 0o777) for p in (runtime.parent, runtime)] == ["0o700", "0o700"]
    assert settings.current().runtime_dir == runtime
