"""`proofflow setup --r1cs X --out Y` refuses an existing Y unless given --force (#36): Y may be
a real ceremony's zkey, which a test-only key must not silently replace."""
import pytest


def _cli(*args) -> int:
    from proofflow import cli
    return cli.main([str(a) for a in args])


def test_an_existing_out_is_refused_and_left_untouched(tmp_path, capsys):
    out = tmp_path / "ceremony.zkey"
    out.write_bytes(b"a real ceremony's key")
    assert _cli("setup", "--r1cs", tmp_path / "any.r1cs", "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out {out} exists; pass --force to replace it with a test-only zkey"]
    assert out.read_bytes() == b"a real ceremony's key"


@pytest.mark.slow
def test_force_replaces_it(compiled, tmp_path, capsys):
    from proofflow.prover.circom import read_r1cs, read_zkey
    out = tmp_path / "chain.zkey"
    out.write_bytes(b"old")
    assert _cli("setup", "--r1cs", compiled["chain"].r1cs, "--out", out, "--force", "--backend", "cpu") == 0
    assert read_zkey(out).n_vars == read_r1cs(compiled["chain"].r1cs).n_wires and "TEST ONLY" in capsys.readouterr().err
