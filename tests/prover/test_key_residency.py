"""Proving keys on the device within a byte budget (``KeyCache``), and one GPU
setup at a time per host (``ensure_key``). The budget logic runs on keys of fake
sizes; the prover service's use of it is in test_prover_service.py."""
import threading
import time
from types import SimpleNamespace

import pytest

from proofflow import settings
from proofflow.prover import pipeline
from proofflow.prover.keys import Key, KeyCache, ensure_key, key_bytes
from proofflow.prover.groth16.data_structures import PK_TABLES, ProvingKey
from proofflow.prover.timing import PhaseTimer


def _key(name: str, nbytes: int) -> Key:
    """A key whose five tables take ``nbytes`` together, each with a device copy to drop."""
    per = nbytes // len(PK_TABLES)
    pk = SimpleNamespace(**{t: SimpleNamespace(xy_nbytes=per, device_cache={}) for t in PK_TABLES},
                         circuit="mimc", log2=8, curve=SimpleNamespace(name="bls12_381"))
    return Key(pk, None, name)


class _Device:
    """Uploads as the backend's prepare does: a copy of each table in its device_cache."""

    def __init__(self):
        self.uploads = []

    def __call__(self, pk, plans):
        self.uploads.append(pk)
        for t in PK_TABLES:
            getattr(pk, t).device_cache["dev"] = object()


def _on_device(key) -> bool:
    return all(getattr(key.pk, t).device_cache for t in PK_TABLES)


def test_keys_within_the_budget_stay_resident_and_upload_once():
    cache, up = KeyCache(300), _Device()
    a, b, c = _key("a", 100), _key("b", 100), _key("c", 100)
    for k in (a, b, c, a, b, c):
        assert cache.make_resident(k, up) == []
    assert len(up.uploads) == 3 and cache.evictions == 0
    assert [r["directory"] for r in cache.resident()] == ["a", "b", "c"] and cache.resident_bytes() == 300
    assert all(k.resident and _on_device(k) for k in (a, b, c))


def test_the_least_recently_used_key_is_evicted_to_fit_a_new_one():
    cache, up = KeyCache(250), _Device()
    a, b, c = _key("a", 100), _key("b", 100), _key("c", 100)
    cache.make_resident(a, up)
    cache.make_resident(b, up)
    cache.make_resident(a, up)  # a used last: b is the least recently used
    timer = PhaseTimer()
    assert cache.make_resident(c, up, timer) == [b]
    assert not b.resident and not any(getattr(b.pk, t).device_cache for t in PK_TABLES)
    assert a.resident and c.resident and _on_device(a) and _on_device(c)
    assert [r["directory"] for r in cache.resident()] == ["a", "c"] and cache.evictions == 1
    assert [e["directory"] for e in cache.evicted] == ["b"] and cache.evicted[0]["bytes"] == 100
    assert [s.phase for s in timer.spans] == ["key_upload"]  # the eviction is part of making c resident
    # b comes back: a is now the least recently used
    assert cache.make_resident(b, up) == [a] and cache.evictions == 2


def test_a_large_key_evicts_as_many_as_it_needs_and_one_too_large_is_refused():
    cache, up = KeyCache(300), _Device()
    small = [_key(n, 100) for n in "abc"]
    for k in small:
        cache.make_resident(k, up)
    big = _key("big", 250)
    assert cache.make_resident(big, up) == small and cache.resident_bytes() == 250
    huge = _key("huge", 400)
    with pytest.raises(pipeline.InputError, match="more than the whole key budget of 300 bytes"):
        cache.make_resident(huge, up)
    assert big.resident and cache.evictions == 3 and not huge.resident


def test_a_reloaded_key_replaces_its_older_version_and_a_failed_upload_leaves_nothing():
    cache, up = KeyCache(1000), _Device()
    old, new = _key("a", 100), _key("a", 100)  # the same directory, its files changed
    cache.make_resident(old, up)
    assert cache.make_resident(new, up) == [old] and not old.resident

    def fails(pk, plans):
        getattr(pk, "a_query").device_cache["dev"] = object()  # part of it made it
        raise MemoryError("out of device memory")
    broken = _key("b", 100)
    with pytest.raises(MemoryError):
        cache.make_resident(broken, fails)
    assert not broken.resident and not broken.pk.a_query.device_cache
    assert [r["directory"] for r in cache.resident()] == ["a"]
    cache.drop_all()
    assert cache.resident() == [] and not new.resident and not _on_device(new)


def test_an_evicted_key_leaves_the_device_and_uploads_again_on_its_next_use():
    cache, up = KeyCache(300), _Device()
    a, b = _key("a", 100), _key("b", 100)
    cache.make_resident(a, up)
    cache.make_resident(b, up)
    assert cache.evict("a") == 100 and not a.resident and not _on_device(a) and _on_device(b)
    assert [r["directory"] for r in cache.resident()] == ["b"] and cache.resident_bytes() == 100
    assert cache.evictions == 0  # asked for: not an eviction to fit another key
    assert cache.evict("a") is None  # not resident: nothing to do
    timer = PhaseTimer()
    assert cache.make_resident(a, up, timer) == [] and a.resident and len(up.uploads) == 3
    assert [s.phase for s in timer.spans] == ["key_upload"]


def test_no_budget_keeps_every_key():
    cache, up = KeyCache(None), _Device()
    keys = [_key(str(i), 1 << 40) for i in range(5)]
    for k in keys:
        assert cache.make_resident(k, up) == []
    assert cache.evictions == 0 and len(cache.resident()) == 5


