"""Polynomials over Fr: evaluation domains and NTTs."""
