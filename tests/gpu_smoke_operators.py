"""GPU smoke check of prove_gpu's adapter (no Airflow needed; run on a GPU machine):

    python tests/gpu_smoke_operators.py

Proves log2-10 partitions through ``_TimedBackend`` on the GPU backend, with a/b/c in pinned
and in pageable staging buffers, verifies the proofs, and prints the h2d/ntt/d2h spans and
the transfers (memory kind and GB/s) that prove_gpu would record. Where Airflow is not
installed, ``airflow.sdk`` is stubbed: only the adapter is exercised, not the operators.
"""
import sys
import time
import types

try:
    import airflow.sdk  # noqa: F401
except ImportError:
    sdk = types.ModuleType("airflow.sdk")
    sdk.BaseOperator = object
    exc = types.ModuleType("airflow.sdk.exceptions")
    exc.AirflowFailException = RuntimeError
    sys.modules.update({"airflow": types.ModuleType("airflow"), "airflow.sdk": sdk, "airflow.sdk.exceptions": exc})
    sys.modules["operators.proof.recorder"] = rec_mod = types.ModuleType("operators.proof.recorder")
    rec_mod.Recorder = object
    rec_mod.get_store = lambda: None

import numpy as np  # noqa: E402

from operators.proof.operators import _TimedBackend  # noqa: E402
from prover.backend import get_backend  # noqa: E402
from prover.circuits import get_circuit  # noqa: E402
from prover.groth16 import generator, prover, r1cs_to_qap, verifier  # noqa: E402
from prover.staging import StagingPool  # noqa: E402


class Rec:
    def __init__(self):
        self.rows, self.transfers = [], []

    def add(self, phase, start, end):
        self.rows.append((phase, end - start))

    def transfer(self, direction, nbytes, kind, seconds, start=None):
        self.transfers.append((direction, nbytes, kind, seconds, nbytes / seconds / 1e9 if seconds else None))


def main(log2=int(sys.argv[1]) if len(sys.argv) > 1 else 10):
    circuit = get_circuit("mimc", log2)
    cs = circuit.constraint_system
    pk = generator.setup(circuit, 0)
    ok = True
    for pinned in (True, False):
        inst = circuit.instance(0, 1)
        abc = np.stack(r1cs_to_qap.witness_map(cs, inst.witness))
        pool = StagingPool(abc.nbytes * 2 + (1 << 20), pinned=pinned)
        with pool.acquire(abc.nbytes) as buf:
            view = buf.view(np.uint64, abc.shape)
            np.copyto(view, abc)
            rec = Rec()
            backend = _TimedBackend(get_backend("gpu"), rec, "pinned" if pinned else "pageable", out_pool=pool)
            t0 = time.time()
            try:
                proof = prover.prove(pk, cs, inst.witness, backend, abc=(view[0], view[1], view[2]))
            finally:
                backend.release()
            good = verifier.verify(pk.vk, inst.public_inputs, proof)
        ok &= good
        kinds = {t[0]: t[2] for t in rec.transfers}
        expect = "pinned" if pinned else "pageable"
        ok &= kinds.get("h2d") == expect and kinds.get("d2h") == expect
        print(f"staging {'pinned' if pinned else 'pageable'}: verify={good} prove {time.time() - t0:.3f} s "
              f"spans={[(p, round(s, 5)) for p, s in rec.rows]} transfers={rec.transfers}")
    print("GPU SMOKE", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
