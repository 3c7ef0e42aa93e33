"""The proof-run operators (proof.py), the H2D check (check_h2d.py) and the run summary (summary.py)."""
