"""proofflow.settings: every variable declared once, parsed into typed values (a bad one
named in its error), read once per process, and docs/configuration.md generated from the
declarations."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proofflow import settings
from proofflow.settings import KeyBudget

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_reference_is_the_generated_one():
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == settings.markdown(), "run: python -m proofflow.settings > docs/configuration.md"


def test_the_module_prints_the_reference():
    out = subprocess.run([sys.executable, "-m", "proofflow.settings"], capture_output=True, text=True, timeout=60,
                         cwd=ROOT, check=True)
    assert out.stdout == settings.markdown()


def test_each_variable_is_declared_once_in_a_section():
    envs = [o.env for o in settings.OPTIONS]
    assert len(envs) == len(set(envs)) >= 60
    assert [o.field for o in settings.OPTIONS] == list(settings.Settings.__dataclass_fields__)
    assert all(o.section in settings.SECTIONS and o.doc for o in settings.OPTIONS)
    assert all(any(o.section == s for o in settings.OPTIONS) for s in settings.SECTIONS)
    reference = settings.markdown()
    assert all(f"`{env}`" in reference for env in envs)


def test_defaults_derive_from_the_homes(tmp_path):
    airflow = settings.load({"AIRFLOW_HOME": str(tmp_path / "af"), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert airflow.home == tmp_path / "af" / "proofflow"
    assert (airflow.scratch_root, airflow.params_cache, airflow.local_airflow_home) == \
        (airflow.home / "scratch", airflow.home / "params", airflow.home / "airflow")
    assert airflow.kernel_dir == tmp_path / "xdg" / "proofflow" / "kernels"
    assert airflow.default_db_url == f"sqlite:///{airflow.home / 'timing.db'}"
    own = settings.load({"AIRFLOW_HOME": str(tmp_path / "af"), "PROOFFLOW_HOME": str(tmp_path / "pf"),
                         "PROOFFLOW_SCRATCH": str(tmp_path / "s"), "PROOFFLOW_CACHE": str(tmp_path / "c")})
    assert (own.home, own.scratch_root) == (tmp_path / "pf", tmp_path / "s")
    assert own.bundles_root == tmp_path / "pf" / "bundles"
    assert own.kernel_dir == tmp_path / "c" / "kernels"
    # one runtime (the services' sockets) per home and shared staging
    assert own.runtime_dir != airflow.runtime_dir and own.runtime_dir.parent == Path(f"/tmp/proofflow-{os.getuid()}")
    if Path("/dev/shm").is_dir():
        assert own.shared_staging_dir.parent == Path("/dev/shm") and own.shared_staging_dir != airflow.shared_staging_dir
    staged = settings.load({"PROOFFLOW_HOME": str(tmp_path / "pf"), "PROOFFLOW_SHARED_STAGING": str(tmp_path / "shm")})
    assert staged.shared_staging_dir == tmp_path / "shm" and staged.runtime_dir != own.runtime_dir


@pytest.mark.parametrize("raw, want", [("1", True), ("on", True), (" Yes ", True), ("TRUE", True),
                                       ("0", False), ("off", False), ("no", False), ("False", False)])
def test_one_switch_parser_for_every_switch(raw, want):
    switches = [o for o in settings.OPTIONS if o.kind is settings.SWITCH]
    assert {o.env for o in switches} >= {"PROOFFLOW_GPU_SERVICE", "PROOFFLOW_PRELOAD", "PROOFFLOW_MSM_OVERLAP",
                                         "PROOFFLOW_MSM_BALANCED", "PROOFFLOW_H2D_REQUIRE_PINNED"}
    loaded = settings.load({o.env: raw for o in switches})
    assert all(getattr(loaded, o.field) is want for o in switches)


@pytest.mark.parametrize("env, raw, field, want", [
    ("PROOFFLOW_STAGING_BUDGET", "16e9", "staging_budget", 16_000_000_000),
    ("PROOFFLOW_STAGING_BUDGET", "9007199254740993", "staging_budget", 9007199254740993),  # exact past 2^53
    ("PROOFFLOW_KEY_BUDGET", "0.25", "key_budget", KeyBudget(fraction=0.25)),
    ("PROOFFLOW_KEY_BUDGET", "2e9", "key_budget", KeyBudget(nbytes=2_000_000_000)),
    ("PROOFFLOW_MSM_PRECOMPUTE", " Auto ", "msm_precompute", None),
    ("PROOFFLOW_MSM_PRECOMPUTE", "16e9", "msm_precompute", 16_000_000_000),
    ("PROOFFLOW_BATCH_CRON", "None", "batch_cron", None),
    ("PROOFFLOW_BATCH_CRON", " 0 * * * * ", "batch_cron", "0 * * * *"),
    ("PROOFFLOW_CUDA_ARCHS", "80, 90 100", "cuda_archs", ("80", "90", "100")),
    ("PROOFFLOW_GPU_DEVICES", "1, 3", "gpu_devices", (1, 3)),
    ("PROOFFLOW_GPU_SLOTS", "0", "gpu_slots", 1),
    ("PROOFFLOW_CURVE_VARIANT", " Wide", "curve_variant", "wide"),
    ("PROOFFLOW_WORKER_NAME", " gpu-1 ", "worker_name", "gpu-1"),
    ("PROOFFLOW_H2D_TOL", "3.5", "h2d_tol", 3.5),
    ("PROOFFLOW_STANDIN_GPU_S", "1.5", "standin_gpu_s", 1.5),
    ("PROOFFLOW_RETRIES", "", "retries", settings.load({}).retries),  # empty: the default
])
def test_typed_values(env, raw, field, want):
    assert getattr(settings.load({env: raw}), field) == want


def test_key_budget_in_bytes():
    assert KeyBudget(fraction=0.5).of(1000) == 500 and KeyBudget(nbytes=123).of(1000) == 123
    assert settings.load({"PROOFFLOW_KEY_BUDGET": "1"}).key_budget.of(1000) == 1000  # 1: the whole memory


def test_devices_default_to_the_visible_ones():
    assert settings.load({"CUDA_VISIBLE_DEVICES": "3,5"}).gpu_devices == (0, 1)
    assert settings.load({}).gpu_devices == (0,)
    hidden = settings.load({"CUDA_VISIBLE_DEVICES": ""})  # empty is a value here: no device
    assert hidden.cuda_visible_devices == "" and hidden.gpu_devices == (0,)
    assert settings.load({}).cuda_visible_devices is None


@pytest.mark.parametrize("env, raw, message", [
    ("PROOFFLOW_GPU_DEPTH", "0", "PROOFFLOW_GPU_DEPTH must be an integer >= 1, got '0'"),
    ("PROOFFLOW_GPU_DEPTH", "two", "PROOFFLOW_GPU_DEPTH must be an integer >= 1, got 'two'"),
    ("PROOFFLOW_GPU_SERVICE", "maybe", "PROOFFLOW_GPU_SERVICE must be 0 or 1, got 'maybe'"),
    ("PROOFFLOW_MSM_BALANCED", "spans", "PROOFFLOW_MSM_BALANCED must be 0 or 1"),
    ("PROOFFLOW_KEY_BUDGET", "1.5", "PROOFFLOW_KEY_BUDGET must be a number of bytes or a fraction in (0, 1]"),
    ("PROOFFLOW_KEY_BUDGET", "inf", "PROOFFLOW_KEY_BUDGET must be a number of bytes"),
    ("PROOFFLOW_MSM_PRECOMPUTE", "lots", "PROOFFLOW_MSM_PRECOMPUTE must be a number of bytes or auto"),
    ("PROOFFLOW_STAGING_BUDGET", "8GiB", "PROOFFLOW_STAGING_BUDGET must be a number of bytes, got '8GiB'"),
    ("PROOFFLOW_STAGING_BUDGET", "-1", "PROOFFLOW_STAGING_BUDGET must be a number of bytes"),
    ("PROOFFLOW_CURVE_VARIANT", "mul64", "PROOFFLOW_CURVE_VARIANT must be auto or one of mul32, wide, call, got 'mul64'"),
    ("PROOFFLOW_SERVICE_IDLE_S", "soon", "PROOFFLOW_SERVICE_IDLE_S must be a number of seconds"),
    ("PROOFFLOW_RETRIES", "1.5", "PROOFFLOW_RETRIES must be an integer"),
    ("PROOFFLOW_GPU_DEVICES", "0,one", "PROOFFLOW_GPU_DEVICES must be device indices separated by commas"),
    ("PROOFFLOW_H2D_TOL", "wide", "PROOFFLOW_H2D_TOL must be a number"),
])
def test_a_bad_value_names_its_variable(env, raw, message):
    with pytest.raises(ValueError) as exc:
        settings.load({env: raw})
    assert message in str(exc.value)


def test_the_environment_is_read_once(monkeypatch, tmp_path):
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path / "before"))  # restored after the test
    before = settings.current()
    assert settings.current() is before
    monkeypatch.setitem(os.environ, "PROOFFLOW_RETRIES", "7")  # as the process itself, not through setenv
    assert settings.current() is before and before.retries != 7
    settings.reload()
    assert settings.current().retries == 7
    settings.set_home(tmp_path / "home")  # changes this process's environment, and reloads
    assert settings.current().home == tmp_path / "home"


def test_tests_monkeypatching_the_environment_see_it_at_once(monkeypatch):
    """tests/conftest.py: setenv, delenv and undo make the next current() read it again."""
    monkeypatch.setenv("PROOFFLOW_MAX_ACTIVE_RUNS", "9")
    assert settings.current().max_active_runs == 9
    monkeypatch.delenv("PROOFFLOW_MAX_ACTIVE_RUNS")
    assert settings.current().max_active_runs == settings.load({}).max_active_runs


def test_a_forked_child_reads_its_own_environment(monkeypatch):
    settings.current()
    monkeypatch.setitem(os.environ, "PROOFFLOW_RETRIES", "5")
    pid = os.fork()
    if pid == 0:
        os._exit(0 if settings.current().retries == 5 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_secrets_stay_out_of_the_repr():
    loaded = settings.load({"PROOFFLOW_STAGING_TOKEN": "s3cret", "PROOFFLOW_DB_URL": "postgresql://u:pw@h/db"})
    assert loaded.staging_token == "s3cret" and "s3cret" not in repr(loaded) and "pw@" not in repr(loaded)
