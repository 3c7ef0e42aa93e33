// The base field Fq of BLS12-381 (q < 2^381), 12 little-endian 32-bit words an element,
// Montgomery form (R = 2^384), fully reduced. On the GPU the products are PTX carry chains
// (the GPU multiplies 32x32 natively and emulates 64x64); the host build (the CPU twin,
// common.cuh) computes the same values portably. In memory an element is 6 u64 limbs,
// the layout of prover/curve.py's xy-LE encoding.
#ifndef PROOFFLOW_FQ_CUH
#define PROOFFLOW_FQ_CUH

#include "common.cuh"

struct fq_t {
    u32 w[12];
    static constexpr int U64 = 6;  // u64 limbs in memory
};

#define FQ_Q_WORDS 0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, \
                   0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau
#define FQ_ONE_WORDS 0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u, \
                     0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u  // R mod q
#define FQ_R2_WORDS 0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu, \
                    0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u  // R^2 mod q
#define FQ_INV 0xfffcfffdu  // -q^-1 mod 2^32

PF_INLINE bool fq_is_zero(const fq_t& a) {
    u32 d = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) d |= a.w[i];
    return d == 0;
}

#ifdef PF_GPU
// t[0..11] += lo(a[j] * b), the carry going into t[12]
__device__ __forceinline__ void fq_mac_lo(u32* t, const u32* a, u32 b) {
    asm("mad.lo.cc.u32  %0, %13, %25, %0;\n\t"
        "madc.lo.cc.u32 %1, %14, %25, %1;\n\t"
        "madc.lo.cc.u32 %2, %15, %25, %2;\n\t"
        "madc.lo.cc.u32 %3, %16, %25, %3;\n\t"
        "madc.lo.cc.u32 %4, %17, %25, %4;\n\t"
        "madc.lo.cc.u32 %5, %18, %25, %5;\n\t"
        "madc.lo.cc.u32 %6, %19, %25, %6;\n\t"
        "madc.lo.cc.u32 %7, %20, %25, %7;\n\t"
        "madc.lo.cc.u32 %8, %21, %25, %8;\n\t"
        "madc.lo.cc.u32 %9, %22, %25, %9;\n\t"
        "madc.lo.cc.u32 %10, %23, %25, %10;\n\t"
        "madc.lo.cc.u32 %11, %24, %25, %11;\n\t"
        "addc.u32       %12, %12, 0;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]),
          "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11]),
          "+r"(t[12])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
          "r"(a[6]), "r"(a[7]), "r"(a[8]), "r"(a[9]), "r"(a[10]), "r"(a[11]), "r"(b));
}

// t[1..12] += hi(a[j] * b)
__device__ __forceinline__ void fq_mac_hi(u32* t, const u32* a, u32 b) {
    asm("mad.hi.cc.u32  %0, %12, %24, %0;\n\t"
        "madc.hi.cc.u32 %1, %13, %24, %1;\n\t"
        "madc.hi.cc.u32 %2, %14, %24, %2;\n\t"
        "madc.hi.cc.u32 %3, %15, %24, %3;\n\t"
        "madc.hi.cc.u32 %4, %16, %24, %4;\n\t"
        "madc.hi.cc.u32 %5, %17, %24, %5;\n\t"
        "madc.hi.cc.u32 %6, %18, %24, %6;\n\t"
        "madc.hi.cc.u32 %7, %19, %24, %7;\n\t"
        "madc.hi.cc.u32 %8, %20, %24, %8;\n\t"
        "madc.hi.cc.u32 %9, %21, %24, %9;\n\t"
        "madc.hi.cc.u32 %10, %22, %24, %10;\n\t"
        "madc.hi.u32    %11, %23, %24, %11;"
        : "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]),
          "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11]), "+r"(t[12])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]),
          "r"(a[6]), "r"(a[7]), "r"(a[8]), "r"(a[9]), "r"(a[10]), "r"(a[11]), "r"(b));
}

