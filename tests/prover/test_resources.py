"""Whether a run fits the machine (proofflow/prover/resources.py): estimates against machine
descriptions given here, so refusals and acceptances do not depend on the test machine."""
from dataclasses import replace
from pathlib import Path

import pytest

from proofflow.prover import resources
from proofflow.prover.resources import Disk, Machine
from proofflow.spec import MAX_LOG2, InvalidParams, MemoryKind, RunConfig, validate_params

GiB = 1 << 30
KEY, SHM = Path("/home/ci/.proofflow/params/mimc-log2_27-seed0"), Path("/dev/shm/proofflow-0-0123456789")
CACHE = Path("/home/ci/.cache/proofflow/constraint-systems/mimc-2^27-1")
# the 2-core CI machine: 24 GiB of memory (22 available), 70 GB free on its one disk, the
# constraint system cached already
SMALL = Machine(key=Disk(KEY, 70 * 10**9, fs=1), shared=Disk(SHM, 12 * GiB, fs=9),
                cache=Disk(CACHE, 70 * 10**9, fs=1), key_on_disk=False, cs_cached=True, host_available=22 * GiB,
                staging_budget=8 * GiB)
# an H200 host: 2 TB of memory, 10 TB free, the GPU's 139.8 GiB
H200 = replace(SMALL, key=Disk(KEY, 10**13, fs=1), shared=Disk(SHM, 1000 * GiB, fs=9),
               cache=Disk(CACHE, 10**13, fs=1), host_available=2000 * GiB, staging_budget=64 * GiB,
               device_total=150_110_011_392, device_free=149_000_000_000, device_name="NVIDIA H200")


def _validate(machine, **params):
    return validate_params(params, gpu_available=lambda: True, fit_check=lambda config: resources.fit_check(config, machine))


def _refusal(machine, **params) -> str:
    with pytest.raises(InvalidParams) as err:
        _validate(machine, **params)
    return str(err.value)


@pytest.mark.parametrize("log2", range(8, 17))
@pytest.mark.parametrize("partitions", [1, 4, 64])
def test_the_test_suites_runs_fit_the_ci_machine(log2, partitions):
    config = validate_params({"log2": log2, "partitions": partitions, "backend": "auto"},
                             gpu_available=lambda: False,
                             fit_check=lambda config: resources.fit_check(config, SMALL))
    assert config.backend == "cpu" and resources.check(config, SMALL) == []


def test_log2_27_is_in_the_domain_but_refused_on_a_small_machine_naming_each_number():
    assert MAX_LOG2 == 27
    assert validate_params({"log2": 27, "backend": "cpu"}, gpu_available=lambda: False).log2 == 27
    with pytest.raises(InvalidParams, match="log2 must be in 8..27, got 28"):
        validate_params({"log2": 28}, gpu_available=lambda: False)
    full = replace(SMALL, key=Disk(KEY, 40 * 10**9, fs=1), cache=Disk(CACHE, 40 * 10**9, fs=1), cs_cached=False)
    msg = _refusal(full, log2=27, partitions=4, backend="cpu")
    assert msg.startswith("log2 27 does not fit this machine: ")
    # disk: the key's tables at 288 bytes a point (compressed; 576 as xy) and the constraint system (72)
    assert ("the proving key (38.7 GB) and the constraint system's cache (9.7 GB) need 48.3 GB on disk at "
            f"{KEY} (40.0 GB free)") in msg
    assert "a partition's a/b/c and witness need 16.0 GiB of staging (budget 8.0 GiB, PROOFFLOW_STAGING_BUDGET)" in msg
    assert "of host memory (22.0 GiB available, MemAvailable)" in msg
    assert msg.count(";") == 2, msg  # three problems, one message


def test_a_fitting_large_run_is_accepted(monkeypatch):
    monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", H200_2P27_KEY_BUDGET)  # the default half is short of a 2^27 key
    config = _validate(H200, log2=27, partitions=16, backend="gpu")
    need = resources.estimate(config, H200)
    # a, b_g1, b_g2 (G2), l: one point a variable (2^27 - 1 of them, l less the 3 instance ones); h: n - 1
    assert need.key_tables == 576 * ((1 << 27) - 1) - 3 * 96 + 5 * resources.NPY_HEADER
    assert need.device < H200.device_total and need.staging <= H200.staging_budget


