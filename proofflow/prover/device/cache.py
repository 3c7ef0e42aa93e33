"""The compiled GPU kernels on disk: every module proofflow loads, compiled by NVRTC into a
cubin for one compute capability and kept in the kernel directory (PROOFFLOW_KERNEL_DIR,
which callers pass in), so that a fresh process loads it instead of compiling
(79-143 s for the whole set on a GPU worker; issue #19).

A cubin's name carries a digest of everything its bytes depend on: the source text after
inlining, its curve's constants first (``source.source``), the NVRTC options, the arch and
NVRTC's version; its label names the curve too. An edited
header, another option, arch or compiler gives another name, so a stale cubin is never
loaded (``proofflow kernels list`` shows them). Next to each cubin a JSON manifest records
what it was built from and the cubin's size and SHA-256: a cubin without its manifest, or
not matching it (truncated, corrupt), is ignored and rebuilt. Both are written atomically
(``proofflow.prover.files``), under a lock file per cubin, so that services starting
together compile a module once.

NVRTC needs no GPU: ``proofflow kernels build --arch 90`` compiles for an H100/H200 on any
machine with CuPy and NVRTC (the GPU image does it at build time). CuPy is imported only
inside functions; ``compile_cubin`` and ``nvrtc_version`` are the whole NVRTC boundary.
What a module is built from (its text, its options) is ``source``'s, which knows nothing
of this cache.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from proofflow.prover import files
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device import source

if TYPE_CHECKING:
    import cupy

    from proofflow.prover.device.options import DeviceOptions

log = logging.getLogger(__name__)

FORMAT = 1  # part of every digest: bump it when what a cubin is built from changes meaning
# What CuPy's RawModule added to each NVRTC compile of these modules before they were
# shipped as cubins, kept so the machine code is the one the tests and benchmarks measured.
FLAGS = ("-ftz=true", "--device-as-default-execution-space")

compiles = 0  # NVRTC compiles in this process, CuPy's included (none where the cache has every cubin)
_count = threading.Lock()


class KernelBuildError(RuntimeError):
    """No CuPy or NVRTC, no arch to build for, or NVRTC rejected the source."""


class UnsupportedArch(KernelBuildError):
    """This NVRTC cannot compile for the arch asked for."""


@dataclass(frozen=True)
class Module:
    """One NVRTC compile unit: a ``.cu`` file for a curve, with its Fr product variant and,
    for the curve modules, its group (the arguments of ``load``)."""
    curve: Curve
    name: str
    variant: str = "mul32"
    group: str | None = None

    @property
    def label(self) -> str:
        return "-".join(filter(None, (Path(self.name).stem, self.variant, self.group, self.curve.name)))

    def text(self) -> str:
        return source.source(self.name, self.curve)

    def options(self) -> tuple[str, ...]:
        """NVRTC's options but the arch."""
        return source.options(self.variant, self.group, self.name) + FLAGS


# Every module proofflow loads, for each registered curve: the NTT module in the variants
# GpuBackend runs and its benchmark compares, the MSM, fixed-base, bitsum and decompression modules of each
# group in the variant the curve code uses by default (source.curve_variant); ``modules`` adds
# those of the configured variant.
def _curve_modules(curve: Curve, variant: str | None) -> tuple[Module, ...]:
    return tuple(Module(curve, name, source.curve_variant(curve.name, g, variant), g)
                 for name in ("msm.cu", "fixed_base.cu", "bitsum.cu", "decompress.cu") for g in source.GROUPS)


MODULES = tuple(m for c in registry.CURVES.values()
                for m in (Module(c, "ntt.cu", "mul32"), Module(c, "ntt.cu", "mul64"), *_curve_modules(c, None)))


def modules(curve_variant: str | None, variants=()) -> tuple[Module, ...]:
    """``MODULES``, the curve modules in ``curve_variant`` (PROOFFLOW_CURVE_VARIANT; None: each
    group's best), and for each of ``variants`` the modules the benchmarks and tests compare in it: ntt.cu and
    field.cu where its Fr or Fq products differ, the curve modules of both groups where its
    curve kernels do (``source.PRODUCT_VARIANTS``, ``source.CURVE_VARIANTS``); every curve's."""
    out = list(MODULES)
    for c in registry.CURVES.values():
        out += _curve_modules(c, curve_variant)
        for v in variants:
            source.options(v)  # an unknown variant fails here
            if v in source.PRODUCT_VARIANTS:
                out += [Module(c, "ntt.cu", v), Module(c, "field.cu", v)]
            if v in source.CURVE_VARIANTS:
                out += _curve_modules(c, v)
    return tuple(dict.fromkeys(out))


def normalize_arch(arch) -> str:
    """A compute capability as NVRTC's ``sm_`` takes it: "90" from 90, "sm_90", "9.0"."""
    text = str(arch).strip().lower().removeprefix("sm_").removeprefix("compute_")
    if re.fullmatch(r"\d+\.\d", text):
        text = text.replace(".", "")
    if not re.fullmatch(r"\d{2,3}[af]?", text):
        raise ValueError(f"not a compute capability: {arch!r} (e.g. 90 for an H100/H200, 80 for an A100)")
    return text


