"""Setup writing a key's tables straight into their files (large keys are never whole in
memory): the same files, byte for byte, as the key built in memory and saved."""
import numpy as np
import pytest

from proofflow.prover.keys import ensure_key
from proofflow.prover.backend.cpu import CpuBackend
from proofflow.prover.circuits.by_name import get_circuit
from proofflow.prover.groth16 import generator, prover, verifier
from proofflow.prover import files
from proofflow.prover.groth16 import data_structures
from proofflow.prover.groth16.data_structures import PK_TABLES, VERIFIED, KeyFormatError, ProvingKey

SEED = 5


class KernelBackend(CpuBackend):
    """A backend with a fixed-base kernel (arkworks in this process), as the GPU backend has
    one: setup hands it the scalars a chunk at a time."""

    def __init__(self):
        super().__init__()
        self.chunks = []

    def fixed_base(self, curve, group, scalars, progress=None):
        self.chunks.append(len(scalars))
        return generator.fixed_base(curve, group, scalars, progress, workers=1)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    """Today's path: every table built in memory, then saved."""
    d = tmp_path_factory.mktemp("memory")
    generator.setup(get_circuit("mimc", 9), SEED).save(d)
    return d


def _key_files(d):
    return sorted(p.name for p in d.iterdir() if p.name != VERIFIED)  # the stamp is the host's, not the key's


def _same_files(a, b):
    names = _key_files(a)
    assert names == _key_files(b) == sorted([*(f"{t}.npy" for t in PK_TABLES),
                                                                   "params.json", "vk.json"])
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("backend", ["arkworks pool", "kernel"])
def test_a_streamed_key_is_the_in_memory_key_byte_for_byte(backend, in_memory, tmp_path, monkeypatch):
    monkeypatch.setattr(generator, "STREAM_CHUNK", 100)  # a table in several chunks
    monkeypatch.setattr(generator, "_CHUNK", 48)  # the CPU pool's jobs: small, few in flight
    monkeypatch.setattr(generator, "_SERIAL_BELOW", 0)
    monkeypatch.setattr(generator, "_IN_FLIGHT", 1)
    monkeypatch.setenv("PROOFFLOW_SETUP_WORKERS", "2")
    kernel = KernelBackend() if backend == "kernel" else None
    d = tmp_path / "key"
    seen = []
    pk = generator.setup(get_circuit("mimc", 9), SEED, backend=kernel, directory=d,
                         progress=lambda stage, done, total: seen.append((done, total)))
    for name in PK_TABLES:  # each table is its file, memory-mapped
        rows = getattr(pk, name).rows
        assert isinstance(rows, np.memmap) and str(rows.filename) == str(d / f"{name}.npy") and not rows.flags.writeable
    assert not (d / "params.json").exists(), "params.json marks a complete key: written by save"
    pk.save(d)
    _same_files(d, in_memory)
    ProvingKey.load(d, verify_digests=True)  # the digests taken while streaming are the files'
    assert seen[-1][0] == seen[-1][1]
    if kernel:
        assert max(kernel.chunks) <= 100 and sum(kernel.chunks) == seen[-1][1] + 3  # + the vk's gamma_abc points


def test_a_streamed_key_proves_and_saves_elsewhere(in_memory, tmp_path):
    circuit = get_circuit("mimc", 9)
    pk = generator.setup(circuit, SEED, directory=tmp_path / "streamed")
    pk.save(tmp_path / "streamed")
    pk.save(tmp_path / "copy")  # another directory: the tables are written there
    _same_files(tmp_path / "copy", in_memory)
    inst = circuit.instance(SEED, 0)
    proof = prover.prove(ProvingKey.load(tmp_path / "streamed"), circuit.constraint_system, inst.witness, CpuBackend())
    assert verifier.verify(pk.vk, inst.public_inputs, proof)


def test_ensure_key_streams_the_key_into_place(in_memory, tmp_path):
    d = tmp_path / "params" / "mimc-log2_9"
    assert ensure_key(d, "mimc", 9, SEED, backend="cpu") is False
    _same_files(d, in_memory)
    assert ensure_key(d, "mimc", 9, SEED, backend="cpu") is True


def test_a_failed_setup_leaves_no_table(tmp_path, monkeypatch):
    class Broken(CpuBackend):
        def fixed_base(self, curve, group, scalars, progress=None):
            raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        generator.setup(get_circuit("mimc", 8), SEED, backend=Broken(), directory=tmp_path / "key")
    assert list((tmp_path / "key").iterdir()) == []  # the table being written was a temporary file, removed


def _hashes(monkeypatch) -> list:
    """The tables hashed from here on."""
    seen = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda path: seen.append(path.name) or real(path))
    return seen


def test_a_checked_key_is_not_hashed_again_until_a_table_changes(in_memory, tmp_path, monkeypatch):
    import shutil
    d = tmp_path / "key"
    shutil.copytree(in_memory, d, copy_function=shutil.copyfile)  # new mtimes
    monkeypatch.setattr(data_structures, "RACY_S", 0.0)  # the copies are new: trust them at once
    seen = _hashes(monkeypatch)
    ProvingKey.load(d)
    assert sorted(seen) == sorted(f"{t}.npy" for t in PK_TABLES) and (d / VERIFIED).exists()
    seen.clear()
    ProvingKey.load(d)
    assert seen == []  # every table's stat matches its stamp
    ProvingKey.load(d, rehash=True)
    assert len(seen) == len(PK_TABLES)
    seen.clear()
    path = d / "h_query.npy"  # a table rewritten (same size, other bytes): its stat changed
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(KeyFormatError, match="h_query"):
        ProvingKey.load(d)
    assert seen == ["h_query.npy"]


def test_a_table_written_within_the_racy_window_is_hashed_every_time(in_memory, tmp_path, monkeypatch):
    import shutil
    d = tmp_path / "key"
    shutil.copytree(in_memory, d, copy_function=shutil.copyfile)  # new mtimes
    seen = _hashes(monkeypatch)
    ProvingKey.load(d)
    ProvingKey.load(d)
    assert len(seen) == 2 * len(PK_TABLES)  # a same-tick rewrite could keep its mtime: no stamp yet