def test_device_memory_is_named():
    h100 = replace(H200, device_total=85_520_809_984, device_free=84_000_000_000, device_name="NVIDIA H100")
    _validate(h100, log2=26, partitions=2, backend="gpu")  # fits in 80 GiB
    msg = _refusal(h100, log2=27, partitions=2, backend="gpu")
    assert msg == ("log2 27 does not fit this machine: proving on the GPU needs about 128.1 GiB of device memory "
                   "(the key's tables 72.0 GiB and a proof's working set; NVIDIA H100 has 79.6 GiB, 78.2 GiB free)")
    assert resources.estimate(_validate(h100, log2=20, backend="cpu"), h100).device is None


def test_staging_budget_is_named():
    small_budget = replace(SMALL, staging_budget=64 << 20)
    _validate(small_budget, log2=17, backend="cpu")  # 3 x 2^17 x 32 + witness: 16 MiB
    assert _refusal(small_budget, log2=20, backend="cpu") == (
        "log2 20 does not fit this machine: a partition's a/b/c and witness need 128.0 MiB of staging "
        "(budget 64.0 MiB, PROOFFLOW_STAGING_BUDGET)")


def test_a_task_s_chunk_of_partitions_must_fit_the_staging_budget_at_once():
    """A task synthesizes its whole chunk (partitions_per_task) before the device frees any
    of it: the budget must hold the chunk, else the run would wait on itself."""
    small_budget = replace(SMALL, staging_budget=64 << 20)
    _validate(small_budget, log2=17, partitions=8, partitions_per_task=4, backend="cpu")  # 4 segments of 16 MiB
    assert _refusal(small_budget, log2=17, partitions=8, partitions_per_task=5, backend="cpu") == (
        "log2 17 does not fit this machine: a task's 5 partitions (partitions_per_task) hold 80.0 MiB of staging at "
        "once (budget 64.0 MiB, PROOFFLOW_STAGING_BUDGET): give fewer partitions per task")
    _validate(small_budget, log2=17, partitions=4, partitions_per_task=64, backend="cpu")  # a chunk of the run's 4


