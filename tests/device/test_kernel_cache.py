"""The GPU kernel cache without a GPU or CuPy: what names a cubin, where it lives, a damaged
one rebuilt, `proofflow kernels`. NVRTC is faked at its boundary (``cache.compile_cubin``,
``cache.nvrtc_version``); the real compile and load are test_gpu_kernel_cache.py's."""
from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time

import pytest

from proofflow import cli, settings
from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.device import cache, source


PER_CURVE = 10  # modules a curve: ntt.cu in 2 product variants, msm.cu, fixed_base.cu, bitsum.cu and decompress.cu per group


@pytest.fixture
def kernel_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PROOFFLOW_KERNEL_DIR", str(tmp_path / "kernels"))
    monkeypatch.delenv("PROOFFLOW_CUDA_ARCHS", raising=False)
    return tmp_path / "kernels"


@pytest.fixture
def nvrtc(monkeypatch):
    """A fake NVRTC 12.9 whose cubin is a digest of its input; the list of its compiles."""
    calls = []

    def compile_cubin(text, options, arch, name):
        calls.append((name, arch))
        return hashlib.sha256(repr((text, options, arch)).encode()).digest() * 8

    monkeypatch.setattr(cache, "compile_cubin", compile_cubin)
    monkeypatch.setattr(cache, "nvrtc_version", lambda: (12, 9))
    return calls


NTT = cache.Module(CURVE, "ntt.cu", "mul32")


def test_digest_changes_with_source_options_arch_and_nvrtc():
    base = ("text", ("-std=c++17",), "90", (12, 9))
    assert cache.digest(*base) == cache.digest(*base)
    others = [("text ", *base[1:]), (base[0], ("-std=c++17", "-DFR_MUL64"), *base[2:]),
              (*base[:2], "80", base[3]), (*base[:3], (12, 8))]
    assert len({cache.digest(*base)} | {cache.digest(*o) for o in others}) == 5