def test_loaded_keys_beyond_the_budget_are_forgotten_unless_resident(mimc8_key_dir, tmp_path):
    import shutil
    other = shutil.copytree(mimc8_key_dir, tmp_path / "mimc-8-copy")
    one = key_bytes(ProvingKey.load(mimc8_key_dir, verify_digests=False))
    cache, up = KeyCache(one), _Device()
    a = cache.get(mimc8_key_dir, "mimc", 8)
    assert a.nbytes == one and a.fingerprint
    b = cache.get(other, "mimc", 8)
    assert cache.directories() == [str(other)]  # a was not resident: forgotten
    cache.make_resident(a, up)  # its job reached the device anyway: it is known again
    assert cache.directories() == [str(mimc8_key_dir)]
    assert cache.get(mimc8_key_dir, "mimc", 8) is a  # not loaded again
    cache.get(other, "mimc", 8)  # a is resident: it stays loaded beside the new one
    assert set(cache.directories()) == {str(mimc8_key_dir), str(other)}
    assert b is not None


def test_a_gpu_cache_loads_keys_with_plans_within_half_its_budget(mimc8_key_dir, monkeypatch):
    """A KeyCache with device options (a GPU prover service's) plans each key's MSM copies
    when it loads it: under ``auto`` within half the budget, key and copies together."""
    from proofflow.prover.backend.by_name import device_options
    from proofflow.prover.device import pippenger
    monkeypatch.setenv("PROOFFLOW_MSM_PRECOMPUTE", "auto")
    one = key_bytes(ProvingKey.load(mimc8_key_dir, verify_digests=False))
    gpu = KeyCache(100 * one, device_options(settings.current())).get(mimc8_key_dir, "mimc", 8)
    assert gpu.plans == pippenger.proving_key_plans(gpu.pk, 100 * one, None)
    assert any(p.shifts > 1 for p in gpu.plans.values()) and one < gpu.nbytes <= 50 * one
    cpu = KeyCache(100 * one).get(mimc8_key_dir, "mimc", 8)
    assert cpu.plans is None and cpu.nbytes == one


@pytest.mark.parametrize("raw, expected", [(None, 500), ("0.25", 250), ("1", 1000), ("123456", 123456)])
def test_key_budget_setting(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("PROOFFLOW_KEY_BUDGET", raising=False)
    else:
        monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", raw)
    assert settings.current().key_budget.of(1000) == expected


@pytest.mark.parametrize("raw", ["lots", "-1", "0", "1.5"])
def test_a_bad_key_budget_names_the_setting(monkeypatch, raw):
    monkeypatch.setenv("PROOFFLOW_KEY_BUDGET", raw)
    with pytest.raises(ValueError, match="PROOFFLOW_KEY_BUDGET"):
        settings.current().key_budget.of(1000)


# -- one GPU setup at a time per host -----------------------------------------------------------
@pytest.fixture
def fake_setup(monkeypatch, mimc8_key_dir, tmp_path):
    """generator.setup replaced by one that takes a while and counts the setups running at
    once; it returns the real 2^8 key, so ensure_key saves a usable directory."""
    from proofflow.prover.groth16 import generator
    monkeypatch.setenv("PROOFFLOW_SETUP_LOCK", str(tmp_path / "lock" / "gpu-setup.lock"))
    pk = ProvingKey.load(mimc8_key_dir)
    state = {"running": 0, "max": 0, "backends": [], "barrier": None}
    guard = threading.Lock()

    def setup(circuit, seed, progress=None, backend=None, directory=None):
        with guard:
            state["running"] += 1
            state["max"] = max(state["max"], state["running"])
            state["backends"].append(backend)
        try:
            if state["barrier"] is not None:
                state["barrier"].wait()  # every setup must be inside at once
            time.sleep(0.2)
            return pk
        finally:
            with guard:
                state["running"] -= 1
    monkeypatch.setattr(generator, "setup", setup)
    return state


def _setups(tmp_path, backend, seeds):
    timers, errors = {s: PhaseTimer() for s in seeds}, []

    def run(seed):
        try:
            ensure_key(tmp_path / "params" / f"mimc-8-seed{seed}", "mimc", 8, seed, backend, timers[seed])
        except Exception as exc:  # surfaced below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    return timers


def test_gpu_setups_of_distinct_keys_run_one_at_a_time(fake_setup, tmp_path):
    timers = _setups(tmp_path, "gpu", range(6))  # six runs with seeds 0..5 triggered together
    assert fake_setup["max"] == 1 and len(fake_setup["backends"]) == 6
    waits = {s: [x for x in t.spans if x.phase == "setup_lock_wait"] for s, t in timers.items()}
    assert all(len(w) == 1 for w in waits.values())
    assert sum(w[0].end - w[0].start for w in waits.values()) >= 0.2 * (1 + 2 + 3 + 4 + 5) * 0.9
    assert all((tmp_path / "params" / f"mimc-8-seed{s}" / "params.json").exists() for s in range(6))
    # the keys are there now: loading a cached key never waits for the device's lock
    again = PhaseTimer()
    assert ensure_key(tmp_path / "params" / "mimc-8-seed3", "mimc", 8, 3, "gpu", again) is True
    assert {s.phase for s in again.spans} == {"lock_wait", "load_cached"}


def test_cpu_setups_are_not_serialized(fake_setup, tmp_path):
    fake_setup["barrier"] = threading.Barrier(2, timeout=20)  # broken (an error) if they ran one at a time
    timers = _setups(tmp_path, "cpu", (0, 1))
    assert fake_setup["max"] == 2
    assert not any(s.phase == "setup_lock_wait" for t in timers.values() for s in t.spans)
