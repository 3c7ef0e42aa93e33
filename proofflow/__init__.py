"""proofflow: batch Groth16 proving over BLS12-381 on GPUs, orchestrated by Apache Airflow.

Layers, each importable on its own:

    proofflow.prover    the proving engine (no Airflow); proofflow.prover.device holds every
                        CuPy/NVRTC touch (kernels, pinned memory, device copies)
    proofflow.timing    the timing store, its views and migrations, reports, calibration and
                        the H2D check (no Airflow)
    proofflow.airflow   the Airflow provider: hooks, operators, notifications, plugins, params
    proofflow.settings  every environment variable proofflow reads
    proofflow.spec      the parameter domains (circuits, sizes, backends, staging)
"""
__version__ = "0.1.0"
