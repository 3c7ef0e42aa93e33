"""Compute backends: one interface (``base``), the CPU implementation (``cpu``), the GPU one
(``proofflow.prover.device.backend``) and a stand-in that stretches a device phase (``standin``).

``by_name.get_backend("auto")`` picks the GPU when CuPy is installed and sees a device, else
the CPU. It is not imported here: the GPU backend builds on ``base``, and importing it runs
this file first. Importing this package never imports CuPy.
"""
