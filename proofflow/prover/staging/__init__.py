"""Staging: where a partition's a/b/c and witness wait for the device, page-locked under a
budget. ``pool`` (a process's buffers), ``shared`` (segments in shared memory that the
prover service maps), ``mapped`` (a process's mappings of them), ``receiver`` (segments
streamed in from other hosts), ``segment`` (their layout) and ``staged`` (a partition ready
to prove)."""