// t < 2q  ->  t mod q (one conditional subtraction)
PF_INLINE fq_t fq_reduce_once(const u32* t) {
    u32 r[12], borrow;
    asm("sub.cc.u32  %0, %13, 0xffffaaab;\n\t"
        "subc.cc.u32 %1, %14, 0xb9feffff;\n\t"
        "subc.cc.u32 %2, %15, 0xb153ffff;\n\t"
        "subc.cc.u32 %3, %16, 0x1eabfffe;\n\t"
        "subc.cc.u32 %4, %17, 0xf6b0f624;\n\t"
        "subc.cc.u32 %5, %18, 0x6730d2a0;\n\t"
        "subc.cc.u32 %6, %19, 0xf38512bf;\n\t"
        "subc.cc.u32 %7, %20, 0x64774b84;\n\t"
        "subc.cc.u32 %8, %21, 0x434bacd7;\n\t"
        "subc.cc.u32 %9, %22, 0x4b1ba7b6;\n\t"
        "subc.cc.u32 %10, %23, 0x397fe69a;\n\t"
        "subc.cc.u32 %11, %24, 0x1a0111ea;\n\t"
        "subc.u32    %12, 0, 0;"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),
          "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]),
          "=r"(borrow)
        : "r"(t[0]), "r"(t[1]), "r"(t[2]), "r"(t[3]), "r"(t[4]), "r"(t[5]),
          "r"(t[6]), "r"(t[7]), "r"(t[8]), "r"(t[9]), "r"(t[10]), "r"(t[11]));
    fq_t out;
#pragma unroll
    for (int i = 0; i < 12; i++) out.w[i] = borrow ? t[i] : r[i];  // borrow: t was already < q
    return out;
}

PF_INLINE fq_t fq_add(const fq_t& a, const fq_t& b) {
    u32 t[12];  // a + b < 2q < 2^382: no carry out
#pragma unroll
    for (int i = 0; i < 12; i++) t[i] = a.w[i];
    asm("add.cc.u32  %0, %0, %12;\n\t"
        "addc.cc.u32 %1, %1, %13;\n\t"
        "addc.cc.u32 %2, %2, %14;\n\t"
        "addc.cc.u32 %3, %3, %15;\n\t"
        "addc.cc.u32 %4, %4, %16;\n\t"
        "addc.cc.u32 %5, %5, %17;\n\t"
        "addc.cc.u32 %6, %6, %18;\n\t"
        "addc.cc.u32 %7, %7, %19;\n\t"
        "addc.cc.u32 %8, %8, %20;\n\t"
        "addc.cc.u32 %9, %9, %21;\n\t"
        "addc.cc.u32 %10, %10, %22;\n\t"
        "addc.u32    %11, %11, %23;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]),
          "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11])
        : "r"(b.w[0]), "r"(b.w[1]), "r"(b.w[2]), "r"(b.w[3]), "r"(b.w[4]), "r"(b.w[5]),
          "r"(b.w[6]), "r"(b.w[7]), "r"(b.w[8]), "r"(b.w[9]), "r"(b.w[10]), "r"(b.w[11]));
    return fq_reduce_once(t);
}

PF_INLINE fq_t fq_sub(const fq_t& a, const fq_t& b) {
    const u32 q[12] = {FQ_Q_WORDS};
    u32 t[12], qm[12], mask;  // mask = all ones when a < b, then q is added back
#pragma unroll
    for (int i = 0; i < 12; i++) t[i] = a.w[i];
    asm("sub.cc.u32  %0, %0, %13;\n\t"
        "subc.cc.u32 %1, %1, %14;\n\t"
        "subc.cc.u32 %2, %2, %15;\n\t"
        "subc.cc.u32 %3, %3, %16;\n\t"
        "subc.cc.u32 %4, %4, %17;\n\t"
        "subc.cc.u32 %5, %5, %18;\n\t"
        "subc.cc.u32 %6, %6, %19;\n\t"
        "subc.cc.u32 %7, %7, %20;\n\t"
        "subc.cc.u32 %8, %8, %21;\n\t"
        "subc.cc.u32 %9, %9, %22;\n\t"
        "subc.cc.u32 %10, %10, %23;\n\t"
        "subc.cc.u32 %11, %11, %24;\n\t"
        "subc.u32    %12, 0, 0;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]),
          "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11]),
          "=r"(mask)
        : "r"(b.w[0]), "r"(b.w[1]), "r"(b.w[2]), "r"(b.w[3]), "r"(b.w[4]), "r"(b.w[5]),
          "r"(b.w[6]), "r"(b.w[7]), "r"(b.w[8]), "r"(b.w[9]), "r"(b.w[10]), "r"(b.w[11]));
#pragma unroll
    for (int i = 0; i < 12; i++) qm[i] = q[i] & mask;
    asm("add.cc.u32  %0, %0, %12;\n\t"
        "addc.cc.u32 %1, %1, %13;\n\t"
        "addc.cc.u32 %2, %2, %14;\n\t"
        "addc.cc.u32 %3, %3, %15;\n\t"
        "addc.cc.u32 %4, %4, %16;\n\t"
        "addc.cc.u32 %5, %5, %17;\n\t"
        "addc.cc.u32 %6, %6, %18;\n\t"
        "addc.cc.u32 %7, %7, %19;\n\t"
        "addc.cc.u32 %8, %8, %20;\n\t"
        "addc.cc.u32 %9, %9, %21;\n\t"
        "addc.cc.u32 %10, %10, %22;\n\t"
        "addc.u32    %11, %11, %23;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]),
          "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11])
        : "r"(qm[0]), "r"(qm[1]), "r"(qm[2]), "r"(qm[3]), "r"(qm[4]), "r"(qm[5]),
          "r"(qm[6]), "r"(qm[7]), "r"(qm[8]), "r"(qm[9]), "r"(qm[10]), "r"(qm[11]));
    fq_t out;
#pragma unroll
    for (int i = 0; i < 12; i++) out.w[i] = t[i];
    return out;
}

