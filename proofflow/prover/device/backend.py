"""The GPU backend: NTTs, the H polynomial, the G1 and G2 MSMs and the setup's fixed-base
multiplications in CUDA through CuPy.

Fr vectors keep the CPU layout ((n, 4) uint64, Montgomery form) on the device, so a host
vector uploads unchanged and results compare bit for bit with ``CpuBackend``. Each
transform has a host variant (the ``Backend`` interface: numpy in, numpy out) and a
``*_device`` variant taking and returning CuPy arrays, for callers that keep data
resident. Twiddle and coset tables are generated on the device, once per curve and size.
One backend serves every registered curve: each call's kernels are those of its data's
curve (the domain's, the table's), compiled per curve (``source.curve_header``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import cupy as cp
import numpy as np

from proofflow.prover import points
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.device import cache, density, fixed_base, msm as gpu_msm, overlap, pippenger, sparse, stream_gate
from proofflow.prover.device.options import DeviceOptions
from proofflow.prover.backend.base import Backend, Transfer
from proofflow.prover.field.fr import Fr
from proofflow.prover.groth16.data_structures import PK_TABLES
from proofflow.prover.polynomial.domain import Radix2Domain

_THREADS = 256
_TILE_LOG = 10  # a pass's tile: 1024 elements, as TILE in ntt.cu
_COLS_LOG = 2   # later passes take 4 adjacent columns (128-byte rows)
_SCALE_NONE, _SCALE_ONE, _SCALE_TABLE = 0, 1, 2
_MAX_LOG2 = 31  # 32-bit element indices in the kernels


def pass_plan(log_n: int, first: int = _TILE_LOG, cols_log: int = _COLS_LOG) -> list[tuple[int, int, int]]:
    """(s0, stages, log_cols) for each pass: a first pass of up to ``first`` stages on
    contiguous tiles, then the remaining stages split evenly over as few passes as fit a
    tile of 2^first elements with 2^cols_log columns."""
    head = min(log_n, first)
    plan = [(0, head, 0)]
    rest, per = log_n - head, first - cols_log
    count = -(-rest // per)
    s0 = head
    for i in range(count):
        stages = rest // count + (i < rest % count)
        plan.append((s0, stages, cols_log))
        s0 += stages
    return plan


def _grid(n: int) -> int:
    return max(1, min(-(-n // _THREADS), 132 * 64))  # grid-stride loops beyond this


def _scalar(curve: Curve, x: int) -> cp.ndarray:
    return cp.asarray(Fr.of(curve).constant(x))


@dataclass
class _Tables:
    """Per-size device tables (each an Fr vector)."""
    tw: cp.ndarray            # w^j, j < n/2
    tw_inv: cp.ndarray        # w^-j
    coset: cp.ndarray         # g^i
    coset_div_n: cp.ndarray   # g^i / n: an iNTT's 1/n and the coset shift of the NTT after it
    coset_inv_div_n: cp.ndarray  # g^-i / n
    n_inv: cp.ndarray         # 1/n, one element
    z_inv: cp.ndarray         # 1/(g^n - 1), one element


class GpuBackend(Backend):
    name = "gpu"

    def __init__(self, options: DeviceOptions, variant: str = "mul32", g2_on_gpu: bool = True,
                 overlap: bool | None = None):
        """``options``: the kernels' and MSMs' (its callers' settings); ``variant``: the NTT
        module's product. ``g2_on_gpu=False`` runs the G2 MSM on the host through arkworks
        instead, overlapped with the device's work by the prover (the backend's behaviour
        before the G2 kernels). ``overlap`` runs a proof's MSMs at once, each on a stream of
        its own (``msms``; default: ``options.msm_overlap``)."""
        self.options = options
        self.variant = variant
        self.g2_on_host = not g2_on_gpu
        self.overlap = options.msm_overlap if overlap is None else overlap
        self._fn = {}
        self._warm: set[str] = set()

    def _kernel(self, curve: Curve, name: str):
        if (curve.name, name) not in self._fn:
            module = cache.load(curve, self.variant, kernel_dir=self.options.kernel_dir)
            self._fn[curve.name, name] = module.get_function(name)
        return self._fn[curve.name, name]

    def tables(self, domain: Radix2Domain) -> _Tables:
        return _tables(cp.cuda.runtime.getDevice(), domain.curve, domain.log_n, self.options.kernel_dir)

    # ---- building blocks on device arrays ----
    def _check(self, domain: Radix2Domain, x) -> cp.ndarray:
        if domain.log_n > _MAX_LOG2:
            raise ValueError(f"the GPU kernels take domains up to 2^{_MAX_LOG2}")
        x = cp.asarray(x)
        if x.dtype != cp.uint64 or x.shape != (domain.size, 4):
            raise ValueError(f"expected an Fr vector of shape ({domain.size}, 4), got {x.dtype} {x.shape}")
        return cp.ascontiguousarray(x)

    def _bitrev(self, curve, x, log_n, scale=None, mode=_SCALE_NONE, out=None) -> cp.ndarray:
        out = cp.empty_like(x) if out is None else out
        scale = x if scale is None else scale  # any valid pointer; mode NONE never reads it
        n = 1 << log_n
        self._kernel(curve, "bitrev_scale")((_grid(n),), (_THREADS,), (x, out, np.int32(log_n), scale, np.int32(mode)))
        return out

    def _passes(self, curve, x, log_n, tw, scale=None, mode=_SCALE_NONE) -> cp.ndarray:
        """The butterfly stages in place on a bit-reversed vector; ``scale`` on the last store."""
        plan = pass_plan(log_n)
        fn = self._kernel(curve, "ntt_pass")
        for i, (s0, stages, cols) in enumerate(plan):
            last = i == len(plan) - 1
            blocks = (1 << log_n) >> (stages + cols)
            fn((blocks,), (_THREADS,), (x, tw, np.int32(log_n), np.int32(s0), np.int32(stages), np.int32(cols),
                                         scale if last and scale is not None else x,
                                         np.int32(mode if last else _SCALE_NONE)))
        return x

    # ---- transforms on device arrays (inputs untouched, new arrays returned) ----
    def ntt_device(self, domain: Radix2Domain, x, inverse: bool = False) -> cp.ndarray:
        x, t, c = self._check(domain, x), self.tables(domain), domain.curve
        y = self._bitrev(c, x, domain.log_n)
        if inverse:
            return self._passes(c, y, domain.log_n, t.tw_inv, t.n_inv, _SCALE_ONE)
        return self._passes(c, y, domain.log_n, t.tw)

    def coset_ntt_device(self, domain: Radix2Domain, x, inverse: bool = False) -> cp.ndarray:
        x, t, c = self._check(domain, x), self.tables(domain), domain.curve
        if inverse:
            y = self._bitrev(c, x, domain.log_n)
            return self._passes(c, y, domain.log_n, t.tw_inv, t.coset_inv_div_n, _SCALE_TABLE)
        y = self._bitrev(c, x, domain.log_n, t.coset, _SCALE_TABLE)  # g^i on the source index
        return self._passes(c, y, domain.log_n, t.tw)

    def compute_h_device(self, domain: Radix2Domain, a, b, c) -> cp.ndarray:
        """H's coefficients from the evaluations a, b, c, all on the device (see ``compute_h``)."""
        t, log_n, cv = self.tables(domain), domain.log_n, domain.curve
        coset_evals = []
        tmp = None
        for v in (a, b, c):
            v = self._check(domain, v)
            # iNTT with its 1/n and the coset's g^i folded into one table on the last store
            tmp = self._passes(cv, self._bitrev(cv, v, log_n, out=tmp), log_n, t.tw_inv, t.coset_div_n, _SCALE_TABLE)
            coset_evals.append(self._passes(cv, self._bitrev(cv, tmp, log_n), log_n, t.tw))
        ea, eb, ec = coset_evals
        # (a*b - c) / Z, with Z = g^n - 1 constant on the coset, in the iNTT's permutation
        out = tmp
        n = domain.size
        self._kernel(cv, "bitrev_h")((_grid(n),), (_THREADS,), (ea, eb, ec, out, np.int32(log_n), t.z_inv))
        return self._passes(cv, out, log_n, t.tw_inv, t.coset_inv_div_n, _SCALE_TABLE)

    def compute_h_odd_coset_device(self, domain: Radix2Domain, a, b, c) -> cp.ndarray:
        """A*B - C at snarkjs's odd points, in its order, all on the device (see
        ``Backend.compute_h_odd_coset``): each vector relabelled from snarkjs's roots of
        unity to ours (a gather), an iNTT with its 1/n and the odd-coset shift folded into
        the last store, an NTT, the products, and the gather back."""
        t, log_n, cv = self.tables(domain), domain.log_n, domain.curve
        where, to_ours, shift_div_n = _odd_coset_tables(cp.cuda.runtime.getDevice(), cv, log_n)
        evals = []
        for v in (a, b, c):
            v = self._check(domain, v)[to_ours]
            coeffs = self._passes(cv, self._bitrev(cv, v, log_n), log_n, t.tw_inv, shift_div_n, _SCALE_TABLE)
            evals.append(self._passes(cv, self._bitrev(cv, coeffs, log_n, out=v), log_n, t.tw))
        ea, eb, ec = evals
        return self.sub_device(cv, self.mul_device(cv, ea, eb), ec)[where]

    # ---- the Backend interface: host arrays in and out ----
    def ntt(self, domain, x, inverse=False):
        return cp.asnumpy(self.ntt_device(domain, x, inverse))

    def coset_ntt(self, domain, x, inverse=False):
        return cp.asnumpy(self.coset_ntt_device(domain, x, inverse))

    def compute_h(self, domain, a, b, c):
        return cp.asnumpy(self.compute_h_device(domain, a, b, c))

    def compute_h_odd_coset(self, domain, a, b, c):
        return cp.asnumpy(self.compute_h_odd_coset_device(domain, a, b, c))

    def warm_up(self):
        """Every module loaded (from its cubin in the kernel cache, compiled into it the first
        time on a machine) and every MSM path and the H computation run once on a tiny input:
        CuPy compiles its own scans, searches and reductions on their first use (into its
        disk cache, ~10 s on a fresh machine, measured as a first proof's 10.5 s MSM phase),
        and that belongs to the service's start, not to a proof's device phase. Several table
        sizes (``_WARM_ROWS``): CuPy picks its scans' and reductions' kernels by size. The
        default curve's modules and paths; another curve's when its first key is prepared
        (``prepare``: in that key's upload), so a service proving one curve loads no other's."""
        self._warm_up(registry.get_curve(registry.DEFAULT))
        if self.overlap:  # the MSM lanes' threads and streams, made once
            device = cp.cuda.runtime.getDevice()
            _lanes(device)
            for k in range(overlap.WIDTH):
                _lane_stream(device, k)
        cp.cuda.get_current_stream().synchronize()

    def _warm_up(self, curve: Curve) -> None:
        if curve.name in self._warm:
            return
        self._warm.add(curve.name)
        self._kernel(curve, "bitrev_scale")
        for group in ("g1",) + (() if self.g2_on_host else ("g2",)):
            for name, kernel in (("msm.cu", f"to_montgomery_{group}"), ("bitsum.cu", "bitsum_classify"),
                                 ("decompress.cu", f"decompress_{group}")):
                module = cache.load_curve_module(curve, name, group, self.options)
                module.get_function(kernel)
            for table in _warm_tables(curve, group):
                for scalars in _warm_scalars(curve, len(table)):
                    self.msm_witness(table, scalars)  # the split (zeros, ones, a compacted rest) and the dense path
                (self.msm_g1 if group == "g1" else self.msm_g2)(table, scalars)  # H's MSM, and G2's
        domain = Radix2Domain(_WARM_LOG2, curve)
        vectors = [cp.asarray(domain.fr.from_ints(list(range(k, k + domain.size)))) for k in (1, 2, 3)]
        self.compute_h_device(domain, *vectors)

    def prepare(self, pk, plans=None):
        """The key's tables on the device, each with the precomputed copies of its plan in
        ``plans`` (``KeyCache`` chose them, and ``keys.key_bytes`` counts them in the
        key budget; None: plain)."""
        self._warm_up(pk.curve)
        for name in PK_TABLES:
            if name != "b_g2_query" or not self.g2_on_host:
                table = getattr(pk, name)
                gpu_msm.device_points(table, self.options, plans[name] if plans else pippenger.plain(len(table)))
        cp.cuda.get_current_stream().synchronize()

    def upload(self, host, kind=None):
        return h2d(np.ascontiguousarray(host))  # the memory kind is read from the pointer

    def compute_h_resident(self, domain, a, b, c, basis="monomial"):
        compute = self.compute_h_device if basis == "monomial" else self.compute_h_odd_coset_device
        h = compute(domain, a, b, c)
        cp.cuda.get_current_stream().synchronize()  # the phase ends when the kernels do
        return h

    def msm_g1(self, table, scalars):
        return gpu_msm.msm_g1(table, scalars, self.options)

    def msm_g2(self, table, scalars):
        return points.msm(table, scalars) if self.g2_on_host else gpu_msm.msm_g2(table, scalars, self.options)

    def msm_witness(self, table, scalars):
        """The table's MSM split by scalar value on the device (``sparse``), over the rows the
        device table kept (``density``); a G2 MSM on the host, split the same way there, when
        the backend runs G2 on the host."""
        if table.group == "g2" and self.g2_on_host:
            return points.msm_split(table, scalars)
        options = self.options
        s = density.gather(cp, cp.ascontiguousarray(cp.asarray(scalars)), gpu_msm.kept_rows(table, options))
        plan = gpu_msm.resident_plan(table)
        bitsum = _bitsum_executor(cp.cuda.runtime.getDevice(), table.curve, table.group, options)
        return sparse.msm(bitsum, gpu_msm.executor(table.curve, table.group, options), table.group,
                          gpu_msm.device_points(table, options, plan), s, plan=plan, balanced=options.msm_balanced)

    def msms(self, jobs):
        """With ``overlap``, the jobs at once, each in a lane (``overlap.Lanes``: a thread and
        a stream of its own), the costliest started first; the results are those of the jobs
        one after another, and every lane's kernels have ended on return."""
        if not self.overlap or len(jobs) < 2:
            return super().msms(jobs)
        device = cp.cuda.runtime.getDevice()
        ready = cp.cuda.get_current_stream().record()  # the lanes start after what the caller enqueued
        start = overlap.order([(job.table.group, len(job.table)) for job in jobs])
        return _lanes(device).run([partial(self.msm_job, job) for job in jobs], partial(_lane, device, ready), start)

    def fixed_base(self, curve, group, scalars, progress=None):
        if group not in ("g1", "g2"):
            raise ValueError(f"unknown group {group!r}")
        ex, table = _fixed_base_table(cp.cuda.runtime.getDevice(), curve, group, self.options)
        return points.PointTable(curve, group, fixed_base.multiples(ex, group, table, scalars, progress))

    # ---- element-wise kernels over ``curve``'s Fr (tests, the product-rate benchmark) ----
    def _elementwise(self, curve, name, a, b, *extra):
        a, b = cp.ascontiguousarray(cp.asarray(a)), cp.ascontiguousarray(cp.asarray(b))
        n = a.shape[0]
        out = cp.empty_like(a)
        self._kernel(curve, name)((_grid(n),), (_THREADS,), (a, b, *extra, out, np.uint32(n)))
        return out

    def mul_device(self, curve: Curve, a, b) -> cp.ndarray:
        """a * b element-wise; ``b`` of one element broadcasts."""
        b = cp.asarray(b)
        return self._elementwise(curve, "fr_mul_vec", a, b, np.int32(0 if b.shape[0] == 1 else 1))

    def add_device(self, curve: Curve, a, b) -> cp.ndarray:
        return self._elementwise(curve, "fr_add_vec", a, b)

    def sub_device(self, curve: Curve, a, b) -> cp.ndarray:
        return self._elementwise(curve, "fr_sub_vec", a, b)

    def square_chain_device(self, curve: Curve, x: cp.ndarray, iters: int) -> cp.ndarray:
        """x <- x^(2^iters) in place: ``iters`` dependent products per element."""
        n = x.shape[0]
        self._kernel(curve, "fr_square_chain")((_grid(n),), (_THREADS,), (x, np.uint32(n), np.int32(iters)))
        return x


