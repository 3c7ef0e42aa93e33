// G1 multi-scalar multiplication over BLS12-381 by Pippenger's bucket method.
//
// Points live on the device in affine Montgomery form (x, y: 48 bytes each, little-endian,
// R = 2^384), (0, 0) standing for infinity (it is not on y^2 = x^3 + 4). Buckets
// accumulate in XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), whose mixed
// addition costs 8M + 2S and needs no inversion. Scalars arrive as Fr vectors in
// Montgomery form and are cut into signed c-bit digits, so a window needs 2^(c-1)
// buckets. Buckets are filled by a counting sort (count, scan, scatter) per window, then
// summed in pieces of a bounded number of entries, one thread a piece, so that a bucket
// holding many entries (skewed scalars) does not serialize on one thread.
//
// Fq works on 12 32-bit words with PTX carry chains, as fr.cuh does for Fr: the GPU
// multiplies 32x32 natively and emulates 64x64.
#include "fr.cuh"

struct fq_t { u32 w[12]; };
struct xyzz_t { fq_t x, y, zz, zzz; };

#define FQ_Q_WORDS 0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, \
                   0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau
#define FQ_ONE_WORDS 0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u, \
                     0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u  // R mod q
#define FQ_R2_WORDS 0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu, \
                    0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u  // R^2 mod q
#define FQ_INV 0xfffcfffdu  // -q^-1 mod 2^32

