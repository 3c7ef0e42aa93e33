"""proofflow: batch Groth16 proving over BLS12-381 on GPUs, orchestrated by Apache Airflow.

Layers, lowest first, each importable on its own; a module imports only its own layer or
lower ones (``tests/test_layout.py``), and this package face imports none of them:

    proofflow.settings  every environment variable proofflow reads, read once into a typed Settings
    proofflow.spec      the parameter domains (circuits, sizes, backends, staging); beside it
                        proofflow.phases, the phases a proof's time is split into
    proofflow.prover    the proving engine (no Airflow); proofflow.prover.device holds every
                        CuPy/NVRTC touch (kernels, pinned memory, device copies)
    proofflow.timing    the timing store, its views and migrations, reports, calibration and
                        the H2D check (no Airflow)
    proofflow.airflow   the Airflow provider: hooks, operators, notifications, plugins, params
    proofflow.cli       the ``proofflow`` command (with the DAG files, the top layer)
"""
__version__ = "0.1.0"