_WARM_LOG2 = 6  # the warm-up's H size: any size takes the same kernels
# The warm-up's MSM sizes. CuPy's CUB reductions (count_nonzero, sum) are compiled per block
# size, the power of two next to n / 4 within 32..512: 2^6, 2^8, 2^9, 2^10 and 2^12 rows reach
# each of the five (a 2^8 proof's count_nonzero took the 64 and 128 ones), 2^12 also the
# scans past one block (see ``warm_up``).
_WARM_ROWS = tuple(1 << k for k in (_WARM_LOG2, 8, 9, 10, 12))


def _warm_tables(curve: Curve, group: str) -> list[points.PointTable]:
    """A table of ``curve``'s ``group`` for each of ``_WARM_ROWS``: 2^_WARM_LOG2 distinct
    multiples of its generator, made once and tiled, every third the point at infinity, so
    the device keeps the others and the MSMs gather their scalars (``density``: CuPy's
    nonzero, indexing and take kernels, compiled here, not in a proof of the first MiMC key)."""
    g, inf = curve.point_class(group)(), curve.point_class(group).identity()
    base = points.PointTable.from_points(curve, group, [inf if k % 3 == 0 else g * curve.scalar(k)
                                                        for k in range(1, (1 << _WARM_LOG2) + 1)])
    return [points.PointTable(curve, group, np.tile(base.xy, (rows >> _WARM_LOG2, 1))) for rows in _WARM_ROWS]