def digest(text: str, options, arch: str, nvrtc: tuple[int, int]) -> str:
    """What a cubin's bytes depend on: the source after inlining, the options, the arch, NVRTC."""
    key = {"format": FORMAT, "source": text, "options": list(options), "arch": arch, "nvrtc": list(nvrtc)}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def cubin_path(module: Module, arch: str, key: str, directory: Path) -> Path:
    """``<directory>/<file>-<variant>[-<group>]-<curve>-sm_<arch>-<digest>.cubin`` (the manifest: ``.json``)."""
    return Path(directory) / f"{module.label}-sm_{arch}-{key[:16]}.cubin"


# ---- the NVRTC boundary ------------------------------------------------------------------
def _nvrtc():
    try:
        import cupy  # noqa: F401  (loads CuPy's CUDA libraries)
        from cupy_backends.cuda.libs import nvrtc
    except ImportError as exc:
        raise KernelBuildError(f"CuPy is not installed (pip install 'proofflow[gpu]'): {exc}") from None
    return nvrtc


def _missing(exc: Exception) -> KernelBuildError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return KernelBuildError(f"NVRTC is missing or unusable ({first}): it comes with CuPy's [ctk] extra "
                            "(pip install 'cupy-cuda12x[ctk]') or the CUDA toolkit's libnvrtc")


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    try:
        major, minor = nvrtc.getVersion()
    except Exception as exc:  # CuPy loads libnvrtc on first use
        raise _missing(exc) from None
    return int(major), int(minor)


def compile_cubin(text: str, options: tuple[str, ...], arch: str, name: str) -> bytes:
    """NVRTC: ``text`` compiled with ``options`` for ``sm_<arch>``, the cubin's bytes."""
    nvrtc = _nvrtc()
    try:
        supported = nvrtc.getSupportedArchs()
    except Exception as exc:
        raise _missing(exc) from None
    if int(re.match(r"\d+", arch).group()) not in supported:
        raise UnsupportedArch(f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot compile for sm_{arch} "
                              f"(it knows {', '.join(map(str, supported))})")
    prog = nvrtc.createProgram(text, name, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options) + [f"-arch=sm_{arch}"])
        except nvrtc.NVRTCError as exc:
            raise KernelBuildError(f"NVRTC rejected {name} ({' '.join((*options, f'-arch=sm_{arch}'))}): {exc}\n"
                                   f"{nvrtc.getProgramLog(prog)}") from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


# ---- the cache -----------------------------------------------------------------------------
def _manifest(path: Path) -> Path:
    return path.with_suffix(".json")


