"""Witnesses from a circuit's inputs and the WebAssembly witness generator circom emits
(``--wasm``), run by wasmtime: what ``snarkjs wtns calculate`` computes, without node.

The generator speaks the protocol of circom's JS glue (witness_calculator.js):
- getFieldNumLen32 and getRawPrime: the prime, as 32-bit little-endian words in the
  shared memory (at getSharedRWMemoryStart; readSharedRWMemory reads the same words);
- init, then for every input value: its words into the shared memory and
  setInputSignal(hash high, hash low, index), a signal named by the FNV-1a 64-bit hash of
  its name; getInputSignalSize tells how many values a signal takes (none: no such
  input), and the circuit runs once its last input is set;
- getWitnessSize, then getWitness(i) puts value i (standard form) in the shared memory;
  a small wasm module linked to the generator (_COPIER) makes those calls and gathers the
  values, since each call from Python costs far more than the call itself.
The generator reports through the runtime imports: printErrorMessage (a message, read
with getMessageChar) before exceptionHandler(code) when it fails; log() output through
writeBufferMessage and showSharedRWMemory.

Compiling a generator to native code takes most of a small witness's time, so each compiled
module is kept (``MODULES``): in the process, by the file's identity (path, inode, size,
mtime), and on disk, serialized under the cache root by the wasm's SHA-256, for the next
process. Every call gets a Store and an instance of its own, so witnesses of concurrent
threads run in parallel (wasmtime's calls release the GIL).
"""
from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wasmtime

from proofflow import settings
from proofflow.prover import bounded_json, files, private_dir
from proofflow.prover.circom.errors import CorruptFile, InputRejected, WrongField
from proofflow.prover.curves.descriptor import Curve
from proofflow.prover.field.fr import Fr

log = logging.getLogger(__name__)

CIRCOM_MAJOR = 2
_FAILURES = {1: "a signal was not found", 2: "too many signals were set", 3: "a signal was set twice",
             4: "an assert failed", 5: "it ran out of memory", 6: "an input signal index is beyond its size",
             7: "an array index is out of bounds"}
_INTEGER = re.compile(rf"-?[0-9]{{1,{bounded_json.MAX_DIGITS}}}|0[xX][0-9a-fA-F]{{1,{bounded_json.MAX_DIGITS}}}")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{0,63}")  # circom's identifiers, of a length one would write
_PAGE = 65536
# copy(n, src, dst, n8): for i < n, getWitness(i), then n8 bytes from src to dst + i·n8.
_COPIER = """
(module
  (import "circuit" "getWitness" (func $get (param i32)))
  (import "circuit" "memory" (memory 0))
  (func (export "copy") (param $n i32) (param $src i32) (param $dst i32) (param $n8 i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $get (local.get $i))
        (memory.copy (i32.add (local.get $dst) (i32.mul (local.get $i) (local.get $n8)))
                     (local.get $src) (local.get $n8))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))))
"""


def calculate_witness(wasm, inputs, curve: Curve, circuit: str | None = None) -> np.ndarray:
    """The witness of ``inputs`` (input.json's content, or its path) as an Fr vector of
    ``curve``, like ``wtns.read_wtns`` returns. Values are decimal strings, 0x hex strings or
    JSON numbers, or nested arrays of them (flattened in circom's order); a negative value -v
    stands for r - v, as in circom. The file is read within ``bounded_json``'s bounds, and
    the inputs are checked before the generator is loaded. Raises InputRejected for inputs
    the circuit does not take (naming the signal, and a value only by its type and length),
    WrongField for a generator of another prime, CorruptFile for a file that is not a
    circom 2 witness generator. Errors name the generator as ``circuit`` (a registered
    circuit's name), else by its file's name."""
    values, source = read_inputs(inputs, curve)
    return _Generator(Path(wasm), Fr.of(curve)).run(values, source, circuit or Path(wasm).name)


