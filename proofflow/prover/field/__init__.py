"""A curve's scalar field as the engine computes in it: ``fr.Fr``."""
