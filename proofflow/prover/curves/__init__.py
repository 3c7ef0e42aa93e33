"""The curves the engine proves over: each a ``descriptor.Curve`` (its fields' constants,
its groups' equations and point encodings, the library of its points and its pairing),
one module an instance (``bls12_381``, ``bn254``), looked up by name in ``registry``. Everything that
depends on the curve (the C and CUDA kernels, compiled per curve from its constants; key,
proof and zkey encodings; domains) takes a descriptor, so a curve is added as a module
here and its entry in the registry. Pure data: no numpy, no point library imported here."""
