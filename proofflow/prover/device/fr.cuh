// BLS12-381 scalar field Fr on the GPU, on the CPU's layout (prover/field/fr.py): an
// element is 32 bytes, little-endian, Montgomery form (R = 2^256), fully reduced (< p).
// Little-endian 64-bit limbs are little-endian 32-bit words, so the kernels read the
// host's (n, 4) uint64 vectors as 8 words an element. The arithmetic works on 32-bit
// words with PTX carry chains: the GPU multiplies 32x32 natively and emulates 64x64,
// so this needs about half the instructions of the 64-bit CIOS. Defining FR_MUL64
// selects that 64-bit CIOS product instead, kept to measure the difference (bench/gpu.py).
// The host build (the CPU twin, see common.cuh) computes the same values portably.
#ifndef PROOFFLOW_FR_CUH
#define PROOFFLOW_FR_CUH

#include "common.cuh"

struct fr_t { u32 w[8]; };

#define FR_P0 0x00000001u
#define FR_P1 0xffffffffu
#define FR_P2 0xfffe5bfeu
#define FR_P3 0x53bda402u
#define FR_P4 0x09a1d805u
#define FR_P5 0x3339d808u
#define FR_P6 0x299d7d48u
#define FR_P7 0x73eda753u

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

#ifdef PF_GPU
// t < 2p  ->  t mod p (one conditional subtraction)
PF_INLINE fr_t fr_reduce_once(const u32* t) {
    u32 r[8], borrow;
    asm("sub.cc.u32  %0, %9,  %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32    %8, 0, 0;"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
          "=r"(r[7]), "=r"(borrow)
        : "r"(t[0]), "r"(t[1]), "r"(t[2]), "r"(t[3]), "r"(t[4]), "r"(t[5]), "r"(t[6]), "r"(t[7]),
          "r"(FR_P0), "r"(FR_P1), "r"(FR_P2), "r"(FR_P3), "r"(FR_P4), "r"(FR_P5), "r"(FR_P6),
          "r"(FR_P7));
    fr_t out;
#pragma unroll
    for (int i = 0; i < 8; i++) out.w[i] = borrow ? t[i] : r[i];  // borrow: t was already < p
    return out;
}

PF_INLINE fr_t fr_add(const fr_t& a, const fr_t& b) {
    u32 t[8];  // a + b < 2p < 2^256: no carry out
    asm("add.cc.u32  %0, %8,  %16;\n\t"
        "addc.cc.u32 %1, %9,  %17;\n\t"
        "addc.cc.u32 %2, %10, %18;\n\t"
        "addc.cc.u32 %3, %11, %19;\n\t"
        "addc.cc.u32 %4, %12, %20;\n\t"
        "addc.cc.u32 %5, %13, %21;\n\t"
        "addc.cc.u32 %6, %14, %22;\n\t"
        "addc.u32    %7, %15, %23;"
        : "=r"(t[0]), "=r"(t[1]), "=r"(t[2]), "=r"(t[3]), "=r"(t[4]), "=r"(t[5]), "=r"(t[6]), "=r"(t[7])
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]),
          "r"(a.w[7]), "r"(b.w[0]), "r"(b.w[1]), "r"(b.w[2]), "r"(b.w[3]), "r"(b.w[4]), "r"(b.w[5]),
          "r"(b.w[6]), "r"(b.w[7]));
    return fr_reduce_once(t);
}

