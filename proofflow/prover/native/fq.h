/* Fq and Fq2 = Fq[u]/(u^2 + 1) in Montgomery form, N = FQ_LIMBS 64-bit limbs, fully reduced:
 * the arithmetic the CPU's curve code (curve.c) and key-table decompression (compressed.c)
 * share, over the field of the -D defines they are built with (FQ_LIMBS, FQ_MODULUS, FQ_INV,
 * FQ_ONE, FQ_R2). Included, so each file's build (native.load hashes the headers too) inlines it. */
#ifndef PROOFFLOW_FQ_H
#define PROOFFLOW_FQ_H
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;

#define N FQ_LIMBS
static const uint64_t Q[N] = {FQ_MODULUS};
static const uint64_t QINV = FQ_INV; /* -q^-1 mod 2^64 */
static const uint64_t FQ_ONE_M[N] = {FQ_ONE};
static const uint64_t FQ_R2_M[N] = {FQ_R2};

/* ---- Fq: N limbs, Montgomery form, fully reduced ---- */

static inline int fq_cmp(const uint64_t *a, const uint64_t *b) { /* -1, 0, 1 */
    for (int i = N - 1; i >= 0; i--) {
        if (a[i] > b[i]) return 1;
        if (a[i] < b[i]) return -1;
    }
    return 0;
}

static inline int fq_geq_q(const uint64_t *t) { return fq_cmp(t, Q) >= 0; }

static inline void fq_sub_q(uint64_t *t) {
    u128 borrow = 0;
    for (int i = 0; i < N; i++) {
        u128 d = (u128)t[i] - Q[i] - borrow;
        t[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
}

/* a * b / R mod q (CIOS). q < 2^(64N - 1), so the result before the last subtraction is
 * below 2q and fits the N words. */
static inline void fq_mul(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[N + 2] = {0};
    for (int i = 0; i < N; i++) {
        u128 c = 0;
        for (int j = 0; j < N; j++) {
            c += (u128)a[j] * b[i] + t[j];
            t[j] = (uint64_t)c;
            c >>= 64;
        }
        c += t[N];
        t[N] = (uint64_t)c;
        t[N + 1] = (uint64_t)(c >> 64);
        uint64_t m = t[0] * QINV;
        c = ((u128)m * Q[0] + t[0]) >> 64;
        for (int j = 1; j < N; j++) {
            c += (u128)m * Q[j] + t[j];
            t[j - 1] = (uint64_t)c;
            c >>= 64;
        }
        c += t[N];
        t[N - 1] = (uint64_t)c;
        t[N] = t[N + 1] + (uint64_t)(c >> 64);
    }
    if (t[N] || fq_geq_q(t)) fq_sub_q(t);
    memcpy(out, t, 8 * N);
}

static inline void fq_add(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[N];
    u128 c = 0;
    for (int i = 0; i < N; i++) {
        c += (u128)a[i] + b[i];
        t[i] = (uint64_t)c;
        c >>= 64;
    }
    if (fq_geq_q(t)) fq_sub_q(t); /* a + b < 2q < 2^(64N): no carry out */
    memcpy(out, t, 8 * N);
}

static inline void fq_sub(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t[N];
    u128 borrow = 0;
    for (int i = 0; i < N; i++) {
        u128 d = (u128)a[i] - b[i] - borrow;
        t[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
    if (borrow) {
        u128 c = 0;
        for (int i = 0; i < N; i++) {
            c += (u128)t[i] + Q[i];
            t[i] = (uint64_t)c;
            c >>= 64;
        }
    }
    memcpy(out, t, 8 * N);
}

static inline int fq_is_zero(const uint64_t *a) {
    uint64_t acc = 0;
    for (int i = 0; i < N; i++) acc |= a[i];
    return acc == 0;
}

static inline int fq_eq(const uint64_t *a, const uint64_t *b) { return memcmp(a, b, 8 * N) == 0; }
static inline void fq_zero(uint64_t *a) { memset(a, 0, 8 * N); }
static inline void fq_one(uint64_t *a) { memcpy(a, FQ_ONE_M, 8 * N); }

static inline void fq_neg(const uint64_t *a, uint64_t *out) {
    static const uint64_t zero[N];
    fq_sub(zero, a, out);
}

/* a^e, e of N limbs: 4-bit windows from the top */
static void fq_pow(const uint64_t *a, const uint64_t *e, uint64_t *out) {
    uint64_t pw[16][N], r[N];
    fq_one(pw[0]);
    memcpy(pw[1], a, 8 * N);
    for (int j = 2; j < 16; j++) fq_mul(pw[j - 1], a, pw[j]);
    fq_one(r);
    for (int i = N - 1; i >= 0; i--)
        for (int shift = 60; shift >= 0; shift -= 4) {
            for (int s = 0; s < 4; s++) fq_mul(r, r, r);
            fq_mul(r, pw[(e[i] >> shift) & 15], r);
        }
    memcpy(out, r, 8 * N);
}

/* 1/a by Fermat (a^(q-2)); 0 for 0. */
static void fq_inv(const uint64_t *a, uint64_t *out) {
    uint64_t e[N];
    memcpy(e, Q, 8 * N);
    e[0] -= 2; /* q is odd and above 2: no borrow */
    fq_pow(a, e, out);
}

/* ---- Fq2 = Fq[u]/(u^2 + 1): c0 then c1 ---- */

static inline void fq2_add(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    fq_add(a, b, out);
    fq_add(a + N, b + N, out + N);
}

static inline void fq2_sub(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    fq_sub(a, b, out);
    fq_sub(a + N, b + N, out + N);
}

static inline void fq2_mul(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    uint64_t t0[N], t1[N], sa[N], sb[N];
    fq_mul(a, b, t0);
    fq_mul(a + N, b + N, t1);
    fq_add(a, a + N, sa);
    fq_add(b, b + N, sb);
    fq_mul(sa, sb, sa); /* (a0 + a1)(b0 + b1) */
    fq_sub(sa, t0, sa);
    fq_sub(sa, t1, out + N);
    fq_sub(t0, t1, out); /* u^2 = -1 */
}

static inline int fq2_is_zero(const uint64_t *a) { return fq_is_zero(a) && fq_is_zero(a + N); }
static inline int fq2_eq(const uint64_t *a, const uint64_t *b) { return memcmp(a, b, 16 * N) == 0; }
static inline void fq2_zero(uint64_t *a) { memset(a, 0, 16 * N); }
static inline void fq2_one(uint64_t *a) { fq_one(a); fq_zero(a + N); }

/* 1/(c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2). */
static void fq2_inv(const uint64_t *a, uint64_t *out) {
    uint64_t t0[N], t1[N], zero[N] = {0};
    fq_mul(a, a, t0);
    fq_mul(a + N, a + N, t1);
    fq_add(t0, t1, t0);
    fq_inv(t0, t0);
    fq_mul(a, t0, out);
    fq_mul(a + N, t0, t1);
    fq_sub(zero, t1, out + N);
}

#endif