def test_an_edited_header_gives_another_name(tmp_path, monkeypatch):
    """The digest is of the text after inlining, so a header edit reaches every module using it."""
    shutil.copytree(source._DIR, tmp_path / "src", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(source, "_DIR", tmp_path / "src")
    before = [cache.digest(m.text(), m.options(), "90", (12, 9)) for m in cache.MODULES]
    with open(tmp_path / "src" / "mont.cuh", "a") as f:  # every module includes it
        f.write("\n// edited\n")
    after = [cache.digest(m.text(), m.options(), "90", (12, 9)) for m in cache.MODULES]
    assert len(set(before)) == len(cache.MODULES)  # every module a name of its own
    assert all(b != a for b, a in zip(before, after))


def test_the_modules_are_those_the_code_loads():
    """Each curve's group in its best variant: call, but BN254's G1 wide (source.BEST_VARIANT)."""
    def variant(c, g):
        return "wide" if (c, g) == ("bn254", "g1") else "call"
    assert [m.label for m in cache.MODULES] == [f"{m}-{c}" for c in registry.NAMES for m in (
        "ntt-mul32", "ntt-mul64", *(f"{name}-{variant(c, g)}-{g}" for name in ("msm", "fixed_base", "bitsum",
                                                                              "decompress") for g in ("g1", "g2")))]
    assert len(cache.MODULES) == PER_CURVE * len(registry.CURVES)
    assert NTT.options() == ("-std=c++17",) + cache.FLAGS


def test_layout_and_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("PROOFFLOW_KERNEL_DIR", raising=False)
    monkeypatch.setenv("PROOFFLOW_CACHE", str(tmp_path / "cache"))
    assert settings.current().kernel_dir == tmp_path / "cache" / "kernels"
    monkeypatch.setenv("PROOFFLOW_KERNEL_DIR", str(tmp_path / "k"))
    key = "ab" * 32
    module = cache.Module(CURVE, "msm.cu", "mul32", "g2")
    assert cache.cubin_path(module, "90", key, settings.current().kernel_dir) == \
        tmp_path / "k" / f"msm-mul32-g2-bls12_381-sm_90-{key[:16]}.cubin"
    monkeypatch.setenv("PROOFFLOW_CUDA_ARCHS", "80, 90")
    archs = settings.current().cuda_archs
    assert archs == ("80", "90") and cache.default_archs(archs) == ["80", "90"]
    assert [cache.normalize_arch(a) for a in (90, "sm_90", "9.0", "compute_90", "90a")] == ["90"] * 4 + ["90a"]
    with pytest.raises(ValueError, match="compute capability"):
        cache.normalize_arch("hopper")


def test_a_cubin_is_compiled_once_then_read_from_disk(kernel_dir, nvrtc):
    path, built = cache.cubin(NTT, "sm_90", kernel_dir)
    assert built and path.parent == kernel_dir and path.name.startswith("ntt-mul32-bls12_381-sm_90-")
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and meta["nvrtc"] == [12, 9]
    assert cache.cubin(NTT, "90", kernel_dir) == (path, False)
    assert nvrtc == [("ntt.cu", "90")]
    assert cache.cubin(NTT, "80", kernel_dir)[1] and len(nvrtc) == 2  # another arch, another cubin


@pytest.mark.parametrize("damage", ["truncated", "a byte flipped", "no manifest", "manifest garbled", "emptied"])
def test_a_damaged_cubin_is_ignored_and_rebuilt(kernel_dir, nvrtc, damage):
    path, _ = cache.cubin(NTT, "90", kernel_dir)
    good = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "a byte flipped":
        path.write_bytes(good[:7] + bytes([good[7] ^ 1]) + good[8:])
    elif damage == "no manifest":
        path.with_suffix(".json").unlink()
    elif damage == "manifest garbled":
        path.with_suffix(".json").write_text("{not json")
    else:
        path.write_bytes(b"")
    assert [e["status"] for e in cache.entries(kernel_dir)] == ["damaged"]
    assert cache.cubin(NTT, "90", kernel_dir) == (path, True)
    assert path.read_bytes() == good and len(nvrtc) == 2
    assert [e["status"] for e in cache.entries(kernel_dir)] == ["current"]


def test_a_stale_cubin_is_never_loaded(kernel_dir, nvrtc, monkeypatch):
    old, _ = cache.cubin(NTT, "90", kernel_dir)
    monkeypatch.setattr(cache, "nvrtc_version", lambda: (13, 0))
    new, built = cache.cubin(NTT, "90", kernel_dir)
    assert built and new != old
    assert {e["file"]: e["status"] for e in cache.entries(kernel_dir)} == {old.name: "stale", new.name: "current"}


def test_processes_starting_together_compile_once(kernel_dir, monkeypatch):
    calls = []

    def slow_compile(text, options, arch, name):
        calls.append(name)
        time.sleep(0.3)
        return b"cubin"
    monkeypatch.setattr(cache, "compile_cubin", slow_compile)
    monkeypatch.setattr(cache, "nvrtc_version", lambda: (12, 9))
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.cubin(NTT, "90", kernel_dir))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["ntt.cu"] and sorted(built for _, built in results) == [False, False, True]


