// A curve's scalar field Fr on the GPU, on the CPU's layout (prover/field/fr.py): an
// element is 32 bytes, little-endian, Montgomery form (R = 2^256), fully reduced (< p).
// Little-endian 64-bit limbs are little-endian 32-bit words, so the kernels read the
// host's (n, 4) uint64 vectors as 8 words an element. The arithmetic is mont.cuh's, its
// constants the curve's (PF_FR_*: source.py's generated header).
#ifndef PROOFFLOW_FR_CUH
#define PROOFFLOW_FR_CUH

#include "mont.cuh"

#if !defined(PF_FR_WORDS) || PF_FR_WORDS != 8
#error "compile with a curve's header (source.curve_header): the kernels take an Fr of 8 words"
#endif

typedef mont_t<PF_FR_WORDS, PF_FR_M0, PF_FR_MODULUS> fr_t;

PF_INLINE fr_t fr_load(const u32* v, u64 i) {
    const uint4* p = reinterpret_cast<const uint4*>(v) + 2 * i;
    uint4 lo = pf_ldg(p), hi = pf_ldg(p + 1);
    return fr_t{{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

PF_INLINE void fr_store(u32* v, u64 i, const fr_t& a) {
    uint4* p = reinterpret_cast<uint4*>(v) + 2 * i;
    p[0] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    p[1] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
}

// The kernels' Fr product: the variant's operator* (the 32-bit CIOS, or mul_wide under
// PF_MUL_WIDE), or under FR_MUL64 (on the GPU) the 64-bit one that bench/gpu.py compares.
PF_INLINE fr_t fr_mul(const fr_t& a, const fr_t& b) {
#if defined(FR_MUL64) && defined(PF_GPU)
    return fr_t::mul64(a, b);
#else
    return a * b;
#endif
}

// Element i of a Montgomery Fr vector as its canonical value, 4 little-endian u64 limbs.
PF_INLINE void canonical_scalar(const u32* scalars, u64 i, u64* s) {
    fr_t v = fr_load(scalars, i).from_mont();
#pragma unroll
    for (int k = 0; k < 4; k++) s[k] = ((u64)v.w[2 * k + 1] << 32) | v.w[2 * k];
}

#endif  // PROOFFLOW_FR_CUH