def generator_sizes(wasm, curve: Curve) -> tuple[int, int]:
    """(signals of its witness, input values it takes) of a witness generator of ``curve``'s
    field, without running it: what ``circuit add`` checks against the r1cs. Raises
    WrongField for a generator of another prime, CorruptFile for one that is not circom 2's."""
    generator = _Generator(Path(wasm), Fr.of(curve))
    return generator.witness_size(), generator.input_size()


def check_inputs(wasm, inputs: list, curve: Curve, circuit: str | None = None):
    """Each of ``inputs`` (input.json paths or input objects) checked as ``calculate_witness``
    checks it, the circuit not run: JSON within bounds, integers in the field, every signal
    one of the generator's inputs with its number of values, and every input set. Yields
    (index, InputRejected) for each input refused; the generator is loaded once."""
    generator = None
    for i, item in enumerate(inputs):
        try:
            values, source = read_inputs(item, curve)
            generator = generator or _Generator(Path(wasm), Fr.of(curve))
            generator.check(values, source, circuit or Path(wasm).name)
        except InputRejected as exc:
            yield i, exc


def read_inputs(inputs, curve: Curve) -> tuple[dict[str, list[int]], Path | None]:
    """``inputs`` (input.json's content, or its path) checked as ``calculate_witness`` says:
    each signal's values flattened and reduced into ``curve``'s scalar field, and the file
    read (None for an object)."""
    source = None
    if isinstance(inputs, (str, Path)):
        source = Path(inputs)
        try:
            inputs = bounded_json.load(source)
        except bounded_json.JsonRefused as exc:
            raise InputRejected(source, str(exc)) from None
        except OSError as exc:
            raise InputRejected(source, f"cannot read: {exc.strerror or exc}") from None
    if not isinstance(inputs, dict):
        raise InputRejected(source, "the inputs are not a JSON object of input signals")
    return {name: _flatten(curve.fr.modulus, _signal(name), value, source) for name, value in inputs.items()}, source


@dataclass
class CacheCounts:
    """What ``MODULES`` did so far in this process: modules compiled from a wasm, loaded
    from the disk cache, and found in memory."""
    compiled: int = 0
    loaded: int = 0
    reused: int = 0


class ModuleCache:
    """Compiled generators of one wasmtime Engine, made again in a forked child (an engine's
    compiler threads do not survive a fork)."""

    def __init__(self):
        self._lock = threading.Lock()  # held only while a module is looked up or compiled
        self._pid = None
        self.counts = CacheCounts()

    def _fresh(self) -> None:
        if self._pid != os.getpid():
            self._pid, self.engine, self._modules = os.getpid(), wasmtime.Engine(), {}
            self.copier = wasmtime.Module(self.engine, _COPIER)

    def module(self, path: Path) -> wasmtime.Module:
        """The compiled module of the generator at ``path``: CorruptFile for an unreadable
        file or one that is not WebAssembly."""
        try:
            st = os.stat(path)
        except OSError as exc:
            raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from exc
        key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            self._fresh()
            if (module := self._modules.get(key)) is not None:
                self.counts.reused += 1
                return module
            module = self._modules[key] = self._load_or_compile(path)
            return module

    def _load_or_compile(self, path: Path) -> wasmtime.Module:
        try:
            digest = files.sha256_file(path)
        except OSError as exc:
            raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from exc
        stored = private_dir.ensure(settings.current().cache_root / "wasm") / f"{digest}-wasmtime{_WASMTIME}.cwasm"
        if stored.is_file():
            try:
                # read, not mapped: a cache file damaged or rewritten later cannot fault (SIGBUS) this process
                module = wasmtime.Module.deserialize(self.engine, stored.read_bytes())
                self.counts.loaded += 1
                return module
            except wasmtime.WasmtimeError as exc:  # of another build of wasmtime, or damaged: compiled again
                log.info("%s: compiling again (%s)", stored, exc)
        try:
            module = wasmtime.Module.from_file(self.engine, str(path))
        except wasmtime.WasmtimeError as exc:
            raise CorruptFile(path, f"is not a WebAssembly module: {exc}") from exc
        self.counts.compiled += 1
        with files.atomic_path(stored) as tmp:
            tmp.write_bytes(module.serialize())
        return module


