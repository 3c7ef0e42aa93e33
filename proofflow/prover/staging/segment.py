"""A partition's staged vectors, laid out once for every place that holds them (a shared
segment, a process's staging buffer): a/b/c as one (3, n, 4) block of Fr elements, then the
witness."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is not imported here: tasks that only lease and release segments skip it
    import numpy as np

FR_BYTES = 32  # an Fr element: four little-endian 64-bit limbs


def abc_bytes(n: int) -> int:
    """Bytes of a partition's a/b/c over a domain of ``n`` points."""
    return 3 * n * FR_BYTES


def segment_bytes(n: int, num_variables: int) -> int:
    """Bytes of a/b/c and a witness of ``num_variables``."""
    return abc_bytes(n) + num_variables * FR_BYTES


def segment_views(words: np.ndarray, n: int, num_variables: int) -> tuple[tuple, np.ndarray]:
    """(a, b, c) and the witness over ``words`` (uint64, covering ``segment_bytes`` or more)."""
    block = words[:3 * n * 4].reshape(3, n, 4)
    return (block[0], block[1], block[2]), words[3 * n * 4:(3 * n + num_variables) * 4].reshape(num_variables, 4)
