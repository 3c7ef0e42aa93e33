"""G1 and G2 MSMs on the GPU: Pippenger (``proofflow/prover/device/pippenger.py``, kernels in
``proofflow/prover/device/msm.cu``) on CuPy.

A point table is uploaded once per device and kept resident (``PointTable.device_cache``),
converted to Montgomery form there (a compressed key table decompressed there, ``decompress``), without its rows at infinity when a key's table has
enough of them (``density``: an MSM then gathers its scalars at the rows kept); a plan
with precomputed copies (``pippenger.Plan``) builds them there from the rows kept, once,
and keeps them in its place. An MSM runs under the plan of the table's resident copies
unless told otherwise. Each curve's and group's kernels are a module of their own, so a
G1-only user never compiles the G2 ones; a table's curve picks its modules.
"""
from __future__ import annotations

import cupy as cp
import numpy as np

from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device import cache, density, pippenger
from proofflow.prover.device.options import DeviceOptions
from proofflow.prover.device.pippenger import PIECE
from proofflow.prover.points import PointTable

_THREADS = 128


def _blocks(n: int) -> int:
    return max(1, -(-n // _THREADS))


class CupyExecutor:
    """Launches the kernels of one module (``msm.cu`` or ``fixed_base.cu``) of ``curve`` on the
    current device, compiled with the product ``variant`` (default: ``source.curve_variant``
    of ``options.curve_variant``; all give the same values)."""

    xp = cp

    def __init__(self, curve: Curve, name: str, group: str, options: DeviceOptions, variant: str | None = None):
        self.curve = curve
        self._module = cache.load_curve_module(curve, name, group, options, variant)
        self._fn: dict = {}

    def launch(self, kernel: str, threads: int, *args) -> None:
        if kernel not in self._fn:
            self._fn[kernel] = self._module.get_function(kernel)
        self._fn[kernel]((_blocks(threads),), (_THREADS,), args)

    def host(self, a) -> np.ndarray:
        return cp.asnumpy(a)


_EXECUTORS: dict = {}


def executor(curve: Curve, group: str, options: DeviceOptions) -> CupyExecutor:
    key = curve.name, group, options.curve_variant, options.kernel_dir
    if key not in _EXECUTORS:
        _EXECUTORS[key] = CupyExecutor(curve, "msm.cu", group, options)
    return _EXECUTORS[key]


def _key(table: PointTable) -> tuple:
    """The cache key of the table's plain points on the current device; its precomputed
    copies are under this key + (plan,), one plan a device."""
    return f"{table.group}-affine-mont", cp.cuda.runtime.getDevice()


def _rows_key(table: PointTable) -> tuple:
    """The cache key of the rows the device table kept (``density.kept_rows``)."""
    return f"{table.group}-kept-rows", cp.cuda.runtime.getDevice()


def device_points(table: PointTable, options: DeviceOptions,
                  plan: pippenger.Plan | None = None) -> cp.ndarray:
    """The table's points on the current device, affine Montgomery: (m, 12) uint64 for
    G1, (m, 24) for G2 on BLS12-381, the m rows of ``kept_rows`` (all n unless the table has enough
    points at infinity); for a plan of shifts > 1, its (shifts * m)-row table of copies,
    built here the first time. The plain points are then its first m rows (a view), and
    the copies of another plan are dropped."""
    key = _key(table)
    if key not in table.device_cache:
        if table.compressed is not None:  # half the bytes up, decompressed (and checked) here
            from proofflow.prover.device import decompress
            pts = decompress.upload(table, options)
        else:
            width = pippenger.affine_limbs(table.curve, table.group)
            host = np.ascontiguousarray(table.xy).view(np.uint64).reshape(-1, width)
            # copied from the (memory-mapped) table itself: cp.asarray would first copy it whole
            # into a page-locked buffer that CuPy's pinned pool then keeps, 25.8 GB of host
            # memory for a 2^27 key's G2 table
            pts = cp.empty(host.shape, dtype=cp.uint64)
            pts.set(host)
            n = pts.shape[0]
            executor(table.curve, table.group, options).launch(f"to_montgomery_{table.group}", n, pts, np.uint64(n))
        rows = density.kept_rows(cp, pts)
        table.device_cache[_rows_key(table)] = rows
        table.device_cache[key] = pts if rows is None else pts[rows]
    if plan is None or plan.shifts == 1:
        return table.device_cache[key]
    if key + (plan,) not in table.device_cache:
        for old in [k for k in table.device_cache if k[:2] == key and len(k) == 3]:
            del table.device_cache[old]
        copies = pippenger.precompute(executor(table.curve, table.group, options), table.group,
                                      table.device_cache[key], plan)
        table.device_cache[key + (plan,)] = copies
        table.device_cache[key] = copies[:copies.shape[0] // plan.shifts]
    return table.device_cache[key + (plan,)]


def kept_rows(table: PointTable, options: DeviceOptions):
    """The rows of the table the device holds (int64 indices on the device), None for all:
    an MSM over it takes its scalars at these rows (``density.gather``)."""
    device_points(table, options)
    return table.device_cache[_rows_key(table)]


def resident_plan(table: PointTable) -> pippenger.Plan:
    """The plan of the table's precomputed copies on the current device, else the plain one."""
    key = _key(table)
    return next((k[2] for k in table.device_cache if k[:2] == key and len(k) == 3), pippenger.plain(len(table)))


class _Spans:
    """CUDA-event timing of the MSM's steps, into a dict of milliseconds (when asked for)."""

    def __init__(self, out: dict | None):
        self.out, self.last, self.name = out, None, None

    def mark(self, name: str | None) -> None:
        if self.out is None:
            return
        ev = cp.cuda.Event()
        ev.record()
        if self.last is not None:
            ev.synchronize()
            self.out[self.name] = cp.cuda.get_elapsed_time(self.last, ev)
        self.last, self.name = ev, name


def msm(table: PointTable, scalars, options: DeviceOptions, c: int | None = None,
        spans: dict | None = None, piece: int = PIECE, plan: pippenger.Plan | None = None,
        affine_rounds: int = 0, balanced: bool | None = None):
    """sum scalars[i] * table[i] in the table's group; ``scalars`` an Fr vector on the host
    or the device. Under ``plan`` (its copies built first if need be), else the plain plan
    with digits of ``c`` bits if given, else ``resident_plan``; ``affine_rounds``
    batch-affine rounds before the accumulation, ``balanced`` spans for it
    (``pippenger.msm``; default ``options.msm_balanced``). ``spans``, if given, receives each
    step's device time in ms (it synchronizes)."""
    n = len(table)
    if scalars.shape != (n, 4):
        raise ValueError(f"{n} points but scalars of shape {scalars.shape}")
    if n == 0:
        return table.curve.point_class(table.group).identity()
    plan = plan or (pippenger.Plan(c) if c else resident_plan(table))
    pts = device_points(table, options, plan)
    s = density.gather(cp, cp.ascontiguousarray(cp.asarray(scalars)), kept_rows(table, options))
    if s.shape[0] == 0:
        return table.curve.point_class(table.group).identity()
    return pippenger.msm(executor(table.curve, table.group, options), table.group, pts, s, plan, piece,
                         _Spans(spans).mark, affine_rounds,
                         balanced=options.msm_balanced if balanced is None else balanced)


def msm_g1(table: PointTable, scalars, options: DeviceOptions, c: int | None = None,
           spans: dict | None = None, piece: int = PIECE, plan: pippenger.Plan | None = None):
    if table.group != "g1":
        raise ValueError(f"msm_g1 takes a G1 table, got {table.group}")
    return msm(table, scalars, options, c, spans, piece, plan)


def msm_g2(table: PointTable, scalars, options: DeviceOptions, c: int | None = None,
           spans: dict | None = None, piece: int = PIECE, plan: pippenger.Plan | None = None):
    if table.group != "g2":
        raise ValueError(f"msm_g2 takes a G2 table, got {table.group}")
    return msm(table, scalars, options, c, spans, piece, plan)
