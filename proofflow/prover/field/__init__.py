"""Finite fields of BLS12-381."""
