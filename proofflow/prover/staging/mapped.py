"""A process's mappings of shared segments: each mapped and page-locked once, reused by the
partitions that lease the same segment again."""
from __future__ import annotations

import os
import threading
import time

from proofflow.phases import Phase
from proofflow.prover import device
from proofflow.prover.errors import InputError
from proofflow.prover.keys import Key
from proofflow.prover.staging.segment import abc_bytes
from proofflow.prover.staging.shared import Lease, Mapping, SegmentError, SharedStaging
from proofflow.prover.staging.staged import Staged
from proofflow.prover import timing


class MappedSegments:
    """A process's mappings of shared segments, one per segment file and page-locked once
    (``cudaHostRegister``, ~0.1 s a GiB) when ``pin``: a released segment keeps its inode
    in the idle pool, so the next partition leasing it is already pinned here. Mappings of
    files removed since (evicted, reclaimed) are dropped on the next ``get`` once unused."""

    class Held:
        """One user's hold on a mapping (``fresh``: this call mapped it)."""

        def __init__(self, owner: "MappedSegments", entry: dict, lease: Lease, fresh: bool):
            self._owner, self._entry = owner, entry
            self.pinned, self.lease, self.fresh = entry["pinned"], lease, fresh

        def release(self) -> None:
            if self._entry is not None:
                with self._owner._lock:
                    self._entry["users"] -= 1
                    if self._entry.get("orphan") and self._entry["users"] == 0:
                        self._owner._unmap(self._entry)
                self._entry = None

    def __init__(self, staging: SharedStaging, pin: bool):
        self.staging, self.pin = staging, pin
        self._maps: dict[tuple, dict] = {}  # inode -> {"mapping", "pinned", "users"}
        self._lock = threading.Lock()

    def _sweep(self) -> None:
        for key, entry in list(self._maps.items()):
            if entry["users"] == 0 and entry["mapping"].gone():
                self._unmap(self._maps.pop(key))

    def _unmap(self, entry: dict) -> None:
        if entry["pinned"]:
            device.unregister(entry["mapping"].address)
        entry["mapping"].close()

    def stage(self, lease_id: str, holder: str | None = None, timer=None) -> dict:
        """Map (and pin) a ready segment ahead of its proof: the stage task's work, off the
        device's critical path. Returns the lease, whether it was mapped before, and the
        seconds the pinning took."""
        t0 = time.time()
        with timing.ensure(timer).phase(Phase.REGISTER):
            with self.get(lease_id, holder) as staged:
                held = staged.mapping
        return {"segment": lease_id, "n": held.lease.n, "bytes": abc_bytes(held.lease.n), "pinned": held.pinned,
                "cached": not held.fresh, "start": t0, "seconds": time.time() - t0}

    def get(self, lease_id: str, holder: str | None = None, n: int | None = None,
            num_variables: int | None = None) -> Staged:
        """A ready segment's a/b/c and witness as a Staged (views over the mapping, held
        until ``release``); sizes checked against ``n`` and ``num_variables`` when given."""
        try:
            lease, path = self.staging.lookup(lease_id, owner=holder)
        except SegmentError as exc:
            raise InputError(str(exc)) from None
        if n is not None and lease.n != n:
            raise InputError(f"staged segment {lease_id} holds a/b/c of {lease.n} points, the job's circuit has {n}")
        if num_variables is not None and lease.num_variables != num_variables:
            raise InputError(f"staged segment {lease_id} holds a witness of {lease.num_variables} variables, the "
                             f"job's circuit has {num_variables}")
        with self._lock:
            self._sweep()
            st = os.stat(path)
            entry = self._maps.get((st.st_dev, st.st_ino))
            fresh = entry is None or entry["mapping"].size != st.st_size or entry["mapping"].gone()
            if fresh:
                if entry is not None:  # an old file's mapping under a reused inode: unmapped when unused
                    entry["orphan"] = True
                mapping = Mapping(path)
                if self.pin:
                    try:
                        device.register(mapping.address, mapping.size)
                    except Exception as exc:
                        mapping.close()
                        raise RuntimeError(f"cannot page-lock staged segment {path}: {exc} (the shared staging "
                                           "must be shared memory, a tmpfs such as /dev/shm: "
                                           "PROOFFLOW_SHARED_STAGING)") from exc
                entry = {"mapping": mapping, "pinned": self.pin, "users": 0}
                self._maps[mapping.inode] = entry
            entry["users"] += 1
        held = MappedSegments.Held(self, entry, lease, fresh)
        try:
            abc, witness = entry["mapping"].views(lease)
        except SegmentError as exc:
            held.release()
            raise InputError(str(exc)) from None
        return Staged(abc, witness, mapping=held)

    def get_for(self, key: Key, lease_id: str, holder: str | None = None) -> Staged:
        return self.get(lease_id, holder, key.domain_size, key.qap.num_variables)

    def close(self) -> None:
        with self._lock:
            for entry in self._maps.values():
                self._unmap(entry)
            self._maps.clear()

    def inodes(self) -> set[tuple[int, int]]:
        """The (device, inode) of each segment file mapped here."""
        with self._lock:
            return set(self._maps)

    def stats(self) -> dict:
        with self._lock:
            return {"mapped": len(self._maps), "mapped_bytes": sum(e["mapping"].size for e in self._maps.values()),
                    "pinned": self.pin}