def _warm_scalars(curve: Curve, n: int) -> list[np.ndarray]:
    """A bit-heavy vector (mostly 0 and 1, a few others: the split's every step) and a
    dense one (Pippenger over the whole table)."""
    fr = Fr.of(curve)
    bits = [k % 2 if k % 8 else k + 2 for k in range(n)]
    return [fr.from_ints(bits), fr.from_ints(list(range(n, 2 * n)))]


def powers(curve: Curve, base: int, n: int, kernel_dir: Path, start: int = 1) -> cp.ndarray:
    """[start * base^i for i < n] in ``curve``'s Fr, computed on the current device (its
    kernel's cubin kept in ``kernel_dir``)."""
    fr, bits = Fr.of(curve), max(1, n.bit_length())
    pows = cp.asarray(fr.from_ints([pow(base, 1 << k, fr.MODULUS) for k in range(bits)]))
    out = cp.empty((n, 4), dtype=cp.uint64)
    fn = cache.load(curve, kernel_dir=kernel_dir).get_function("fr_powers")
    fn((_grid(n),), (_THREADS,), (out, np.uint32(n), _scalar(curve, start), pows))
    return out


@lru_cache(maxsize=None)
def _lanes(device: int) -> overlap.Lanes:
    return overlap.Lanes()


