"""Everything that touches the GPU: the CUDA kernels (``*.cu``, ``*.cuh``, compiled at run
time by NVRTC through CuPy, ``source.py``) next to their host drivers (``backend.py``: the
GPU backend with its NTTs; ``msm.py`` and ``pippenger.py``: the MSMs; ``fixed_base.py``: the
setup's multiplications), page-locked host memory and timed copies. No module outside
this package imports CuPy; importing this package does not either."""
