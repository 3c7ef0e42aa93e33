"""Witnesses by circom's C++ witness generator (``circom --c``, built by its Makefile with
g++, libgmp, nasm and nlohmann-json), where a user registered one with the circuit: the
program ``PROGRAM input.json out.wtns``, which reads its constants from ``PROGRAM.dat``.

The inputs are checked first as for the wasm (``witness.read_inputs``), and the program is
given them as decimal strings, so it never parses what the user wrote; the witness it
writes is read as any .wtns (its header names its field) and must have the circuit's size.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from proofflow.prover.circom.errors import CircomFileError, CorruptFile, GeneratorFailed
from proofflow.prover.circom.wtns import read_wtns
from proofflow.prover.curves.descriptor import Curve

log = logging.getLogger(__name__)

_SAID_LINES, _SAID_CHARS = 3, 300  # of what a failed program printed, the end, shown in the error
ELF_MAGIC = b"\x7fELF"


def check_program(path: Path) -> Path:
    """``path`` if it is a program with its .dat beside it, as ``circom --c``'s Makefile
    builds it; else CorruptFile."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise CorruptFile(path, f"cannot read: {exc.strerror or exc}") from None
    if magic != ELF_MAGIC:
        raise CorruptFile(path, "is not a program (no ELF header): give the binary circom --c's Makefile builds")
    if not Path(f"{path}.dat").is_file():
        raise CorruptFile(path, f"has no {path.name}.dat beside it (circom --c writes it with the sources)")
    return path


def build(directory) -> Path:
    """The C++ witness generator ``circom --c`` wrote to ``directory`` (NAME_cpp/: NAME.cpp,
    NAME.dat, a Makefile), built there with make; CorruptFile when it does not build."""
    directory = Path(directory)
    dats = sorted(directory.glob("*.dat"))
    if len(dats) != 1 or not (directory / "Makefile").is_file():
        raise CorruptFile(directory, "is not an output directory of circom --c (one NAME.dat and a Makefile)")
    proc = subprocess.run(["make", "-C", str(directory), f"-j{os.cpu_count() or 1}"], capture_output=True, text=True, errors="replace")
    if proc.returncode:
        said = " / ".join(line for line in proc.stderr.splitlines() if line.strip())[-_SAID_CHARS:]
        raise CorruptFile(directory, f"make failed (it needs g++, nasm, libgmp-dev and nlohmann-json3-dev): {said}")
    return directory / dats[0].stem


def run_generator(program: Path, circuit: str, values: dict[str, list[int]], curve: Curve,
                  n_variables: int) -> np.ndarray:
    """The witness of ``values`` (``witness.read_inputs``'s) by ``program``, the C++ witness
    generator of ``circuit``, as an Fr vector of ``curve``; GeneratorFailed when the program
    fails or writes no witness of ``n_variables`` values."""
    with tempfile.TemporaryDirectory(prefix="proofflow-witness-") as tmp:
        source, out = Path(tmp) / "input.json", Path(tmp) / "witness.wtns"
        source.write_text(json.dumps({name: [str(v) for v in flat] for name, flat in values.items()}))
        try:
            proc = subprocess.run([str(program), str(source), str(out)], capture_output=True, text=True,
                                  errors="replace")
        except OSError as exc:
            raise GeneratorFailed(circuit, f"cannot be run: {exc.strerror or exc}") from None
        if proc.returncode:  # a failed assert prints its template and line on stdout, an exception on stderr
            said = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()][-_SAID_LINES:]
            raise GeneratorFailed(circuit, f"failed on the inputs ({_status(proc.returncode)})"
                                           + (f": {' / '.join(said)[-_SAID_CHARS:]}" if said else ""))
        if not out.is_file():
            raise GeneratorFailed(circuit, "wrote no witness (it takes: PROGRAM input.json out.wtns)")
        if proc.stdout.strip():  # the circuit's log() calls
            log.info("%s: %s", circuit, proc.stdout.strip())
        try:
            w = read_wtns(out, curve)
        except CircomFileError as exc:  # its message names the temporary file, gone by now
            raise GeneratorFailed(circuit, f"wrote a witness that cannot be read: {str(exc)[len(str(out)) + 2:]}") \
                from None
    if w.shape[0] != n_variables:
        raise GeneratorFailed(circuit, f"wrote a witness of {w.shape[0]} values; the circuit has {n_variables} "
                                       "(a generator of another circuit?)")
    return w


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