@lru_cache(maxsize=None)
def _lane_stream(device: int, lane: int) -> cp.cuda.Stream:
    """Lane ``lane``'s stream on ``device``, kept: CuPy's pool caches freed blocks per
    stream, so the lane reuses its scratch from proof to proof. Non-blocking: it never waits
    for the legacy default stream implicitly (``_lane`` orders it explicitly)."""
    with cp.cuda.Device(device):
        return cp.cuda.Stream(non_blocking=True)


@contextlib.contextmanager
def _lane(device: int, ready: cp.cuda.Event, lane: int):
    """The block's work on ``device`` in lane ``lane``'s stream, after ``ready``; on exit the
    stream's work has ended, so the caller may free the lane's inputs (the witness, H)."""
    stream = _lane_stream(device, lane)
    with cp.cuda.Device(device), stream:
        stream.wait_event(ready)
        try:
            yield
        finally:
            stream.synchronize()


@lru_cache(maxsize=None)
def _bitsum_executor(device: int, curve: Curve, group: str, options: DeviceOptions) -> gpu_msm.CupyExecutor:
    """The kernels of ``bitsum.cu`` for ``curve``'s ``group`` on ``device``: the witness MSMs' split."""
    return gpu_msm.CupyExecutor(curve, "bitsum.cu", group, options)


