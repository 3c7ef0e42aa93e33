"""A partition ready to prove: its a/b/c and witness where they were staged."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from proofflow.prover.staging.pool import Buffer
from proofflow.spec import MemoryKind


class Hold(Protocol):
    """A hold on a mapped segment (``MappedSegments.Held``)."""
    pinned: bool

    def release(self) -> None: ...


@dataclass
class Staged:
    """A partition ready to prove: a/b/c (three domain-sized Fr vectors) and the witness,
    in a staging buffer or a mapped segment (or plain arrays, where a caller builds them). Views
    into the buffer are valid until ``release``."""
    abc: tuple
    witness: np.ndarray
    buffer: Buffer | None = None
    public_inputs: list[int] = field(default_factory=list)
    mapping: Hold | None = None

    @property
    def memory_kind(self) -> MemoryKind:
        """What the a/b/c really live in: page-locked only in a pinned pool's buffer or a
        registered segment."""
        pinned = self.mapping.pinned if self.mapping is not None else self.buffer is not None and self.buffer.pinned
        return MemoryKind.PINNED if pinned else MemoryKind.PAGEABLE

    def release(self) -> None:
        if self.buffer is not None:
            self.buffer.release()
        if self.mapping is not None:
            self.mapping.release()

    def __enter__(self) -> "Staged":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