PF_INLINE fr_t fr_sub(const fr_t& a, const fr_t& b) {
    u32 t[8], mask;  // mask = all ones when a < b, then p is added back
    asm("sub.cc.u32  %0, %9,  %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32    %8, 0, 0;"
        : "=r"(t[0]), "=r"(t[1]), "=r"(t[2]), "=r"(t[3]), "=r"(t[4]), "=r"(t[5]), "=r"(t[6]),
          "=r"(t[7]), "=r"(mask)
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]),
          "r"(a.w[7]), "r"(b.w[0]), "r"(b.w[1]), "r"(b.w[2]), "r"(b.w[3]), "r"(b.w[4]), "r"(b.w[5]),
          "r"(b.w[6]), "r"(b.w[7]));
    fr_t out;
    asm("add.cc.u32  %0, %0, %8;\n\t"
        "addc.cc.u32 %1, %1, %9;\n\t"
        "addc.cc.u32 %2, %2, %10;\n\t"
        "addc.cc.u32 %3, %3, %11;\n\t"
        "addc.cc.u32 %4, %4, %12;\n\t"
        "addc.cc.u32 %5, %5, %13;\n\t"
        "addc.cc.u32 %6, %6, %14;\n\t"
        "addc.u32    %7, %7, %15;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7])
        : "r"(FR_P0 & mask), "r"(FR_P1 & mask), "r"(FR_P2 & mask), "r"(FR_P3 & mask),
          "r"(FR_P4 & mask), "r"(FR_P5 & mask), "r"(FR_P6 & mask), "r"(FR_P7 & mask));
#pragma unroll
    for (int i = 0; i < 8; i++) out.w[i] = t[i];
    return out;
}

#ifndef FR_MUL64
// t[0..7] += lo(a[j] * b), the carry going into t[8]
__device__ __forceinline__ void fr_mac_lo(u32* t, const u32* a, u32 b) {
    asm("mad.lo.cc.u32  %0, %9,  %17, %0;\n\t"
        "madc.lo.cc.u32 %1, %10, %17, %1;\n\t"
        "madc.lo.cc.u32 %2, %11, %17, %2;\n\t"
        "madc.lo.cc.u32 %3, %12, %17, %3;\n\t"
        "madc.lo.cc.u32 %4, %13, %17, %4;\n\t"
        "madc.lo.cc.u32 %5, %14, %17, %5;\n\t"
        "madc.lo.cc.u32 %6, %15, %17, %6;\n\t"
        "madc.lo.cc.u32 %7, %16, %17, %7;\n\t"
        "addc.u32       %8, %8, 0;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]),
          "+r"(t[7]), "+r"(t[8])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
          "r"(b));
}

// t[1..8] += hi(a[j] * b)
__device__ __forceinline__ void fr_mac_hi(u32* t, const u32* a, u32 b) {
    asm("mad.hi.cc.u32  %0, %8,  %16, %0;\n\t"
        "madc.hi.cc.u32 %1, %9,  %16, %1;\n\t"
        "madc.hi.cc.u32 %2, %10, %16, %2;\n\t"
        "madc.hi.cc.u32 %3, %11, %16, %3;\n\t"
        "madc.hi.cc.u32 %4, %12, %16, %4;\n\t"
        "madc.hi.cc.u32 %5, %13, %16, %5;\n\t"
        "madc.hi.cc.u32 %6, %14, %16, %6;\n\t"
        "madc.hi.u32    %7, %15, %16, %7;"
        : "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7]),
          "+r"(t[8])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
          "r"(b));
}

// Montgomery product a * b / 2^256 mod p, CIOS over 32-bit words. With t < 2p on entry
// to each row and p < 0.91 * 2^255, t + a*b_i + m*p < 2^288: nine words never overflow.
PF_INLINE fr_t fr_mul(const fr_t& a, const fr_t& b) {
    const u32 p[8] = {FR_P0, FR_P1, FR_P2, FR_P3, FR_P4, FR_P5, FR_P6, FR_P7};
    u32 t[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 8; i++) {
        fr_mac_lo(t, a.w, b.w[i]);
        fr_mac_hi(t, a.w, b.w[i]);
        u32 m = t[0] * 0xffffffffu;  // -p^-1 mod 2^32 is -1, since p = 1 mod 2^32
        fr_mac_lo(t, p, m);
        fr_mac_hi(t, p, m);
#pragma unroll
        for (int j = 0; j < 8; j++) t[j] = t[j + 1];  // t[0] is now 0: divide by 2^32
        t[8] = 0;
    }
    return fr_reduce_once(t);
}
#else
// The 64-bit CIOS of prover/native/fr.c, with __umul64hi for the high halves.
__device__ __forceinline__ u64 fr_mac64(u64 t, u64 a, u64 b, u64& carry) {
    u64 lo = a * b, hi = __umul64hi(a, b);
    lo += t;
    hi += lo < t;
    lo += carry;
    hi += lo < carry;
    carry = hi;
    return lo;
}