@lru_cache(maxsize=None)
def _fixed_base_table(device: int, curve: Curve, group: str, options: DeviceOptions):
    """The fixed-base kernels of ``curve``'s ``group`` and their window table, resident on ``device``."""
    return (gpu_msm.CupyExecutor(curve, "fixed_base.cu", group, options),
            cp.asarray(fixed_base.window_table(curve, group)))


@lru_cache(maxsize=4)  # a 2^24 domain's tables take 2.5 GiB of device memory
def _tables(device: int, curve: Curve, log_n: int, kernel_dir: Path) -> _Tables:
    d = Radix2Domain(log_n, curve)
    p, g, n = d.fr.MODULUS, d.coset_offset, d.size
    g_inv = pow(g, -1, p)
    half = max(1, n // 2)
    return _Tables(
        tw=powers(curve, d.omega, half, kernel_dir),
        tw_inv=powers(curve, d.omega_inv, half, kernel_dir),
        coset=powers(curve, g, n, kernel_dir),
        coset_div_n=powers(curve, g, n, kernel_dir, start=d.size_inv),
        coset_inv_div_n=powers(curve, g_inv, n, kernel_dir, start=d.size_inv),
        n_inv=_scalar(curve, d.size_inv),
        z_inv=_scalar(curve, pow(d.vanishing_on_coset(), -1, p)),
    )


@lru_cache(maxsize=4)
def _odd_coset_tables(device: int, curve: Curve, log_n: int) -> tuple[cp.ndarray, cp.ndarray, cp.ndarray]:
    """snarkjs's order in ours (``where``), its inverse, and the odd-coset shift over n."""
    from proofflow.prover.groth16 import odd_coset
    where, shift = odd_coset.snarkjs_order(curve, log_n), odd_coset.odd_coset_shift(curve, log_n)
    to_ours = np.empty_like(where)
    to_ours[where] = np.arange(where.size)
    fr = Fr.of(curve)
    n_inv = pow(1 << log_n, -1, fr.MODULUS)
    return cp.asarray(where), cp.asarray(to_ours), cp.asarray(fr.mul(shift, fr.constant(n_inv)))


# ---- host <-> device transfers, timed with CUDA events ----

def memory_kind(host: np.ndarray) -> str:
    """'pinned' when the CUDA driver knows the host pointer as page-locked memory."""
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(host.ctypes.data)
        return "pinned" if attrs.type == 1 else "pageable"  # 1: cudaMemoryTypeHost
    except cp.cuda.runtime.CUDARuntimeError:  # older drivers reject unregistered pointers
        return "pageable"


def _timed(copy, nbytes: int, kind: str) -> Transfer:
    stream = cp.cuda.get_current_stream()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    # the events bracket the copy, not the host's delays in enqueueing it; a pageable copy
    # waits for its stream inside the call, so gating it would never return
    with stream_gate.held(stream) if kind == "pinned" else contextlib.nullcontext():
        start.record(stream)
        copy(stream)
        end.record(stream)
    end.synchronize()
    return Transfer(nbytes, cp.cuda.get_elapsed_time(start, end), kind)


def h2d(host: np.ndarray, out: cp.ndarray | None = None) -> tuple[cp.ndarray, Transfer]:
    """Copy a C-contiguous host array to the device (into ``out`` if given)."""
    if not host.flags.c_contiguous:
        raise ValueError("h2d needs a C-contiguous host array (a copy would add a host pass)")
    out = cp.empty(host.shape, dtype=host.dtype) if out is None else out
    return out, _timed(lambda s: out.set(host, stream=s), host.nbytes, memory_kind(host))


def timed_uploads(vectors: list[np.ndarray], reps: int) -> list[float]:
    """Seconds of each of ``reps`` rounds of copying ``vectors`` (page-locked host arrays, as
    prove_gpu uploads a/b/c) to the device, CUDA-event timed, after one warm-up round."""
    times = []
    for i in range(reps + 1):
        ms, kinds = 0.0, set()
        for v in vectors:
            dv, tr = h2d(np.ascontiguousarray(v))
            ms += tr.ms
            kinds.add(tr.kind)
            del dv
        if kinds != {"pinned"}:
            raise RuntimeError(f"calibration copies came from {kinds} memory, not pinned")
        if i:
            times.append(ms / 1e3)
    return times


def d2h(dev: cp.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, Transfer]:
    """Copy a device array to the host (into ``out`` if given)."""
    out = np.empty(dev.shape, dtype=dev.dtype) if out is None else out
    return out, _timed(lambda s: dev.get(stream=s, out=out), dev.nbytes, memory_kind(out))