def test_host_memory_is_named_and_a_key_on_disk_needs_no_setup():
    tight = replace(SMALL, host_available=GiB // 2)
    assert _refusal(tight, log2=22, partitions=1, backend="gpu") == (
        "log2 22 does not fit this machine: the key's setup needs about 832.0 MiB and proving about 704.0 MiB of host "
        "memory (512.0 MiB available, MemAvailable)")
    config = _validate(SMALL, log2=22, backend="gpu")
    assert resources.estimate(config, tight).host_setup == resources.SETUP_HOST << 22
    # a first build of the constraint system needs more
    assert resources.estimate(config, replace(tight, cs_cached=False)).host_setup == resources.CS_BUILD_HOST << 22
    on_disk = replace(tight, key_on_disk=True)
    assert resources.estimate(config, on_disk).host_setup == 0
    assert _refusal(on_disk, log2=22, partitions=1, backend="gpu") == (  # a/b/c and witness staged, one synthesis
        "log2 22 does not fit this machine: proving needs about 704.0 MiB of host memory (512.0 MiB available, "
        "MemAvailable)")
    _validate(replace(on_disk, host_available=GiB * 3 // 4), log2=22, partitions=1, backend="gpu")


def test_disk_is_named_where_it_lacks_and_what_is_there_needs_none():
    key_disk = replace(SMALL, key=Disk(KEY, 10**9, fs=2))  # the key on a file system of its own
    assert _refusal(key_disk, log2=22, backend="cpu") == (
        f"log2 22 does not fit this machine: the proving key needs 2.4 GB on disk at {KEY} (1.0 GB free)")
    _validate(replace(key_disk, key_on_disk=True), log2=22, backend="cpu")
    shm_small = replace(SMALL, shared=Disk(SHM, GiB, fs=9))
    _validate(shm_small, log2=20, partitions=4, backend="cpu")  # 4 segments of 128 MiB
    assert _refusal(shm_small, log2=20, partitions=64, backend="cpu") == (
        f"log2 20 does not fit this machine: the partitions' a/b/c segments need 8.0 GiB of shared memory at {SHM} "
        "(1.0 GiB free; 64 partitions, budget 8.0 GiB)")
    # what the shared staging holds already (idle segments, reused) needs no more room
    _validate(replace(shm_small, shared_held=7 * GiB), log2=20, partitions=64, backend="cpu")
    cache_full = replace(SMALL, cache=Disk(CACHE, 10**8), cs_cached=False)
    assert _refusal(cache_full, log2=22, backend="cpu") == (
        f"log2 22 does not fit this machine: the constraint system's cache needs 302.0 MB on disk at {CACHE} "
        "(100.0 MB free)")
    _validate(replace(cache_full, cs_cached=True), log2=22, backend="cpu")


def test_unknown_figures_are_not_checked(monkeypatch):
    monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", H200_2P27_KEY_BUDGET)
    blind = replace(SMALL, key=Disk(KEY, None), shared=Disk(SHM, None), cache=Disk(CACHE, None),
                    host_available=None, cs_cached=False)
    _validate(blind, log2=24, partitions=64, backend="cpu")
    _validate(H200, log2=27, partitions=1, backend="gpu")
    monkeypatch.delenv("PROOFFLOW_KEY_BUDGET")  # an unknown device: no key budget to check either
    _validate(replace(H200, device_total=None), log2=27, partitions=1, backend="gpu")


def test_the_key_estimate_is_the_key_on_disk(tmp_path):
    """The estimate is the real files' size (the tables; vk.json and params.json are allowed for)."""
    from proofflow.prover.keys import ensure_key
    from proofflow.prover.circuits.by_name import get_circuit
    d = tmp_path / "key"
    ensure_key(d, "mimc", 8, 1, backend="cpu")
    config = validate_params({"log2": 8}, gpu_available=lambda: False)
    shape = resources.shape(config)
    circuit = get_circuit("mimc", 8)
    assert (shape.n, shape.variables, shape.instance) == (circuit.domain_size, circuit.constraint_system.num_variables,
                                                          circuit.constraint_system.num_instance)
    tables = sum(p.stat().st_size for p in d.glob("*.npy"))
    assert resources.key_table_bytes(shape) == tables
    assert sum(p.stat().st_size for p in d.iterdir()) <= resources.estimate(config, SMALL).key_disk
    cs = circuit.constraint_system_dir
    assert sum(p.stat().st_size for p in cs.iterdir()) <= resources.CS_CACHE_DISK * shape.n


def test_probe_reads_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PROOFFLOW_STAGING_BUDGET", str(3 << 30))
    config = validate_params({"log2": 8}, gpu_available=lambda: False)
    m = resources.probe(config)
    assert m.key.path == tmp_path / "params" / "mimc-log2_8-seed0" and not m.key_on_disk and not m.cs_cached
    assert m.cache.path.parent == tmp_path / "cache" / "constraint-systems" and m.shared.free > 0
    assert m.key.free > 0 and m.key.fs == m.cache.fs and m.staging_budget == 3 << 30 and m.shared_held == 0
    assert m.host_available is None or m.host_available > 0
    assert m.device_total is None  # the CPU backend: no device asked about
    m.key.path.mkdir(parents=True)
    (m.key.path / "params.json").write_text("{}")
    from proofflow.prover.circuits.by_name import get_circuit
    get_circuit("mimc", 8).constraint_system  # noqa: B018 - built and cached
    again = resources.probe(config)
    assert again.key_on_disk and again.cs_cached


def test_mem_available_parses_meminfo(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
    assert resources.mem_available(str(tmp_path / "meminfo")) == 20000000 * 1024
    (tmp_path / "old").write_text("MemTotal:       24000000 kB\n")
    assert resources.mem_available(str(tmp_path / "old")) is None
    assert resources.mem_available(str(tmp_path / "missing")) is None


def test_memory_backed_reads_the_longest_mount_point(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\ntmpfs /run tmpfs rw 0 0\n"
                      "/dev/vdb /dev/shm/disk ext4 rw 0 0\n/dev/vdc /mnt/a\\040b xfs rw 0 0\n")
    assert resources.memory_backed(Path("/dev/shm/pf/params"), str(mounts))
    assert not resources.memory_backed(Path("/dev/shm/disk/x"), str(mounts))
    assert not resources.memory_backed(Path("/home/ci"), str(mounts))
    assert not resources.memory_backed(Path("/mnt/a b/c"), str(mounts))
    assert not resources.memory_backed(Path("/x"), str(tmp_path / "no-such-file"))


# -- the H200 at 2^27 (bench/device.sh 2p27): one key at a time in /dev/shm, a 128 GiB tmpfs; the
# constraint systems' cache on the 64 GiB disk (68.4 GB free when the 2^26 run looked); 120 GiB
# of the host's 128 available before the key; the GPU's 139.8 GiB
N27 = 1 << 27
H200_2P27_STAGING = 16 * GiB  # a partition's a/b/c (12 GiB) and witness (4 GiB)
H200_2P27_KEY_BUDGET = "0.6"  # of the device's 139.8 GiB: 83.9 GiB for the key's 72.0


def _h200_2p27(circuit: str, **changes) -> Machine:
    shm = Disk(Path("/dev/shm/pf-staging"), 128 * GiB, fs=9, memory=True)
    machine = Machine(key=Disk(Path(f"/dev/shm/pf/params/{circuit}-log2_27-seed0"), 128 * GiB, fs=9, memory=True),
                      shared=shm, cache=Disk(Path(f"/root/pf/cache/constraint-systems/{circuit}-2^27-1"), 68_400_000_000,
                                             fs=1),
                      key_on_disk=False, cs_cached=True, host_available=120 * GiB,
                      staging_budget=H200_2P27_STAGING,
                      device_total=150_110_011_392, device_free=149_000_000_000, device_name="NVIDIA H200")
    return replace(machine, **changes)


def _setup_config(circuit: str) -> dict:
    """What ``python -m proofflow.prover setup`` checks: the key's setup alone."""
    return RunConfig(circuit, 27, 0, "gpu", MemoryKind.PINNED)


@pytest.mark.parametrize("circuit", ["mimc", "bits"])
@pytest.mark.parametrize("encoding, gb, gib", [("compressed", "38.7", 36.0), ("xy", "77.3", 72.0)])
def test_a_2p27_key_set_up_into_shared_memory_fits_the_h200(circuit, encoding, gb, gib, monkeypatch):
    """Its 38.7 GB of compressed tables (77.3 as xy) fill the tmpfs after setup's peaks (the
    constraint system's build, the QAP), beside what setup holds meanwhile: 17 + 36 GiB of host
    memory (17 + 72 as xy), the most of setup."""
    monkeypatch.setenv("PROOFFLOW_KEY_TABLES", encoding)
    machine = _h200_2p27(circuit)
    need = resources.estimate(_setup_config(circuit), machine)
    tables = resources.key_table_bytes(resources.shape(_setup_config(circuit)))
    assert f"{tables / 1e9:.1f}" == gb and need.key_disk == tables + resources.KEY_JSON
    assert need.host_files == need.key_disk and need.cache_disk == 0  # the cache is on disk, built already
    assert need.host_setup == resources.SETUP_TABLES_HOST * N27 + need.key_disk
    assert resources.SETUP_HOST * N27 < need.host_setup < 90 * GiB
    assert resources.check(_setup_config(circuit), machine) == []
    # building the constraint system in the same call peaks before the key's files exist
    assert resources.estimate(_setup_config(circuit), replace(machine, cs_cached=False)).host_setup == need.host_setup
    short = need.host_setup - GiB
    assert resources.check(_setup_config(circuit), replace(machine, host_available=short)) == [
        f"the key's setup needs about {17 + gib:.1f} GiB of host memory ({short / GiB:.1f} GiB available, MemAvailable; "
        f"with the new files on memory-backed file systems ({gib:.1f} GiB: {machine.key.path}))"]


def test_a_2p27_key_and_its_constraint_system_fit_the_h200s_disk():
    """The 2^26 run's layout (key and cache under /root/pf, 68.4 GB free on the 64 GiB disk) at
    2^27: the key's compressed tables (38.7 GB) beside the constraint system in the cache's
    format 2 (9.7 GB, MiMC's round constants included; 32.2 GB in format 1, which did not fit);
    a disk short of both is refused naming each."""
    key = Disk(Path("/root/pf/params/mimc-log2_27-seed0"), 68_400_000_000, fs=1)
    machine = _h200_2p27("mimc", key=key, cache=replace(key, path=Path("/root/pf/cache")), cs_cached=False)
    assert resources.check(_setup_config("mimc"), machine) == []
    assert resources.estimate(_setup_config("mimc"), machine).key_disk + resources.CS_CACHE_DISK * N27 < 64 * 10**9
    short = replace(key, free=45 * 10**9)
    assert resources.check(_setup_config("mimc"), replace(machine, key=short, cache=replace(short, path=Path(
        "/root/pf/cache")))) == ["the proving key (38.7 GB) and the constraint system's cache (9.7 GB) need 48.3 GB "
                                 f"on disk at {key.path} (45.0 GB free)"]


def test_a_cache_in_the_format_before_counts_as_free_space(tmp_path, monkeypatch):
    """Its rebuild removes it first: what it holds is free for the run."""
    monkeypatch.setenv("PROOFFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    config = validate_params({"log2": 8}, gpu_available=lambda: False)
    from proofflow.prover.circuits.by_name import get_circuit
    d = get_circuit("mimc", 8).constraint_system_dir
    d.mkdir(parents=True)
    (d / "shape.npy").write_bytes(b"\0" * 10**6)  # format 1's files
    # the disk's free bytes held still: other processes (parallel test workers) write and delete meanwhile
    usage = resources.shutil.disk_usage(d)
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda _: usage)
    m = resources.probe(config)
    assert not m.cs_cached and m.cache.free == m.key.free == usage.free + 10**6


@pytest.mark.parametrize("circuit", ["mimc", "bits"])
def test_a_2p27_partition_fits_the_h200_with_its_key_resident(circuit, monkeypatch):
    """Proving with the key in /dev/shm already (MemAvailable has it: 120 - 72 GiB left, and
    56 of the tmpfs's 128 GiB free): the staged a/b/c and witness (16 GiB) and a synthesis
    on the host; on the device the key's tables (72.0 GiB), the NTT tables (16) and a proof's
    working set (20 of vectors, then B_G2's MSM scratch with its gathered scalars, 20.1): 128.1 of 139.8 GiB. Hence no
    precomputed copies (PROOFFLOW_MSM_PRECOMPUTE=0): a copy of the G2 table (24 GiB), the
    first the plans would add, no longer fits; nor the MSMs at once (PROOFFLOW_MSM_OVERLAP)."""
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", "0")
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "0")
    monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", H200_2P27_KEY_BUDGET)
    machine = _h200_2p27(circuit, key_on_disk=True, host_available=48 * GiB,
                         shared=Disk(Path("/dev/shm/pf-staging"), 56 * GiB, fs=9, memory=True))
    config = _validate(machine, circuit=circuit, log2=27, partitions=1, backend="gpu")
    need = resources.estimate(config, machine)
    assert need.host_files == 0 and need.host_setup == 0 and need.staging <= machine.staging_budget
    assert need.host == need.host_prove == need.staging + resources.SYNTHESIS_HOST * N27 < 23 * GiB
    assert f"{need.key_tables / GiB:.1f}" == "72.0" and need.key_tables == resources.key_table_bytes(
        resources.shape(config), "xy")  # resident as xy, whatever the files
    b_g2_scratch = resources.msm_scratch_bytes(resources.shape(config))[2]
    assert 160 * N27 < b_g2_scratch < 161 * N27  # the costliest MSM, above H's coset evaluations (96)
    assert need.device == need.key_tables + (resources.DEVICE_NTT_TABLES + resources.DEVICE_VECTORS) * N27 + b_g2_scratch
    assert f"{need.device / GiB:.1f}" == "128.1" and machine.device_total - need.device > 11 * GiB
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", str(24 * GiB))
    assert _refusal(machine, circuit=circuit, log2=27, partitions=1, backend="gpu") == (
        "log2 27 does not fit this machine: proving on the GPU needs about 153.2 GiB of device memory (the key's "
        "tables 96.0 GiB and a proof's working set; NVIDIA H200 has 139.8 GiB, 138.8 GiB free)")
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", "0")
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "1")
    assert "proving on the GPU needs about 189.3 GiB" in _refusal(machine, circuit=circuit, log2=27, partitions=1,
                                                                  backend="gpu")
    # the default key budget, half the device, is short of the key: refused before any work
    monkeypatch.setenv("PROOFFLOW_MSM_OVERLAP", "0")
    monkeypatch.delenv("PROOFFLOW_KEY_BUDGET")
    assert _refusal(machine, circuit=circuit, log2=27, partitions=1, backend="gpu") == (
        "log2 27 does not fit this machine: the proving key takes 72.0 GiB on the device, more than the prover's key "
        "budget of 69.9 GiB (PROOFFLOW_KEY_BUDGET, of the device's 139.8 GiB): raise PROOFFLOW_KEY_BUDGET")


def test_the_2p27_script_sets_what_these_tests_check():
    """bench/device.sh's 2p27 plan runs the configuration the H200 tests above check: their staging
    budget, no precomputed copies, no overlap, the key in /dev/shm, the cache on the disk."""
    import re
    runner = (Path(__file__).resolve().parents[2] / "bench" / "device.sh").read_text()
    text = runner.split("\n# == plan: 2p27\n", 1)[1].split("\n# == plan: ", 1)[0]
    exported = dict(re.findall(r"\b(PROOFFLOW_\w+)=(\$\(\([^)]*\)\)|\S+)", text))
    assert exported["PROOFFLOW_STAGING_BUDGET"] == f"$(({H200_2P27_STAGING >> 30} << 30))"
    assert exported["PROOFFLOW_MSM_PRECOMPUTE"] == "0" and exported["PROOFFLOW_MSM_OVERLAP"] == "0"
    assert exported["PROOFFLOW_KEY_BUDGET"] == H200_2P27_KEY_BUDGET
    assert exported["PROOFFLOW_CACHE"].startswith("/root/") and "key=/dev/shm/pf/params/" in text


def test_the_stream_plans_2p27_shape_fits_the_h200_with_its_key_resident(monkeypatch):
    """bench/device.sh's stream at 2^27 (stream_shape, in a shell) sets the 2p27 plan's device
    settings unless given, and caps the shared staging at three partitions' segments (one
    proving, two synthesized ahead); with the key in /dev/shm such a run passes the check."""
    import os
    import re
    import subprocess
    runner = (Path(__file__).resolve().parents[2] / "bench" / "device.sh").read_text()
    shape = re.search(r"\nstream_shape\(\) \{\n.*?\n\}\n", runner, re.S).group(0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFFLOW_")}
    out = subprocess.run(["bash", "-c", shape + "stream_shape 27 && echo $PROOFFLOW_MSM_PRECOMPUTE "
                          "$PROOFFLOW_MSM_OVERLAP $PROOFFLOW_KEY_BUDGET $S_STAGING"],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["0", "0", H200_2P27_KEY_BUDGET]
    staging = int(out[3]) << 30
    assert staging == 3 * H200_2P27_STAGING
    for name, value in zip(("PROOFFLOW_MSM_PRECOMPUTE", "PROOFFLOW_MSM_OVERLAP", "PROOFFLOW_KEY_BUDGET"), out):
        monkeypatch.setenv(name, value)
    key = 36 * GiB  # the compressed key's files, in the tmpfs and so out of MemAvailable
    machine = _h200_2p27("mimc", key_on_disk=True, host_available=120 * GiB - key, staging_budget=staging,
                         shared=Disk(Path("/dev/shm/pf-staging"), 128 * GiB - key, fs=9, memory=True))
    config = _validate(machine, circuit="mimc", log2=27, partitions=4, backend="gpu")
    assert resources.check(config, machine) == []
    assert resources.estimate(config, machine).host < machine.host_available