PF_INLINE fr_t fr_mul(const fr_t& x, const fr_t& y) {
    const u64 p[4] = {0xffffffff00000001ull, 0x53bda402fffe5bfeull, 0x3339d80809a1d805ull,
                      0x73eda753299d7d48ull};
    u64 a[4], b[4], t[6] = {0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        a[i] = ((u64)x.w[2 * i + 1] << 32) | x.w[2 * i];
        b[i] = ((u64)y.w[2 * i + 1] << 32) | y.w[2 * i];
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) t[j] = fr_mac64(t[j], a[j], b[i], c);
        t[4] += c;
        t[5] = t[4] < c;
        u64 m = t[0] * 0xfffffffeffffffffull;  // -p^-1 mod 2^64
        c = 0;
        fr_mac64(t[0], m, p[0], c);
#pragma unroll
        for (int j = 1; j < 4; j++) t[j - 1] = fr_mac64(t[j], m, p[j], c);
        t[3] = t[4] + c;
        t[4] = t[5] + (t[3] < c);
    }
    u32 w[8];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        w[2 * i] = (u32)t[i];
        w[2 * i + 1] = (u32)(t[i] >> 32);
    }
    return fr_reduce_once(w);  // t < 2p < 2^256, so t[4] is 0 here
}
#endif

#else  // the host build: the same values through portable multiword arithmetic
PF_INLINE fr_t fr_reduce_once(const u32* t) {
    const u32 p[8] = {FR_P0, FR_P1, FR_P2, FR_P3, FR_P4, FR_P5, FR_P6, FR_P7};
    fr_t out;
    mp_reduce_once<8>(out.w, t, p);
    return out;
}

PF_INLINE fr_t fr_add(const fr_t& a, const fr_t& b) {
    const u32 p[8] = {FR_P0, FR_P1, FR_P2, FR_P3, FR_P4, FR_P5, FR_P6, FR_P7};
    fr_t out;
    mp_add_mod<8>(out.w, a.w, b.w, p);
    return out;
}

PF_INLINE fr_t fr_sub(const fr_t& a, const fr_t& b) {
    const u32 p[8] = {FR_P0, FR_P1, FR_P2, FR_P3, FR_P4, FR_P5, FR_P6, FR_P7};
    fr_t out;
    mp_sub_mod<8>(out.w, a.w, b.w, p);
    return out;
}

PF_INLINE fr_t fr_mul(const fr_t& a, const fr_t& b) {
    const u32 p[8] = {FR_P0, FR_P1, FR_P2, FR_P3, FR_P4, FR_P5, FR_P6, FR_P7};
    fr_t out;
    mp_mont_mul<8>(out.w, a.w, b.w, p, 0xffffffffu);
    return out;
}
#endif  // PF_GPU

// Element i of a Montgomery Fr vector as its canonical value, 4 little-endian u64 limbs.
PF_INLINE void canonical_scalar(const u32* scalars, u64 i, u64* s) {
    const fr_t one = {{1, 0, 0, 0, 0, 0, 0, 0}};  // times R^-1: out of Montgomery form
    fr_t v = fr_mul(fr_load(scalars, i), one);
#pragma unroll
    for (int k = 0; k < 4; k++) s[k] = ((u64)v.w[2 * k + 1] << 32) | v.w[2 * k];
}

#endif  // PROOFFLOW_FR_CUH
