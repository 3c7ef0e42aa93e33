"""The curve header every kernel module is compiled with (``source.curve_header``): for
BLS12-381 its constants are the literal words fr.cuh and fq.cuh held before curves were
descriptors, so the kernels compute as they did; and the curve is part of a module's text,
label and digest. (The modules' PTX for sm_90 was compared whole, before and after, when the
header came in: identical.)"""
from __future__ import annotations

import dataclasses
import re

from proofflow.prover.curves import registry
from proofflow.prover.curves.bls12_381 import BLS12_381 as CURVE
from proofflow.prover.curves.descriptor import PrimeField
from proofflow.prover.device import cache, source

# fr.cuh's and fq.cuh's literals before the header: the template's arguments (M0 first), one
# and R^2, and the words of q - 2 (fq_inv_exponent_word)
FR_TEMPLATE = ["0xffffffffu", "0x00000001u", "0xffffffffu", "0xfffe5bfeu", "0x53bda402u", "0x09a1d805u",
               "0x3339d808u", "0x299d7d48u", "0x73eda753u"]
FQ_TEMPLATE = ["0xfffcfffdu", "0xffffaaabu", "0xb9feffffu", "0xb153ffffu", "0x1eabfffeu", "0xf6b0f624u",
               "0x6730d2a0u", "0xf38512bfu", "0x64774b84u", "0x434bacd7u", "0x4b1ba7b6u", "0x397fe69au",
               "0x1a0111eau"]
FQ_ONE = ["0x0002fffdu", "0x76090000u", "0xc40c0002u", "0xebf4000bu", "0x53c758bau", "0x5f489857u", "0x70525745u",
          "0x77ce5853u", "0xa256ec6du", "0x5c071a97u", "0xfa80e493u", "0x15f65ec3u"]
FQ_R2 = ["0x1c341746u", "0xf4df1f34u", "0x09d104f1u", "0x0a76e6a6u", "0x4c95b6d5u", "0x8de5476cu", "0x939d83c0u",
         "0x67eb88a9u", "0xb519952du", "0x9a793e85u", "0x92cae3aau", "0x11988fe5u"]
FQ_INV_EXPONENT = ["0xffffaaa9u", "0xb9feffffu", "0xb153ffffu", "0x1eabfffeu", "0xf6b0f624u", "0x6730d2a0u",
                   "0xf38512bfu", "0x64774b84u", "0x434bacd7u", "0x4b1ba7b6u", "0x397fe69au", "0x1a0111eau"]


def _defines(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).split("  //")[0].strip()
            for m in re.finditer(r"^#define (\w+(?:\(\w+(?:, \w+)*\))?) (.*)$", text, re.M)}


def _words(value: str) -> list[str]:
    return [w.strip() for w in value.split(",")]


def test_bls12_381_s_header_holds_the_constants_the_headers_had():
    d = _defines(source.curve_header(CURVE))
    assert [d["PF_FR_M0"], *_words(d["PF_FR_MODULUS"])] == FR_TEMPLATE and d["PF_FR_WORDS"] == "8"
    assert [d["PF_FQ_M0"], *_words(d["PF_FQ_MODULUS"])] == FQ_TEMPLATE and d["PF_FQ_WORDS"] == "12"
    assert _words(d["PF_FQ_ONE"]) == FQ_ONE and _words(d["PF_FQ_R2"]) == FQ_R2
    exponent = d["PF_FQ_INV_EXPONENT_WORD(i)"]
    assert re.findall(r"0x[0-9a-f]{8}u", exponent) == FQ_INV_EXPONENT
    assert [int(i) for i in re.findall(r"\(i\) == (\d+)", exponent)] == list(range(11))
    assert d["PF_FQ2_NON_RESIDUE"] == "(-1)"
    assert d["PF_FQ_UINT4S(p)"] == "(p)[0], (p)[1], (p)[2]"


def test_the_header_s_words_are_the_descriptor_s_values():
    """Each list of words read back as an integer is the descriptor's constant."""
    d = _defines(source.curve_header(CURVE))

    def value(name: str) -> int:
        return sum(int(w[2:-1], 16) << (32 * i) for i, w in enumerate(_words(d[name])))
    q, fq = CURVE.fq.modulus, CURVE.fq
    assert value("PF_FR_MODULUS") == CURVE.fr.modulus and value("PF_FQ_MODULUS") == q
    assert value("PF_FQ_ONE") == fq.montgomery_r and value("PF_FQ_R2") == fq.montgomery_r2
    assert q * int(d["PF_FQ_M0"][2:-1], 16) % (1 << 32) == (1 << 32) - 1


def test_every_module_is_compiled_with_its_curve_s_header():
    for m in cache.MODULES:
        assert m.text().startswith(source.curve_header(m.curve)) and m.label.endswith(f"-{m.curve.name}")
    assert [c for c in dict.fromkeys(m.curve.name for m in cache.MODULES)] == list(registry.NAMES)


def test_another_curve_is_another_module():
    """A curve of another name, or of other constants, gives another label and another text
    (so another cubin); the same constants compile to the same text."""
    ntt = cache.Module(CURVE, "ntt.cu")
    renamed = dataclasses.replace(CURVE, name="bls12_381_twin")
    other_fq = dataclasses.replace(CURVE, fq=PrimeField(CURVE.fq.modulus - 2 ** 380, 6))
    assert cache.Module(renamed, "ntt.cu").label != ntt.label and cache.Module(renamed, "ntt.cu").text() == ntt.text()
    assert cache.Module(other_fq, "ntt.cu").text() != ntt.text()
    assert cache.digest(cache.Module(other_fq, "ntt.cu").text(), ntt.options(), "90", (12, 9)) != \
        cache.digest(ntt.text(), ntt.options(), "90", (12, 9))