_WASMTIME = importlib.metadata.version("wasmtime")
MODULES = ModuleCache()


def _signal(name: str) -> str:
    """An input's name as errors show it: itself where it can be a circom signal's name, else
    (a key of some other JSON file) only its length."""
    return name if _NAME.fullmatch(name) else f"<a name of {len(name)} characters>"


def _flatten(r: int, label: str, value, source, depth: int = 0) -> list[int]:
    if isinstance(value, list):
        if depth == bounded_json.MAX_DEPTH:
            raise InputRejected(source, f"input signal {label!r}: arrays nested more than {depth} deep")
        return [x for i, item in enumerate(value) for x in _flatten(r, f"{label}[{i}]", item, source, depth + 1)]
    number = _integer(value)
    if number is None:
        raise InputRejected(source, f"input signal {label!r}: expected an integer (a decimal or 0x string of at most "
                                    f"{bounded_json.MAX_DIGITS} digits, a JSON number, or a nested array of them), "
                                    f"got {bounded_json.describe(value)}")
    if not -r < number < r:
        raise InputRejected(source, f"input signal {label!r}: an integer of {number.bit_length()} bits is not below "
                                    f"the field's prime r ({r.bit_length()} bits) in absolute value (inputs are not "
                                    "reduced)")
    return [number % r]


def _integer(value) -> int | None:
    """An input value as an integer, or None when it is not one."""
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value, 0) if value[:2] in ("0x", "0X") else int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():  # what JSON parsing makes of 1e3
        return int(value)
    return None


def _fnv1a_64(name: str) -> int:
    h = 0xCBF29CE484222325
    for ch in name:
        h = ((h ^ ord(ch)) * 0x100000001B3) & (2**64 - 1)
    return h


class _Failed(Exception):
    """Raised inside the exceptionHandler import: the generator gave up with ``code``."""

    def __init__(self, code: int):
        self.code = code


