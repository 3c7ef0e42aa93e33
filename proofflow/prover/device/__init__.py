"""Everything that touches the GPU: the CUDA kernels (``*.cu``, ``*.cuh``, ``source.py``;
compiled by NVRTC into cubins kept in the kernel cache, ``cache.py``) next to their host
drivers (``backend.py``: the GPU backend with its NTTs; ``msm.py`` and ``pippenger.py``: the
MSMs; ``sparse.py``: the witness MSMs' split of 0/1 scalars; ``overlap.py``: a proof's MSMs
at once, on streams of their own; ``fixed_base.py``: the setup's multiplications; ``options.py``:
what the callers configure, from their settings),
page-locked host memory and timed copies. No module outside this package imports CuPy; importing this package does not either."""
from __future__ import annotations

from contextlib import contextmanager


def available() -> bool:
    """True when CuPy is installed and sees a device."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: all mean "no GPU"
        return False


def count() -> int:
    """Visible devices (0 without CuPy or a driver)."""
    return _cupy().cuda.runtime.getDeviceCount() if available() else 0


def current() -> int:
    """The calling thread's current device."""
    return _cupy().cuda.Device().id


def name(index: int | None = None) -> str:
    """The device's product name (e.g. NVIDIA H200)."""
    cp = _cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id if index is None else index)
    return props["name"].decode()


def use(index: int) -> None:
    """Make ``index`` the calling thread's current device."""
    _cupy().cuda.Device(index).use()


@contextmanager
def using(index: int):
    """``index`` as the current device for the block."""
    with _cupy().cuda.Device(index):
        yield


def memory(index: int | None = None) -> tuple[int, int] | None:
    """(free, total) bytes of a device's memory (the current one unless ``index``), or None
    without CuPy, a driver or that device."""
    if not available():
        return None
    try:
        cp = _cupy()
        with cp.cuda.Device(cp.cuda.Device().id if index is None else index):
            free, total = cp.cuda.runtime.memGetInfo()
        return int(free), int(total)
    except Exception:  # no such device, or the driver refuses: unknown
        return None


def out_of_memory(nbytes: int) -> MemoryError | None:
    """The exception a device allocation of ``nbytes`` raises when the device is full
    (CuPy's OutOfMemoryError, a MemoryError), or None without CuPy."""
    try:
        from cupy.cuda.memory import OutOfMemoryError
    except ImportError:
        return None
    return OutOfMemoryError(nbytes, -1)


def memory_bytes() -> int:
    """The current device's total memory."""
    return int(_cupy().cuda.runtime.memGetInfo()[1])


def pool_bytes() -> int:
    """Device memory CuPy's pool holds on the current device (in use and cached)."""
    return _cupy().get_default_memory_pool().total_bytes()


def free_pools() -> None:
    """Give back what CuPy's device and pinned pools cache (after an out-of-memory error)."""
    cp = _cupy()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def pinned(size: int):
    """``size`` bytes of page-locked host memory, a buffer that frees when dropped. Not from
    CuPy's pinned pool: it would keep freed blocks pinned behind a staging pool's budget."""
    cp = _cupy()
    return cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(size), 0)


def register(address: int, nbytes: int) -> None:
    """Page-lock ``nbytes`` of existing host memory at ``address`` (cudaHostRegister): a
    shared-memory segment the device then reads at full PCIe rate, with no copy into a
    pinned buffer first."""
    _cupy().cuda.runtime.hostRegister(address, nbytes, 0)


def unregister(address: int) -> None:
    _cupy().cuda.runtime.hostUnregister(address)


def copy_stream():
    """A stream of its own for uploads, not synchronizing with the default stream, so a
    copy overlaps kernels running there."""
    return _cupy().cuda.Stream(non_blocking=True)


def _cupy():
    import cupy
    return cupy