def test_kernels_build_and_list(kernel_dir, nvrtc, capsys):
    n = len(cache.MODULES)
    assert cli.main(["kernels", "build", "--arch", "90,80"]) == 0
    assert len(nvrtc) == 2 * n and len(list(kernel_dir.glob("*.cubin"))) == 2 * n
    assert f"{2 * n} compiled, 0 already cached" in capsys.readouterr().out
    assert cli.main(["kernels", "build", "--arch", "sm_90", "--json"]) == 0
    assert [r["built"] for r in json.loads(capsys.readouterr().out)] == [False] * n and len(nvrtc) == 2 * n
    assert cli.main(["kernels", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["directory"] == str(kernel_dir) and len(listing["kernels"]) == 2 * n
    assert {e["status"] for e in listing["kernels"]} == {"current"}
    assert cli.main(["kernels", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{2 * n} cubin(s)" in out and "msm-call-g2" in out and "sm_80" in out


def test_variants_add_the_modules_compared_in_them():
    assert cache.modules(None) == cache.MODULES
    labels = [m.label for m in cache.modules(None, ["wide", "call", "mul32"])]
    assert labels[:len(cache.MODULES)] == [m.label for m in cache.MODULES] and len(set(labels)) == len(labels)
    assert set(labels[len(cache.MODULES):]) == {f"{m}-{c}" for c in registry.NAMES for m in (
        "ntt-wide", "field-wide", "field-mul32",
        *(f"{name}-{v}-{g}" for name in ("msm", "fixed_base", "bitsum", "decompress") for v in ("wide", "call", "mul32")
          for g in ("g1", "g2")))} - {m.label for m in cache.MODULES}
    with pytest.raises(ValueError, match="unknown kernel variant"):
        cache.modules(None, ["wider"])


def test_kernels_build_with_variants(kernel_dir, nvrtc, capsys):
    assert cli.main(["kernels", "build", "--arch", "90", "--variants", "wide"]) == 0
    # each curve's modules, and its ntt.cu, field.cu and eight curve modules in the wide variant, but
    # the four of BN254's G1, whose best variant is wide
    assert len(nvrtc) == 2 * PER_CURVE * len(registry.CURVES) - 4
    assert len(list(kernel_dir.glob("*-wide-g[12]-bls12_381-sm_90-*.cubin"))) == 8
    with pytest.raises(SystemExit):
        cli.main(["kernels", "build", "--arch", "90", "--variants", "fast"])
    assert "invalid choice: 'fast'" in capsys.readouterr().err


def test_kernels_build_needs_an_arch_without_a_gpu(kernel_dir, nvrtc, monkeypatch, capsys):
    from proofflow.prover import device
    monkeypatch.setattr(cache, "cupy_installed", lambda: True)
    monkeypatch.setattr(device, "available", lambda: False)
    assert cli.main(["kernels", "build"]) == cli.EXIT_FAILED
    assert "--arch" in capsys.readouterr().err and nvrtc == []
    monkeypatch.setenv("PROOFFLOW_CUDA_ARCHS", "90")
    assert cli.main(["kernels", "build"]) == 0 and len(nvrtc) == len(cache.MODULES)
    assert cli.main(["kernels", "build", "--arch", "ampere"]) == cli.EXIT_BAD_INPUT


def test_setup_builds_the_kernels_best_effort(kernel_dir, nvrtc, monkeypatch, capsys):
    monkeypatch.setattr(cache, "cupy_installed", lambda: False)
    assert cli._setup_kernels() == {"skipped": "CuPy is not installed"} and nvrtc == []
    monkeypatch.setattr(cache, "cupy_installed", lambda: True)
    monkeypatch.setenv("PROOFFLOW_CUDA_ARCHS", "90")
    n = len(cache.MODULES)
    assert cli._setup_kernels() == {"directory": str(kernel_dir), "archs": ["90"], "cubins": n, "compiled": n}

    def no_nvrtc():
        raise cache.KernelBuildError("NVRTC is missing or unusable (libnvrtc.so.12)")
    monkeypatch.setattr(cache, "nvrtc_version", no_nvrtc)
    assert "NVRTC is missing" in cli._setup_kernels()["skipped"]
    assert "GPU kernels not built" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [(["kernels", "--help"], ["build", "list"]),
                                         (["kernels", "build", "--help"], ["--arch", "NVRTC needs no GPU"]),
                                         (["kernels", "list", "--help"], ["stale", "--json"]),
                                         (["setup", "--help"], ["--no-kernels"])])
def test_kernels_help(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.parser().parse_args(argv)
    out = " ".join(capsys.readouterr().out.split())
    assert exit_.value.code == 0 and all(w in out for w in words), out