def _read_manifest(path: Path) -> dict | None:
    try:
        meta = json.loads(_manifest(path).read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _whole(path: Path, meta: dict | None) -> bool:
    """The cubin is there and is the one its manifest describes (size and SHA-256)."""
    if meta is None:
        return False
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return meta.get("size") == len(data) and meta.get("sha256") == hashlib.sha256(data).hexdigest()


def _valid(path: Path, key: str) -> bool:
    meta = _read_manifest(path)
    return meta is not None and meta.get("key") == key and _whole(path, meta)


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cubin(module: Module, arch, directory: Path) -> tuple[Path, bool]:
    """The cubin of ``module`` for ``arch`` in kernel directory ``directory``: the cached one
    when it is whole and current, else compiled now and saved for every later process (True
    with it)."""
    global compiles
    arch = normalize_arch(arch)
    text, options, nvrtc = module.text(), module.options(), nvrtc_version()
    key = digest(text, options, arch, nvrtc)
    path = cubin_path(module, arch, key, directory)
    if _valid(path, key):
        return path, False
    with _locked(path):
        if _valid(path, key):  # another process built it while this one waited
            return path, False
        log.info("compiling %s for sm_%s with NVRTC %d.%d (once per machine: `proofflow kernels build` "
                 "does it ahead of time)", module.label, arch, *nvrtc)
        t0 = time.perf_counter()
        with _count:
            compiles += 1
        data = compile_cubin(text, options, arch, module.name)
        seconds = time.perf_counter() - t0
        files.write_bytes(path, data)
        files.write_json(_manifest(path), {
            "format": FORMAT, "module": module.name, "variant": module.variant, "group": module.group,
            "curve": module.curve.name,
            "arch": arch, "options": list(options), "nvrtc": list(nvrtc), "key": key, "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "compile_s": round(seconds, 2),
            "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return path, True


def load_module(module: Module, arch: str, directory: Path) -> "cupy.RawModule":
    """``module`` loaded from its cubin for ``arch`` (the current device's) in ``directory``,
    compiled first if the cache has none. Where no cubin can be had (a read-only kernel
    directory, an arch this NVRTC does not know, a cubin the driver refuses) CuPy compiles it
    as before, with a warning."""
    global compiles
    import cupy
    try:
        path, _ = cubin(module, arch, directory)
        loaded = cupy.RawModule(path=str(path))
        loaded.compile()  # RawModule loads lazily: load now, so that a refused file shows here
        return loaded
    except (UnsupportedArch, OSError, cupy.cuda.driver.CUDADriverError) as exc:
        log.warning("no cubin of %s for sm_%s (%s): compiling it through CuPy", module.label, arch, exc)
    with _count:
        compiles += 1
    loaded = cupy.RawModule(code=module.text(), options=source.options(module.variant, module.group, module.name))
    loaded.compile()
    return loaded


def load(curve: Curve, variant: str = "mul32", name: str = "ntt.cu", group: str | None = None, *,
         kernel_dir: Path) -> "cupy.RawModule":
    """The module compiled from ``name`` for ``curve`` and the current device, once per
    process: ``ntt.cu``, ``field.cu`` (Fq kernels for tests and benchmarks), or ``msm.cu`` /
    ``fixed_base.cu`` / ``bitsum.cu`` for one ``group`` (``g1`` or ``g2``); its cubin kept in
    ``kernel_dir``."""
    source.options(variant, group, name)  # a bad name or setting fails before CuPy is imported
    import cupy
    return _load(curve, variant, name, group, cupy.cuda.Device().compute_capability, Path(kernel_dir))


def load_curve_module(curve: Curve, name: str, group: str, options: "DeviceOptions", variant: str | None = None):
    """``load`` of a curve module (msm.cu, fixed_base.cu, bitsum.cu, decompress.cu) of ``group``
    in ``variant``, else in the configured one or the group's best (``source.curve_variant``)."""
    return load(curve, variant or source.curve_variant(curve.name, group, options.curve_variant), name, group,
                kernel_dir=options.kernel_dir)


@lru_cache(maxsize=None)
def _load(curve: Curve, variant: str, name: str, group: str | None, arch: str,
          kernel_dir: Path) -> "cupy.RawModule":
    return load_module(Module(curve, name, variant, group), arch, kernel_dir)


def default_archs(configured) -> list[str]:
    """``configured`` (PROOFFLOW_CUDA_ARCHS) when any, else the visible device's compute capability."""
    if configured:
        return [normalize_arch(a) for a in configured]
    from proofflow.prover import device
    if not cupy_installed():
        raise KernelBuildError("CuPy is not installed (pip install 'proofflow[gpu]')")
    if not device.available():
        raise KernelBuildError("no GPU visible to take the arch from: name it (e.g. 90 for an H100/H200) with "
                               "`proofflow kernels build --arch` or PROOFFLOW_CUDA_ARCHS")
    import cupy
    return [normalize_arch(cupy.cuda.Device().compute_capability)]


def cupy_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def build(archs, which: tuple[Module, ...], directory: Path,
          progress: Callable[[dict], None] | None = None) -> list[dict]:
    """Each module of ``which`` (``modules``) for every arch into kernel directory
    ``directory`` (those already there are kept), several NVRTC compiles at once. One dict
    per cubin: module, arch, path, bytes, built, seconds."""
    archs = [normalize_arch(a) for a in archs]
    nvrtc_version()  # no CuPy or NVRTC: one message before any work

    def one(job):
        module, arch = job
        t0 = time.perf_counter()
        path, built = cubin(module, arch, directory)
        result = {"module": module.label, "arch": arch, "path": str(path), "bytes": path.stat().st_size,
                  "built": built, "seconds": round(time.perf_counter() - t0, 2)}
        if progress:
            progress(result)
        return result

    jobs = [(m, a) for a in archs for m in which]
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        return list(pool.map(one, jobs))  # NVRTC compiles release the GIL


def entries(directory: Path) -> list[dict]:
    """What kernel directory ``directory`` holds, one dict per cubin: module, arch, nvrtc,
    bytes, path and status: current (what ``load`` would use with this source and NVRTC),
    stale (built from another source, options or NVRTC) or damaged (no manifest, or the
    cubin does not match it)."""
    try:
        here = nvrtc_version()
    except KernelBuildError:
        here = None  # no NVRTC here: judge by the source and options only
    out = []
    for path in sorted(Path(directory).glob("*.cubin")):
        meta = _read_manifest(path)
        entry = {"file": path.name, "path": str(path), "bytes": path.stat().st_size, "status": "damaged"}
        if meta is not None and _whole(path, meta):
            curve = meta.get("curve", registry.DEFAULT)  # a cubin of before curves were named: the default's
            name, variant, group = meta.get("module", ""), meta.get("variant", ""), meta.get("group")
            label = "-".join(filter(None, (Path(name).stem, variant, group, curve)))
            entry.update(module=label, arch=meta.get("arch"), nvrtc=".".join(map(str, meta.get("nvrtc", ()))))
            try:
                module = Module(registry.get_curve(curve), name, variant, group)
                key = digest(module.text(), module.options(), meta["arch"], tuple(here or meta["nvrtc"]))
            except (OSError, ValueError, KeyError):  # a module, option or curve this source no longer has
                key = None
            entry["status"] = "current" if key == meta.get("key") else "stale"
        out.append(entry)
    return out
