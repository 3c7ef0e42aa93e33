"""bench._env.curve_record: how bench.gpu (--curve) keeps each curve's results in one file, as
bench/results/gpu-h200.json holds them: BLS12-381's at the top level, BN254's under its name,
a run of one curve keeping the others', --only merging into its own."""
import json

from bench import _env


def test_each_curve_records_in_its_place_and_keeps_the_others(tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"msm_g1_ms": {"24": 127.9}, "ntt_ms": {"24": 7.2}}))
    whole, bn = _env.curve_record(path, "bn254")
    assert bn == {} and whole["bn254"] is bn and whole["msm_g1_ms"] == {"24": 127.9}
    bn["msm_g1_ms"] = {"24": 55.0}
    path.write_text(json.dumps(whole))

    whole, bn = _env.curve_record(path, "bn254", keep=True)  # --only: its sections merge into what it had
    assert bn == {"msm_g1_ms": {"24": 55.0}} and whole["ntt_ms"] == {"24": 7.2}
    whole, bn = _env.curve_record(path, "bn254")  # a whole run starts its record afresh
    assert bn == {} and whole["msm_g1_ms"] == {"24": 127.9}

    whole, bls = _env.curve_record(path, "bls12_381")  # the default curve's: the top level, afresh
    assert whole is bls and bls == {"bn254": {"msm_g1_ms": {"24": 55.0}}}
    whole, bls = _env.curve_record(path, "bls12_381", keep=True)
    assert whole is bls and bls["ntt_ms"] == {"24": 7.2} and bls["bn254"] == {"msm_g1_ms": {"24": 55.0}}


def test_a_first_run_starts_an_empty_file(tmp_path):
    whole, bn = _env.curve_record(tmp_path / "none.json", "bn254", keep=True)
    assert whole == {"bn254": {}} and bn == {}
    whole, bls = _env.curve_record(tmp_path / "none.json", "bls12_381")
    assert whole == bls == {}