__device__ __forceinline__ bool fq_is_zero(const fq_t& a) {
    u32 d = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) d |= a.w[i];
    return d == 0;
}

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
__device__ __forceinline__ fq_t fq_reduce_once(const u32* t) {
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

__device__ __forceinline__ fq_t fq_add(const fq_t& a, const fq_t& b) {
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

__device__ __forceinline__ fq_t fq_sub(const fq_t& a, const fq_t& b) {
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
__device__ __forceinline__ fq_t fq_mul(const fq_t& a, const fq_t& b) {
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
__device__ __forceinline__ fq_t fq_sqr(const fq_t& a) {
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

__device__ __forceinline__ fq_t fq_neg(const fq_t& a) {
    const fq_t zero = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
    return fq_is_zero(a) ? a : fq_sub(zero, a);
}
// ---- XYZZ arithmetic (formulas of Bernstein-Lange's database, a = 0) ----

__device__ __forceinline__ xyzz_t xyzz_inf() {
    xyzz_t p;
#pragma unroll
    for (int i = 0; i < 12; i++) p.x.w[i] = p.y.w[i] = p.zz.w[i] = p.zzz.w[i] = 0;
    return p;
}

__device__ __forceinline__ bool xyzz_is_inf(const xyzz_t& p) { return fq_is_zero(p.zz); }

// 2 * (x, y) for an affine point (mdbl-2008-s-1)
__device__ xyzz_t affine_dbl(const fq_t& x, const fq_t& y) {
    fq_t u = fq_add(y, y), v = fq_sqr(u), w = fq_mul(u, v), s = fq_mul(x, v);
    fq_t x2 = fq_sqr(x), m = fq_add(fq_add(x2, x2), x2);
    xyzz_t r;
    r.x = fq_sub(fq_sqr(m), fq_add(s, s));
    r.y = fq_sub(fq_mul(m, fq_sub(s, r.x)), fq_mul(w, y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// 2 * p (dbl-2008-s-1)
__device__ xyzz_t xyzz_dbl(const xyzz_t& p) {
    if (xyzz_is_inf(p)) return p;
    fq_t u = fq_add(p.y, p.y), v = fq_sqr(u), w = fq_mul(u, v), s = fq_mul(p.x, v);
    fq_t x2 = fq_sqr(p.x), m = fq_add(fq_add(x2, x2), x2);
    xyzz_t r;
    r.x = fq_sub(fq_sqr(m), fq_add(s, s));
    r.y = fq_sub(fq_mul(m, fq_sub(s, r.x)), fq_mul(w, p.y));
    r.zz = fq_mul(v, p.zz);
    r.zzz = fq_mul(w, p.zzz);
    return r;
}

// p + (x, y) for an affine point, (x, y) not infinity (madd-2008-s)
__device__ xyzz_t xyzz_add_affine(const xyzz_t& p, const fq_t& x, const fq_t& y) {
    if (xyzz_is_inf(p)) {
        xyzz_t r;
        r.x = x;
        r.y = y;
        r.zz = r.zzz = fq_t{{FQ_ONE_WORDS}};
        return r;
    }
    fq_t u2 = fq_mul(x, p.zz), s2 = fq_mul(y, p.zzz);
    fq_t pp_ = fq_sub(u2, p.x), r_ = fq_sub(s2, p.y);
    if (fq_is_zero(pp_)) return fq_is_zero(r_) ? affine_dbl(x, y) : xyzz_inf();
    fq_t pp = fq_sqr(pp_), ppp = fq_mul(pp_, pp), q = fq_mul(p.x, pp);
    xyzz_t o;
    o.x = fq_sub(fq_sub(fq_sqr(r_), ppp), fq_add(q, q));
    o.y = fq_sub(fq_mul(r_, fq_sub(q, o.x)), fq_mul(p.y, ppp));
    o.zz = fq_mul(p.zz, pp);
    o.zzz = fq_mul(p.zzz, ppp);
    return o;
}

// p + q (add-2008-s)
__device__ xyzz_t xyzz_add(const xyzz_t& p, const xyzz_t& q) {
    if (xyzz_is_inf(p)) return q;
    if (xyzz_is_inf(q)) return p;
    fq_t u1 = fq_mul(p.x, q.zz), u2 = fq_mul(q.x, p.zz);
    fq_t s1 = fq_mul(p.y, q.zzz), s2 = fq_mul(q.y, p.zzz);
    fq_t pp_ = fq_sub(u2, u1), r_ = fq_sub(s2, s1);
    if (fq_is_zero(pp_)) return fq_is_zero(r_) ? xyzz_dbl(p) : xyzz_inf();
    fq_t pp = fq_sqr(pp_), ppp = fq_mul(pp_, pp), qq = fq_mul(u1, pp);
    xyzz_t o;
    o.x = fq_sub(fq_sub(fq_sqr(r_), ppp), fq_add(qq, qq));
    o.y = fq_sub(fq_mul(r_, fq_sub(qq, o.x)), fq_mul(s1, ppp));
    o.zz = fq_mul(fq_mul(p.zz, q.zz), pp);
    o.zzz = fq_mul(fq_mul(p.zzz, q.zzz), ppp);
    return o;
}

// Loads and stores by 16 bytes: an Fq element is three uint4, a point in memory six.
__device__ __forceinline__ fq_t fq_from(uint4 a, uint4 b, uint4 c) {
    return fq_t{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w}};
}

__device__ __forceinline__ fq_t fq_load(const u64* v) {
    const uint4* p = reinterpret_cast<const uint4*>(v);
    return fq_from(p[0], p[1], p[2]);
}

__device__ __forceinline__ void fq_store(u64* v, const fq_t& a) {
    uint4* p = reinterpret_cast<uint4*>(v);
    p[0] = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    p[1] = make_uint4(a.w[4], a.w[5], a.w[6], a.w[7]);
    p[2] = make_uint4(a.w[8], a.w[9], a.w[10], a.w[11]);
}

__device__ __forceinline__ void xyzz_store(u64* v, const xyzz_t& p) {
    fq_store(v, p.x); fq_store(v + 6, p.y); fq_store(v + 12, p.zz); fq_store(v + 18, p.zzz);
}

__device__ __forceinline__ xyzz_t xyzz_load(const u64* v) {
    xyzz_t p;
    p.x = fq_load(v); p.y = fq_load(v + 6); p.zz = fq_load(v + 12); p.zzz = fq_load(v + 18);
    return p;
}

// ---- kernels ----

// xy-LE canonical coordinates (12 limbs a point) -> Montgomery form, in place.
extern "C" __global__ void g1_to_montgomery(u64* pts, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fq_t r2 = {{FQ_R2_WORDS}};
    fq_store(pts + 12 * i, fq_mul(fq_load(pts + 12 * i), r2));
    fq_store(pts + 12 * i + 6, fq_mul(fq_load(pts + 12 * i + 6), r2));
}

// Signed c-bit digit of window w of the canonical scalar s (4 limbs); carry in/out.
__device__ __forceinline__ int window_digit(const u64* s, int w, int c, int& carry) {
    int bit = w * c, limb = bit >> 6, shift = bit & 63;
    u64 v = limb < 4 ? s[limb] >> shift : 0;
    if (shift && limb + 1 < 4) v |= s[limb + 1] << (64 - shift);
    int d = (int)(v & ((1ull << c) - 1)) + carry;
    if (d > (1 << (c - 1))) { d -= 1 << c; carry = 1; } else carry = 0;
    return d;
}

__device__ __forceinline__ void canonical_scalar(const u32* scalars, u64 i, u64* s) {
    const fr_t one = {{1, 0, 0, 0, 0, 0, 0, 0}};  // times R^-1: out of Montgomery form
    fr_t v = fr_mul(fr_load(scalars, i), one);
#pragma unroll
    for (int k = 0; k < 4; k++) s[k] = ((u64)v.w[2 * k + 1] << 32) | v.w[2 * k];
}

#define NO_SLOT 0xffffffffu

// Bucket slot w * (nb + 1) + |d| of each window's digit, NO_SLOT for a zero digit or past n.
// The sort kernels aggregate equal slots across the warp (one atomic per distinct slot):
// with skewed scalars most of a warp hits one counter. Every lane runs every window, so
// the full-warp intrinsics see all 32 lanes (blockDim is a multiple of 32).
#define FOR_EACH_SLOT(BODY)                                                   \
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;                       \
    u64 s[4] = {0, 0, 0, 0};                                                  \
    if (i < n) canonical_scalar(scalars, i, s);                               \
    int carry = 0, nb = 1 << (c - 1), lane = threadIdx.x & 31;                \
    for (int w = 0; w < nwin; w++) {                                          \
        int d = window_digit(s, w, c, carry);                                 \
        u32 slot = d ? w * (nb + 1) + (d < 0 ? -d : d) : NO_SLOT;             \
        u32 peers = __match_any_sync(0xffffffffu, slot);                      \
        int leader = __ffs(peers) - 1;                                        \
        if (slot != NO_SLOT) { BODY }                                         \
    }

// counts[slot] += 1 for every non-zero digit
extern "C" __global__ void msm_count(const u32* scalars, u64 n, int c, int nwin, u32* counts) {
    FOR_EACH_SLOT(if (lane == leader) atomicAdd(&counts[slot], (u32)__popc(peers));)
}

// Place each (point, sign) into its bucket's slice: cursor starts at the slices' offsets.
extern "C" __global__ void msm_scatter(const u32* scalars, u64 n, int c, int nwin, u32* cursor,
                                       u32* entries) {
    FOR_EACH_SLOT(
        u32 base = 0;
        if (lane == leader) base = atomicAdd(&cursor[slot], (u32)__popc(peers));
        base = __shfl_sync(peers, base, leader);
        entries[base + __popc(peers & ((1u << lane) - 1))] = (u32)i | (d < 0 ? 0x80000000u : 0u);)
}

// Piece k of a segment list cut into pieces of at most `size` items: segment seg of
// len[seg] items from start[seg] has ceil(len / size) pieces first[seg], first[seg] + 1, ...
// of near-equal length (not `size` and a remainder: a warp's threads then finish together).
__device__ __forceinline__ void piece_range(const u32* start, const u32* len, const u32* piece_seg,
                                            const u32* seg_first, u32 k, u32 size, u32& lo, u32& hi) {
    u32 seg = piece_seg[k], n = len[seg], parts = (n + size - 1) / size, j = k - seg_first[seg];
    lo = start[seg] + (u32)((u64)j * n / parts);
    hi = start[seg] + (u32)((u64)(j + 1) * n / parts);
}

// One thread a piece of a bucket's entries: their sum (points negated where the digit was
// negative). The next point is loaded before the current one is added.
extern "C" __global__ void __launch_bounds__(128, 4) msm_accumulate(
        const u64* pts, const u32* entries, const u32* offsets, const u32* counts, const u32* piece_seg,
        const u32* seg_first, u32 npieces, u32 size, u64* out) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= npieces) return;
    u32 lo, hi;
    piece_range(offsets, counts, piece_seg, seg_first, k, size, lo, hi);
    xyzz_t acc = xyzz_inf();
    u32 e = entries[lo];
    const uint4* p = reinterpret_cast<const uint4*>(pts) + 6ull * (e & 0x7fffffffu);
    uint4 v0 = __ldg(p), v1 = __ldg(p + 1), v2 = __ldg(p + 2), v3 = __ldg(p + 3), v4 = __ldg(p + 4),
          v5 = __ldg(p + 5);
    for (u32 j = lo; j < hi; j++) {
        fq_t x = fq_from(v0, v1, v2), y = fq_from(v3, v4, v5);
        bool neg = e >> 31;
        if (j + 1 < hi) {
            e = entries[j + 1];
            p = reinterpret_cast<const uint4*>(pts) + 6ull * (e & 0x7fffffffu);
            v0 = __ldg(p); v1 = __ldg(p + 1); v2 = __ldg(p + 2); v3 = __ldg(p + 3); v4 = __ldg(p + 4);
            v5 = __ldg(p + 5);
        }
        if (fq_is_zero(x) && fq_is_zero(y)) continue;  // infinity in the table
        acc = xyzz_add_affine(acc, x, neg ? fq_neg(y) : y);
    }
    xyzz_store(out + 24ull * k, acc);
}

// One thread a group of at most `size` consecutive XYZZ points of a segment: their sum.
extern "C" __global__ void __launch_bounds__(128) msm_combine(
        const u64* in, const u32* start, const u32* len, const u32* group_seg, const u32* seg_first,
        u32 ngroups, u32 size, u64* out) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= ngroups) return;
    u32 lo, hi;
    piece_range(start, len, group_seg, seg_first, k, size, lo, hi);
    xyzz_t acc = xyzz_load(in + 24ull * lo);
    for (u32 j = lo + 1; j < hi; j++) acc = xyzz_add(acc, xyzz_load(in + 24ull * j));
    xyzz_store(out + 24ull * k, acc);
}

// Bucket reduction in chunks: thread (w, k) takes buckets lo..hi-1 (numbered from 1) and
// returns sum_b b * B_b over them as running sums plus (lo - 1) * (sum of B_b). Bucket
// (w, b) is slot w * (nb + 1) + b, its sum at parts[first[slot]] if it has one (len <= 1).
extern "C" __global__ void __launch_bounds__(128) msm_reduce(
        const u64* parts, const u32* first, const u32* len, int nb, int nwin, int chunks, u64* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nwin * chunks) return;
    int w = t / chunks, k = t % chunks, per = (nb + chunks - 1) / chunks;
    int lo = 1 + k * per, hi = min(nb + 1, lo + per);
    xyzz_t running = xyzz_inf(), acc = xyzz_inf();
    for (int b = hi - 1; b >= lo; b--) {
        u32 slot = w * (nb + 1) + b;
        if (len[slot]) running = xyzz_add(running, xyzz_load(parts + 24ull * first[slot]));
        acc = xyzz_add(acc, running);
    }
    // acc holds sum (b - lo + 1) B_b; add (lo - 1) * running by double-and-add.
    xyzz_t extra = xyzz_inf();
    for (int bit = 31 - __clz(max(lo - 1, 1)); bit >= 0 && lo > 1; bit--) {
        extra = xyzz_dbl(extra);
        if (((lo - 1) >> bit) & 1) extra = xyzz_add(extra, running);
    }
    xyzz_store(out + 24ull * t, xyzz_add(acc, extra));
}
