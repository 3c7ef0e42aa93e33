"""iden3's binary container, shared by .r1cs, .wtns and .zkey files.

A file is a 4-byte magic, a u32 version and a u32 section count, then the sections, each
a u32 type, a u64 byte size and the bytes. Everything is little-endian. Writers may put
sections in any order (circom writes an r1cs as 2, 1, 3), so the whole table is read
first and sections are then looked up by type.

Every count a header claims is checked against the bytes its section really holds
(``BinFile.holds``) before anything of that size is allocated: a hostile header of a
small file is a CorruptFile naming the field, not a MemoryError.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from proofflow.prover import files
from proofflow.prover.circom.errors import CorruptFile, WrongField
from proofflow.prover.curves import registry
from proofflow.prover.curves.descriptor import Curve

_HEAD = struct.Struct("<4sII")
_SECTION = struct.Struct("<IQ")


@dataclass
class BinFile:
    path: Path
    version: int
    data: memoryview
    sections: dict[int, list[tuple[int, int]]]  # type -> [(offset, size)], in file order

    def section(self, sid: int, what: str) -> memoryview:
        """The bytes of the one section of type ``sid`` (``what`` it holds, for errors)."""
        found = self.sections.get(sid, [])
        if not found:
            raise CorruptFile(self.path, f"missing (the {what})", sid)
        if len(found) > 1:
            raise CorruptFile(self.path, f"appears {len(found)} times (the {what})", sid)
        offset, size = found[0]
        return self.data[offset:offset + size]

    def holds(self, sid: int, what: str, field: str, count: int, width: int, at_least: bool = False) -> memoryview:
        """Section ``sid``: ``count`` ``what`` of ``width`` bytes each, as the header's ``field``
        claims (with ``at_least``, ``width`` is the least one takes); CorruptFile unless its
        size fits the claim."""
        data = self.section(sid, what)
        need = count * width
        if len(data) < need or (len(data) > need and not at_least):
            short = f"fewer than the {need}" if at_least else f"not the {need}"
            each = f"at least {width}" if at_least else width
            raise CorruptFile(self.path, f"holds {len(data)} bytes of {what}, {short} that {field} = {count} needs "
                                         f"({each} bytes each)", sid)
        return data

    def reader(self, sid: int, what: str) -> "SectionReader":
        return SectionReader(self, sid, self.section(sid, what))


class SectionReader:
    """Reads one section front to back; running past its end is a CorruptFile."""

    def __init__(self, owner: BinFile, sid: int, data: memoryview):
        self.owner, self.sid, self.data, self.pos = owner, sid, data, 0

    def fail(self, message: str) -> CorruptFile:
        return CorruptFile(self.owner.path, message, self.sid)

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"truncated: needs {self.pos + n} bytes, has {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def integer(self, n8: int) -> int:
        return int.from_bytes(self.take(n8), "little")

    def field(self, expected: Curve | None = None) -> Curve:
        """A field description (u32 byte width, then the prime): the registered curve whose
        scalar field it is, which must be ``expected`` when given (else WrongField)."""
        n8 = self.u32()
        if n8 not in (8, 32, 48, 64):
            raise self.fail(f"implausible field element size {n8}")
        prime = self.integer(n8)
        curve = registry.by_scalar_prime(prime)
        if curve is None or (expected is not None and curve.name != expected.name):
            raise WrongField(self.owner.path, prime, None if expected is None else expected.fr.modulus)
        return curve

    def rest(self) -> memoryview:
        return self.take(len(self.data) - self.pos)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} unexpected bytes after its content")


def read(path, magic: str, max_version: int) -> BinFile:
    """Read ``path`` and its section table; the file must start with ``magic``."""
    path = Path(path)
    try:  # a device or pipe has no length to check the counts against
        data = memoryview(files.read_regular(path))
    except files.NotARegularFile:
        raise CorruptFile(path, "is not a regular file") from None
    except OSError as exc:
        raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) < _HEAD.size:
        raise CorruptFile(path, f"{len(data)} bytes is too short for a .{magic} file")
    found, version, count = _HEAD.unpack_from(data)
    if found != magic.encode():
        raise CorruptFile(path, f"not a .{magic} file (it starts with {bytes(found)!r})")
    if not 1 <= version <= max_version:
        raise CorruptFile(path, f"unsupported .{magic} version {version} (this reader knows 1..{max_version})")
    sections: dict[int, list[tuple[int, int]]] = {}
    pos = _HEAD.size
    for i in range(count):
        if pos + _SECTION.size > len(data):
            raise CorruptFile(path, f"truncated: the section table ends after {i} of {count} sections")
        sid, size = _SECTION.unpack_from(data, pos)
        pos += _SECTION.size
        if pos + size > len(data):
            raise CorruptFile(path, f"truncated: declares {size} bytes, {len(data) - pos} remain", sid)
        sections.setdefault(sid, []).append((pos, size))
        pos += size
    if pos != len(data):
        raise CorruptFile(path, f"{len(data) - pos} bytes after the last of its {count} sections")
    return BinFile(path, version, data, sections)