// Montgomery product a * b / 2^384 mod q, CIOS over 32-bit words. With t < 2q on entry
// to each row and q < 2^381, t + a*b_i + m*q < 2^415: thirteen words never overflow.
PF_INLINE fq_t fq_mul(const fq_t& a, const fq_t& b) {
    const u32 q[12] = {FQ_Q_WORDS};
    u32 t[13] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 12; i++) {
        fq_mac_lo(t, a.w, b.w[i]);
        fq_mac_hi(t, a.w, b.w[i]);
        u32 m = t[0] * FQ_INV;
        fq_mac_lo(t, q, m);
        fq_mac_hi(t, q, m);
#pragma unroll
        for (int j = 0; j < 12; j++) t[j] = t[j + 1];  // t[0] is now 0: divide by 2^32
        t[12] = 0;
    }
    return fq_reduce_once(t);
}

// a^2 / 2^384 mod q: the 24-word square from 66 cross products (doubled) and 12 squares,
// then a Montgomery reduction of its low half: q^2 / R < q/8 and REDC(low) <= q, so the sum
// of REDC(low) and the high half is < 2q.
PF_INLINE fq_t fq_sqr(const fq_t& a) {
    const u32 q[12] = {FQ_Q_WORDS};
    u32 r[24] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    asm("mad.lo.cc.u32  %0, %12, %23, %0;\n\t"
        "madc.lo.cc.u32 %1, %13, %23, %1;\n\t"
        "madc.lo.cc.u32 %2, %14, %23, %2;\n\t"
        "madc.lo.cc.u32 %3, %15, %23, %3;\n\t"
        "madc.lo.cc.u32 %4, %16, %23, %4;\n\t"
        "madc.lo.cc.u32 %5, %17, %23, %5;\n\t"
        "madc.lo.cc.u32 %6, %18, %23, %6;\n\t"
        "madc.lo.cc.u32 %7, %19, %23, %7;\n\t"
        "madc.lo.cc.u32 %8, %20, %23, %8;\n\t"
        "madc.lo.cc.u32 %9, %21, %23, %9;\n\t"
        "madc.lo.cc.u32 %10, %22, %23, %10;\n\t"
        "addc.u32       %11, 0, 0;"
        : "+r"(r[1]), "+r"(r[2]), "+r"(r[3]), "+r"(r[4]), "+r"(r[5]), "+r"(r[6]),
          "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12])
        : "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]),
          "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[0]));
    asm("mad.hi.cc.u32  %0, %11, %22, %0;\n\t"
        "madc.hi.cc.u32 %1, %12, %22, %1;\n\t"
        "madc.hi.cc.u32 %2, %13, %22, %2;\n\t"
        "madc.hi.cc.u32 %3, %14, %22, %3;\n\t"
        "madc.hi.cc.u32 %4, %15, %22, %4;\n\t"
        "madc.hi.cc.u32 %5, %16, %22, %5;\n\t"
        "madc.hi.cc.u32 %6, %17, %22, %6;\n\t"
        "madc.hi.cc.u32 %7, %18, %22, %7;\n\t"
        "madc.hi.cc.u32 %8, %19, %22, %8;\n\t"
        "madc.hi.cc.u32 %9, %20, %22, %9;\n\t"
        "madc.hi.u32    %10, %21, %22, %10;"
        : "+r"(r[2]), "+r"(r[3]), "+r"(r[4]), "+r"(r[5]), "+r"(r[6]), "+r"(r[7]),
          "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12])
        : "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]),
          "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[0]));
    asm("mad.lo.cc.u32  %0, %11, %21, %0;\n\t"
        "madc.lo.cc.u32 %1, %12, %21, %1;\n\t"
        "madc.lo.cc.u32 %2, %13, %21, %2;\n\t"
        "madc.lo.cc.u32 %3, %14, %21, %3;\n\t"
        "madc.lo.cc.u32 %4, %15, %21, %4;\n\t"
        "madc.lo.cc.u32 %5, %16, %21, %5;\n\t"
        "madc.lo.cc.u32 %6, %17, %21, %6;\n\t"
        "madc.lo.cc.u32 %7, %18, %21, %7;\n\t"
        "madc.lo.cc.u32 %8, %19, %21, %8;\n\t"
        "madc.lo.cc.u32 %9, %20, %21, %9;\n\t"
        "addc.u32       %10, 0, 0;"
        : "+r"(r[3]), "+r"(r[4]), "+r"(r[5]), "+r"(r[6]), "+r"(r[7]), "+r"(r[8]),
          "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13])
        : "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]),
          "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[1]));
    asm("mad.hi.cc.u32  %0, %10, %20, %0;\n\t"
        "madc.hi.cc.u32 %1, %11, %20, %1;\n\t"
        "madc.hi.cc.u32 %2, %12, %20, %2;\n\t"
        "madc.hi.cc.u32 %3, %13, %20, %3;\n\t"
        "madc.hi.cc.u32 %4, %14, %20, %4;\n\t"
        "madc.hi.cc.u32 %5, %15, %20, %5;\n\t"
        "madc.hi.cc.u32 %6, %16, %20, %6;\n\t"
        "madc.hi.cc.u32 %7, %17, %20, %7;\n\t"
        "madc.hi.cc.u32 %8, %18, %20, %8;\n\t"
        "madc.hi.u32    %9, %19, %20, %9;"
        : "+r"(r[4]), "+r"(r[5]), "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]),
          "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13])
        : "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]),
          "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[1]));
    asm("mad.lo.cc.u32  %0, %10, %19, %0;\n\t"
        "madc.lo.cc.u32 %1, %11, %19, %1;\n\t"
        "madc.lo.cc.u32 %2, %12, %19, %2;\n\t"
        "madc.lo.cc.u32 %3, %13, %19, %3;\n\t"
        "madc.lo.cc.u32 %4, %14, %19, %4;\n\t"
        "madc.lo.cc.u32 %5, %15, %19, %5;\n\t"
        "madc.lo.cc.u32 %6, %16, %19, %6;\n\t"
        "madc.lo.cc.u32 %7, %17, %19, %7;\n\t"
        "madc.lo.cc.u32 %8, %18, %19, %8;\n\t"
        "addc.u32       %9, 0, 0;"
        : "+r"(r[5]), "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]),
          "+r"(r[11]), "+r"(r[12]), "+r"(r[13]), "+r"(r[14])
        : "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]),
          "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[2]));
    asm("mad.hi.cc.u32  %0, %9, %18, %0;\n\t"
        "madc.hi.cc.u32 %1, %10, %18, %1;\n\t"
        "madc.hi.cc.u32 %2, %11, %18, %2;\n\t"
        "madc.hi.cc.u32 %3, %12, %18, %3;\n\t"
        "madc.hi.cc.u32 %4, %13, %18, %4;\n\t"
        "madc.hi.cc.u32 %5, %14, %18, %5;\n\t"
        "madc.hi.cc.u32 %6, %15, %18, %6;\n\t"
        "madc.hi.cc.u32 %7, %16, %18, %7;\n\t"
        "madc.hi.u32    %8, %17, %18, %8;"
        : "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]),
          "+r"(r[12]), "+r"(r[13]), "+r"(r[14])
        : "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]),
          "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[2]));
    asm("mad.lo.cc.u32  %0, %9, %17, %0;\n\t"
        "madc.lo.cc.u32 %1, %10, %17, %1;\n\t"
        "madc.lo.cc.u32 %2, %11, %17, %2;\n\t"
        "madc.lo.cc.u32 %3, %12, %17, %3;\n\t"
        "madc.lo.cc.u32 %4, %13, %17, %4;\n\t"
        "madc.lo.cc.u32 %5, %14, %17, %5;\n\t"
        "madc.lo.cc.u32 %6, %15, %17, %6;\n\t"
        "madc.lo.cc.u32 %7, %16, %17, %7;\n\t"
        "addc.u32       %8, 0, 0;"
        : "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12]),
          "+r"(r[13]), "+r"(r[14]), "+r"(r[15])
        : "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]),
          "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[3]));
    asm("mad.hi.cc.u32  %0, %8, %16, %0;\n\t"
        "madc.hi.cc.u32 %1, %9, %16, %1;\n\t"
        "madc.hi.cc.u32 %2, %10, %16, %2;\n\t"
        "madc.hi.cc.u32 %3, %11, %16, %3;\n\t"
        "madc.hi.cc.u32 %4, %12, %16, %4;\n\t"
        "madc.hi.cc.u32 %5, %13, %16, %5;\n\t"
        "madc.hi.cc.u32 %6, %14, %16, %6;\n\t"
        "madc.hi.u32    %7, %15, %16, %7;"
        : "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13]),
          "+r"(r[14]), "+r"(r[15])
        : "r"(a.w[4]), "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]),
          "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[3]));
    asm("mad.lo.cc.u32  %0, %8, %15, %0;\n\t"
        "madc.lo.cc.u32 %1, %9, %15, %1;\n\t"
        "madc.lo.cc.u32 %2, %10, %15, %2;\n\t"
        "madc.lo.cc.u32 %3, %11, %15, %3;\n\t"
        "madc.lo.cc.u32 %4, %12, %15, %4;\n\t"
        "madc.lo.cc.u32 %5, %13, %15, %5;\n\t"
        "madc.lo.cc.u32 %6, %14, %15, %6;\n\t"
        "addc.u32       %7, 0, 0;"
        : "+r"(r[9]), "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13]), "+r"(r[14]),
          "+r"(r[15]), "+r"(r[16])
        : "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]),
          "r"(a.w[11]), "r"(a.w[4]));
    asm("mad.hi.cc.u32  %0, %7, %14, %0;\n\t"
        "madc.hi.cc.u32 %1, %8, %14, %1;\n\t"
        "madc.hi.cc.u32 %2, %9, %14, %2;\n\t"
        "madc.hi.cc.u32 %3, %10, %14, %3;\n\t"
        "madc.hi.cc.u32 %4, %11, %14, %4;\n\t"
        "madc.hi.cc.u32 %5, %12, %14, %5;\n\t"
        "madc.hi.u32    %6, %13, %14, %6;"
        : "+r"(r[10]), "+r"(r[11]), "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]),
          "+r"(r[16])
        : "r"(a.w[5]), "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]),
          "r"(a.w[11]), "r"(a.w[4]));
    asm("mad.lo.cc.u32  %0, %7, %13, %0;\n\t"
        "madc.lo.cc.u32 %1, %8, %13, %1;\n\t"
        "madc.lo.cc.u32 %2, %9, %13, %2;\n\t"
        "madc.lo.cc.u32 %3, %10, %13, %3;\n\t"
        "madc.lo.cc.u32 %4, %11, %13, %4;\n\t"
        "madc.lo.cc.u32 %5, %12, %13, %5;\n\t"
        "addc.u32       %6, 0, 0;"
        : "+r"(r[11]), "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]),
          "+r"(r[17])
        : "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]),
          "r"(a.w[5]));
    asm("mad.hi.cc.u32  %0, %6, %12, %0;\n\t"
        "madc.hi.cc.u32 %1, %7, %12, %1;\n\t"
        "madc.hi.cc.u32 %2, %8, %12, %2;\n\t"
        "madc.hi.cc.u32 %3, %9, %12, %3;\n\t"
        "madc.hi.cc.u32 %4, %10, %12, %4;\n\t"
        "madc.hi.u32    %5, %11, %12, %5;"
        : "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17])
        : "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]),
          "r"(a.w[5]));
    asm("mad.lo.cc.u32  %0, %6, %11, %0;\n\t"
        "madc.lo.cc.u32 %1, %7, %11, %1;\n\t"
        "madc.lo.cc.u32 %2, %8, %11, %2;\n\t"
        "madc.lo.cc.u32 %3, %9, %11, %3;\n\t"
        "madc.lo.cc.u32 %4, %10, %11, %4;\n\t"
        "addc.u32       %5, 0, 0;"
        : "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17]), "+r"(r[18])
        : "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[6]));
    asm("mad.hi.cc.u32  %0, %5, %10, %0;\n\t"
        "madc.hi.cc.u32 %1, %6, %10, %1;\n\t"
        "madc.hi.cc.u32 %2, %7, %10, %2;\n\t"
        "madc.hi.cc.u32 %3, %8, %10, %3;\n\t"
        "madc.hi.u32    %4, %9, %10, %4;"
        : "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17]), "+r"(r[18])
        : "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[6]));
    asm("mad.lo.cc.u32  %0, %5, %9, %0;\n\t"
        "madc.lo.cc.u32 %1, %6, %9, %1;\n\t"
        "madc.lo.cc.u32 %2, %7, %9, %2;\n\t"
        "madc.lo.cc.u32 %3, %8, %9, %3;\n\t"
        "addc.u32       %4, 0, 0;"
        : "+r"(r[15]), "+r"(r[16]), "+r"(r[17]), "+r"(r[18]), "+r"(r[19])
        : "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[7]));
    asm("mad.hi.cc.u32  %0, %4, %8, %0;\n\t"
        "madc.hi.cc.u32 %1, %5, %8, %1;\n\t"
        "madc.hi.cc.u32 %2, %6, %8, %2;\n\t"
        "madc.hi.u32    %3, %7, %8, %3;"
        : "+r"(r[16]), "+r"(r[17]), "+r"(r[18]), "+r"(r[19])
        : "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[7]));
    asm("mad.lo.cc.u32  %0, %4, %7, %0;\n\t"
        "madc.lo.cc.u32 %1, %5, %7, %1;\n\t"
        "madc.lo.cc.u32 %2, %6, %7, %2;\n\t"
        "addc.u32       %3, 0, 0;"
        : "+r"(r[17]), "+r"(r[18]), "+r"(r[19]), "+r"(r[20])
        : "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[8]));
    asm("mad.hi.cc.u32  %0, %3, %6, %0;\n\t"
        "madc.hi.cc.u32 %1, %4, %6, %1;\n\t"
        "madc.hi.u32    %2, %5, %6, %2;"
        : "+r"(r[18]), "+r"(r[19]), "+r"(r[20])
        : "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[8]));
    asm("mad.lo.cc.u32  %0, %3, %5, %0;\n\t"
        "madc.lo.cc.u32 %1, %4, %5, %1;\n\t"
        "addc.u32       %2, 0, 0;"
        : "+r"(r[19]), "+r"(r[20]), "+r"(r[21])
        : "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[9]));
    asm("mad.hi.cc.u32  %0, %2, %4, %0;\n\t"
        "madc.hi.u32    %1, %3, %4, %1;"
        : "+r"(r[20]), "+r"(r[21])
        : "r"(a.w[10]), "r"(a.w[11]), "r"(a.w[9]));
    asm("mad.lo.cc.u32  %0, %2, %3, %0;\n\t"
        "addc.u32       %1, 0, 0;"
        : "+r"(r[21]), "+r"(r[22])
        : "r"(a.w[11]), "r"(a.w[10]));
    asm("mad.hi.u32     %0, %1, %2, %0;"
        : "+r"(r[22])
        : "r"(a.w[11]), "r"(a.w[10]));
    asm("add.cc.u32  %0, %0, %0;\n\t"
        "addc.cc.u32 %1, %1, %1;\n\t"
        "addc.cc.u32 %2, %2, %2;\n\t"
        "addc.cc.u32 %3, %3, %3;\n\t"
        "addc.cc.u32 %4, %4, %4;\n\t"
        "addc.cc.u32 %5, %5, %5;\n\t"
        "addc.cc.u32 %6, %6, %6;\n\t"
        "addc.cc.u32 %7, %7, %7;\n\t"
        "addc.cc.u32 %8, %8, %8;\n\t"
        "addc.cc.u32 %9, %9, %9;\n\t"
        "addc.cc.u32 %10, %10, %10;\n\t"
        "addc.cc.u32 %11, %11, %11;\n\t"
        "addc.cc.u32 %12, %12, %12;\n\t"
        "addc.cc.u32 %13, %13, %13;\n\t"
        "addc.cc.u32 %14, %14, %14;\n\t"
        "addc.cc.u32 %15, %15, %15;\n\t"
        "addc.cc.u32 %16, %16, %16;\n\t"
        "addc.cc.u32 %17, %17, %17;\n\t"
        "addc.cc.u32 %18, %18, %18;\n\t"
        "addc.cc.u32 %19, %19, %19;\n\t"
        "addc.cc.u32 %20, %20, %20;\n\t"
        "addc.cc.u32 %21, %21, %21;\n\t"
        "addc.cc.u32 %22, %22, %22;\n\t"
        "addc.u32    %23, %23, %23;"
        : "+r"(r[0]), "+r"(r[1]), "+r"(r[2]), "+r"(r[3]), "+r"(r[4]), "+r"(r[5]),
          "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]),
          "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17]),
          "+r"(r[18]), "+r"(r[19]), "+r"(r[20]), "+r"(r[21]), "+r"(r[22]), "+r"(r[23]));
    asm("mad.lo.cc.u32  %0, %24, %24, %0;\n\t"
        "madc.hi.cc.u32 %1, %24, %24, %1;\n\t"
        "madc.lo.cc.u32 %2, %25, %25, %2;\n\t"
        "madc.hi.cc.u32 %3, %25, %25, %3;\n\t"
        "madc.lo.cc.u32 %4, %26, %26, %4;\n\t"
        "madc.hi.cc.u32 %5, %26, %26, %5;\n\t"
        "madc.lo.cc.u32 %6, %27, %27, %6;\n\t"
        "madc.hi.cc.u32 %7, %27, %27, %7;\n\t"
        "madc.lo.cc.u32 %8, %28, %28, %8;\n\t"
        "madc.hi.cc.u32 %9, %28, %28, %9;\n\t"
        "madc.lo.cc.u32 %10, %29, %29, %10;\n\t"
        "madc.hi.cc.u32 %11, %29, %29, %11;\n\t"
        "madc.lo.cc.u32 %12, %30, %30, %12;\n\t"
        "madc.hi.cc.u32 %13, %30, %30, %13;\n\t"
        "madc.lo.cc.u32 %14, %31, %31, %14;\n\t"
        "madc.hi.cc.u32 %15, %31, %31, %15;\n\t"
        "madc.lo.cc.u32 %16, %32, %32, %16;\n\t"
        "madc.hi.cc.u32 %17, %32, %32, %17;\n\t"
        "madc.lo.cc.u32 %18, %33, %33, %18;\n\t"
        "madc.hi.cc.u32 %19, %33, %33, %19;\n\t"
        "madc.lo.cc.u32 %20, %34, %34, %20;\n\t"
        "madc.hi.cc.u32 %21, %34, %34, %21;\n\t"
        "madc.lo.cc.u32 %22, %35, %35, %22;\n\t"
        "madc.hi.u32    %23, %35, %35, %23;"
        : "+r"(r[0]), "+r"(r[1]), "+r"(r[2]), "+r"(r[3]), "+r"(r[4]), "+r"(r[5]),
          "+r"(r[6]), "+r"(r[7]), "+r"(r[8]), "+r"(r[9]), "+r"(r[10]), "+r"(r[11]),
          "+r"(r[12]), "+r"(r[13]), "+r"(r[14]), "+r"(r[15]), "+r"(r[16]), "+r"(r[17]),
          "+r"(r[18]), "+r"(r[19]), "+r"(r[20]), "+r"(r[21]), "+r"(r[22]), "+r"(r[23])
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(a.w[4]), "r"(a.w[5]),
          "r"(a.w[6]), "r"(a.w[7]), "r"(a.w[8]), "r"(a.w[9]), "r"(a.w[10]), "r"(a.w[11]));
    u32 t[13];
#pragma unroll
    for (int i = 0; i < 12; i++) t[i] = r[i];
    t[12] = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        u32 m = t[0] * FQ_INV;
        fq_mac_lo(t, q, m);
        fq_mac_hi(t, q, m);
#pragma unroll
        for (int j = 0; j < 12; j++) t[j] = t[j + 1];
        t[12] = 0;
    }
    asm("add.cc.u32  %0, %0, %12;\n\t"
        "addc.cc.u32 %1, %1, %13;\n\t"
        "addc.cc.u32 %2, %2, %14;\n\t"
        "addc.cc.u32 %3, %3, %15;\n\t"
        "addc.cc.u32 %4, %4, %16;\n\t"
        "addc.cc.u32 %5, %5, %17;\n\t"
        "addc.cc.u32 %6, %6, %18;\n\t"
        "addc.cc.u32 %7, %7, %19;\n\t"
        "addc.cc.u32 %8, %8, %20;\n\t"
        "addc.cc.u32 %9, %9, %21;\n\t"
        "addc.cc.u32 %10, %10, %22;\n\t"
        "addc.u32    %11, %11, %23;"
        : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]),
          "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11])
        : "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]),
          "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]));
    return fq_reduce_once(t);
}


#else  // the host build: the same values through portable multiword arithmetic
PF_INLINE fq_t fq_reduce_once(const u32* t) {
    const u32 q[12] = {FQ_Q_WORDS};
    fq_t out;
    mp_reduce_once<12>(out.w, t, q);
    return out;
}

PF_INLINE fq_t fq_add(const fq_t& a, const fq_t& b) {
    const u32 q[12] = {FQ_Q_WORDS};
    fq_t out;
    mp_add_mod<12>(out.w, a.w, b.w, q);
    return out;
}

PF_INLINE fq_t fq_sub(const fq_t& a, const fq_t& b) {
    const u32 q[12] = {FQ_Q_WORDS};
    fq_t out;
    mp_sub_mod<12>(out.w, a.w, b.w, q);
    return out;
}

PF_INLINE fq_t fq_mul(const fq_t& a, const fq_t& b) {
    const u32 q[12] = {FQ_Q_WORDS};
    fq_t out;
    mp_mont_mul<12>(out.w, a.w, b.w, q, FQ_INV);
    return out;
}

PF_INLINE fq_t fq_sqr(const fq_t& a) { return fq_mul(a, a); }
#endif  // PF_GPU

PF_INLINE fq_t fq_neg(const fq_t& a) {
    const fq_t zero = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
    return fq_is_zero(a) ? a : fq_sub(zero, a);
}

PF_INLINE fq_t fq_one() { return fq_t{{FQ_ONE_WORDS}}; }  // R mod q: 1 in Montgomery form

// canonical -> Montgomery (times R^2 / R) and back (times 1 / R)
PF_INLINE fq_t fq_to_mont(const fq_t& a) { return fq_mul(a, fq_t{{FQ_R2_WORDS}}); }

PF_INLINE fq_t fq_from_mont(const fq_t& a) { return fq_mul(a, fq_t{{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}); }

// Word i of q - 2, the inversion's exponent (q's words but the lowest), without an array:
// a run-time index into a register array would put it in local memory.
PF_INLINE u32 fq_inv_exponent_word(int i) {
    return i == 0 ? 0xffffaaa9u : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu : i == 3 ? 0x1eabfffeu
         : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u
         : i == 8 ? 0x434bacd7u : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
}

// a^-1 = a^(q-2) (Fermat; 0 for a = 0): square and multiply over the exponent's bits from
// the top. The exponent is the same for every thread, so the branch never diverges.
PF_HD inline fq_t fq_inv(const fq_t& a) {
    fq_t r = fq_one();
    for (int i = 11; i >= 0; i--) {
        u32 e = fq_inv_exponent_word(i);
        for (int b = 31; b >= 0; b--) {
            r = fq_sqr(r);
            if ((e >> b) & 1) r = fq_mul(r, a);
        }
    }
    return r;
}

// Loads and stores by 16 bytes: an element is three uint4.
PF_INLINE fq_t fq_from(uint4 a, uint4 b, uint4 c) {
    return fq_t{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w}};
}

PF_INLINE fq_t fq_load(const u64* v) {
    const uint4* p = reinterpret_cast<const uint4*>(v);
    return fq_from(p[0], p[1], p[2]);
}

PF_INLINE void fq_store(u64* v, const fq_t& a) {
    uint4* p = reinterpret_cast<uint4*>(v);
    p[0] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    p[1] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
    p[2] = make_uint4(a.w[8], a.w[9], a.w[10], a.w[11]);
}

#endif  // PROOFFLOW_FQ_CUH