class _Generator:
    """One fresh instance of a circuit's witness generator (its module compiled once,
    ``MODULES``), with the runtime imports it calls."""

    def __init__(self, path: Path, fr: Fr):
        self.path, self.fr = path, fr
        module = MODULES.module(path)
        self.store = wasmtime.Store(MODULES.engine)
        handlers = {"exceptionHandler": self._fail, "printErrorMessage": self._error_message,
                    "writeBufferMessage": self._log_message, "showSharedRWMemory": self._log_value}
        funcs = []
        for imp in module.imports:
            if imp.module != "runtime" or imp.name not in handlers:
                raise CorruptFile(path, f"imports {imp.module}.{imp.name}: not a circom {CIRCOM_MAJOR} witness "
                                        "generator")
            funcs.append(wasmtime.Func(self.store, imp.type, handlers[imp.name]))
        self.exports = wasmtime.Instance(self.store, module, funcs).exports(self.store)
        self.errors: list[str] = []
        self.line: list[str] = []
        if (major := self._call("getVersion")) != CIRCOM_MAJOR:
            raise CorruptFile(path, f"is a witness generator of circom {major}, not of circom {CIRCOM_MAJOR}")
        self.memory = self._export("memory")
        self.shared = self._call("getSharedRWMemoryStart")
        self.n8 = 4 * self._call("getFieldNumLen32")
        self._call("getRawPrime")
        if (prime := self._shared_value()) != fr.MODULUS:
            raise WrongField(path, prime, fr.MODULUS)

    def _export(self, name: str):
        try:
            return self.exports[name]
        except KeyError:
            raise CorruptFile(self.path, f"lacks the export {name}: not a circom {CIRCOM_MAJOR} witness "
                                         "generator") from None

    def _call(self, name: str, *args):
        return self._export(name)(self.store, *args)

    def witness_size(self) -> int:
        return self._call("getWitnessSize")

    def input_size(self) -> int:
        return self._call("getInputSize")

    def _shared_value(self) -> int:
        return int.from_bytes(self.memory.read(self.store, self.shared, self.shared + self.n8), "little")

    def _message(self) -> str:
        chars = []
        while c := self._call("getMessageChar"):
            chars.append(chr(c))
        return "".join(chars)

    # ---- the runtime imports ----
    def _fail(self, code: int) -> None:
        raise _Failed(code)

    def _error_message(self) -> None:
        self.errors.append(self._message())

    def _log_message(self) -> None:
        message = self._message()
        if message == "\n":  # a log() call ends with a newline of its own
            log.info("%s: %s", self.path.name, " ".join(self.line))
            self.line = []
        else:
            self.line.append(message)

    def _log_value(self) -> None:
        self.line.append(str(self._shared_value()))

    # ---- the computation ----
    def check(self, values: dict[str, list[int]], source, label: str) -> None:
        """Every name one of the generator's input signals, with as many values as it takes,
        and every input value given; the generator initialized, nothing set yet. Errors name
        the circuit as ``label``."""
        self.label = label
        self._call("init", 0)
        given = 0
        for name, flat in values.items():
            size = self._call("getInputSignalSize", *_hash_words(name))
            if size <= 0:  # circom 2.2 answers 0 for a name it lacks, the JS glue checks for < 0
                raise InputRejected(source, f"{_signal(name)!r} is not an input signal of {label}")
            if len(flat) != size:
                raise InputRejected(source, f"input signal {_signal(name)!r} takes {size} value{'s' * (size != 1)}, "
                                            f"got {len(flat)}")
            given += size
        if given < (total := self._call("getInputSize")):
            raise InputRejected(source, f"sets {given} of the {total} input values of {label}")

    def run(self, values: dict[str, list[int]], source, label: str) -> np.ndarray:
        """The witness of ``values``; errors name the circuit as ``label``."""
        self.check(values, source, label)
        for name, flat in values.items():
            for i, value in enumerate(flat):
                self.memory.write(self.store, value.to_bytes(self.n8, "little"), self.shared)
                self._set(source, *_hash_words(name), i)
        raw = self._witness_bytes(self._call("getWitnessSize"))
        return self.fr.from_canonical(np.frombuffer(raw, dtype="<u8").reshape(-1, self.fr.LIMBS))

    def _witness_bytes(self, n: int) -> bytearray:
        """All n values through one call into wasm: _COPIER calls getWitness for each and
        copies the shared memory into pages grown past the generator's own (the circuit has
        run; getWitness writes only the shared memory). A call from Python costs ~15 µs in
        wasmtime-py: one per value would take 7 times snarkjs's whole witness at 2^16."""
        size = n * self.n8
        end = self.memory.size(self.store) * _PAGE
        self.memory.grow(self.store, -(-size // _PAGE))
        copy = wasmtime.Instance(self.store, MODULES.copier, [self._export("getWitness"), self.memory]).exports(self.store)
        copy["copy"](self.store, n, self.shared, _i32(end), self.n8)
        return self.memory.read(self.store, end, end + size)

    def _set(self, source, high: int, low: int, index: int) -> None:
        """setInputSignal; the last one runs the circuit, so its failures surface here."""
        self.errors.clear()
        try:
            self._call("setInputSignal", high, low, index)
        except _Failed as exc:
            said = "; ".join(m.strip() for m in self.errors if m.strip())
            what = _FAILURES.get(exc.code, f"error code {exc.code}")
            raise InputRejected(source, f"{self.label} rejects the inputs ({what})"
                                        + (f": {said}" if said else "")) from None
        except wasmtime.Trap as exc:
            raise InputRejected(source, f"{self.label} failed on the inputs: {exc.message}") from None


def _hash_words(name: str) -> tuple[int, int]:
    """A signal name's FNV-1a hash as the generator takes it: high and low words, as i32."""
    h = _fnv1a_64(name)
    return _i32(h >> 32), _i32(h & 0xFFFFFFFF)


def _i32(word: int) -> int:
    """A 32-bit word as the signed i32 wasm takes."""
    return word - (1 << 32) if word >= 1 << 31 else word
