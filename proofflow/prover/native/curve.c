/* A pairing curve's groups on the CPU: G1 over Fq and G2 over Fq2 = Fq[u]/(u^2 + 1), both
 * short Weierstrass with a = 0 (y^2 = x^3 + b), for the curves whose point library has no
 * fast bulk path of its own (BN254: proofflow.prover.curves.bn254_points).
 *
 * Points cross this interface as the engine's xy-LE encoding: affine canonical coordinates,
 * FQ_LIMBS little-endian 64-bit limbs each (G2: x.c0, x.c1, y.c0, y.c1); the point at
 * infinity is all zeros. Inside, coordinates are in Montgomery form (R = 2^(64 FQ_LIMBS))
 * and points Jacobian (x = X/Z^2, y = Y/Z^3; Z = 0 at infinity). Scalars are 4 canonical
 * limbs. Nothing here allocates a thread: the CPU backend runs MSMs on threads of its own
 * (ctypes lets go of the GIL for the call).
 *
 * The curve's constants come as -D defines (proofflow.prover.native.curve.curve_defines):
 * Fq's (FQ_*), R^2 mod q (FQ_R2), b of each group in Montgomery form (G1_B, G2_B: c0 then
 * c1) and the scalar field's prime (FR_MODULUS, for the subgroup check). The group code is
 * written once and compiled for each group: this file includes itself twice (GROUP_PASS),
 * with G(name) naming the group's functions, F(name) its coordinate field's and K its width.
 */
#ifndef GROUP_PASS
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(FQ_LIMBS) || !defined(FQ_MODULUS) || !defined(FQ_INV) || !defined(FQ_ONE) || !defined(FQ_R2) \
    || !defined(G1_B) || !defined(G2_B) || !defined(FR_MODULUS)
#error "compile with a curve's constants: FQ_LIMBS, FQ_MODULUS, FQ_INV, FQ_ONE, FQ_R2, G1_B, G2_B, FR_MODULUS"
#endif

#include "fq.h"

static const uint64_t R_SCALAR[4] = {FR_MODULUS};
static const uint64_t B1[N] = {G1_B};
static const uint64_t B2[2 * N] = {G2_B};

/* Canonical coordinates (n of width `k` limbs, each N-limb part < q) to Montgomery form,
 * and back. */
static inline void to_mont(const uint64_t *in, uint64_t *out, int k) {
    for (int i = 0; i < k; i += N) fq_mul(in + i, FQ_R2_M, out + i);
}

static inline void from_mont(const uint64_t *in, uint64_t *out, int k) {
    static const uint64_t one[N] = {1};
    for (int i = 0; i < k; i += N) fq_mul(in + i, one, out + i);
}

static inline int canonical(const uint64_t *in, int k) {
    for (int i = 0; i < k; i += N)
        if (fq_geq_q(in + i)) return 0;
    return 1;
}

static inline int scalar_bit(const uint64_t *s, int i) { return (s[i >> 6] >> (i & 63)) & 1; }

/* Bits [lo, lo + c) of a 256-bit scalar, c <= 32. */
static inline uint32_t scalar_window(const uint64_t *s, int lo, int c) {
    int limb = lo >> 6, shift = lo & 63;
    uint64_t v = s[limb] >> shift;
    if (shift + c > 64 && limb < 3) v |= s[limb + 1] << (64 - shift);
    return (uint32_t)(v & ((1ull << c) - 1));
}

#define GROUP_PASS 1
#define G(name) g1_##name
#define F(name) fq_##name
#define K N
#define B_CONST B1
#include __FILE__
#undef G
#undef F
#undef K
#undef B_CONST
#undef GROUP_PASS

#define GROUP_PASS 2
#define G(name) g2_##name
#define F(name) fq2_##name
#define K (2 * N)
#define B_CONST B2
#include __FILE__

#else /* ---- one group's code: G(name), F(name), K (u64 limbs a coordinate), B_CONST ---- */

typedef struct { uint64_t x[K], y[K], z[K]; } G(jac);
typedef struct { uint64_t x[K], y[K]; int inf; } G(aff);

static inline void G(set_inf)(G(jac) *p) { memset(p, 0, sizeof *p); }
static inline int G(is_inf)(const G(jac) *p) { return F(is_zero)(p->z); }

static inline void G(from_aff)(G(jac) *r, const G(aff) *a) {
    if (a->inf) { G(set_inf)(r); return; }
    memcpy(r->x, a->x, 8 * K);
    memcpy(r->y, a->y, 8 * K);
    F(one)(r->z);
}

/* Canonical xy-LE (2K limbs) to Montgomery affine. */
static inline void G(load)(const uint64_t *xy, G(aff) *a) {
    a->inf = 1;
    for (int i = 0; i < 2 * K; i++)
        if (xy[i]) { a->inf = 0; break; }
    if (a->inf) return;
    to_mont(xy, a->x, K);
    to_mont(xy + K, a->y, K);
}

/* 2p (dbl-2009-l, a = 0). */
static void G(dbl)(G(jac) *r, const G(jac) *p) {
    if (G(is_inf)(p)) { G(set_inf)(r); return; }
    uint64_t A[K], B[K], C[K], D[K], E[K], Fv[K], t[K];
    F(mul)(p->x, p->x, A);
    F(mul)(p->y, p->y, B);
    F(mul)(B, B, C);
    F(add)(p->x, B, t);
    F(mul)(t, t, D);
    F(sub)(D, A, D);
    F(sub)(D, C, D);
    F(add)(D, D, D);
    F(add)(A, A, E);
    F(add)(E, A, E);
    F(mul)(E, E, Fv);
    F(mul)(p->y, p->z, t); /* Z3 = 2YZ, before Y is overwritten (r may be p) */
    F(add)(t, t, r->z);
    F(sub)(Fv, D, r->x);
    F(sub)(r->x, D, r->x);
    F(sub)(D, r->x, t);
    F(mul)(E, t, t);
    F(add)(C, C, C);
    F(add)(C, C, C);
    F(add)(C, C, C);
    F(sub)(t, C, r->y);
}

/* p + q for Jacobian q (add-2007-bl), the doubling and inverse cases handled. */
static void G(add)(G(jac) *r, const G(jac) *p, const G(jac) *q) {
    if (G(is_inf)(p)) { *r = *q; return; }
    if (G(is_inf)(q)) { *r = *p; return; }
    uint64_t z1z1[K], z2z2[K], u1[K], u2[K], s1[K], s2[K], h[K], i[K], j[K], rr[K], v[K], t[K];
    F(mul)(p->z, p->z, z1z1);
    F(mul)(q->z, q->z, z2z2);
    F(mul)(p->x, z2z2, u1);
    F(mul)(q->x, z1z1, u2);
    F(mul)(p->y, q->z, s1);
    F(mul)(s1, z2z2, s1);
    F(mul)(q->y, p->z, s2);
    F(mul)(s2, z1z1, s2);
    F(sub)(u2, u1, h);
    F(sub)(s2, s1, rr);
    if (F(is_zero)(h)) {
        if (F(is_zero)(rr)) { G(jac) d = *p; G(dbl)(r, &d); }
        else G(set_inf)(r);
        return;
    }
    F(add)(rr, rr, rr);
    F(add)(h, h, i);
    F(mul)(i, i, i);
    F(mul)(h, i, j);
    F(mul)(u1, i, v);
    F(add)(p->z, q->z, t);
    F(mul)(t, t, t);
    F(sub)(t, z1z1, t);
    F(sub)(t, z2z2, t);
    F(mul)(t, h, r->z);
    F(mul)(rr, rr, r->x);
    F(sub)(r->x, j, r->x);
    F(sub)(r->x, v, r->x);
    F(sub)(r->x, v, r->x);
    F(sub)(v, r->x, t);
    F(mul)(rr, t, t);
    F(mul)(s1, j, s1);
    F(add)(s1, s1, s1);
    F(sub)(t, s1, r->y);
}

/* p + a for affine a (madd-2007-bl), the doubling and inverse cases handled. */
static void G(madd)(G(jac) *r, const G(jac) *p, const G(aff) *a) {
    if (a->inf) { *r = *p; return; }
    if (G(is_inf)(p)) { G(from_aff)(r, a); return; }
    uint64_t z1z1[K], u2[K], s2[K], h[K], hh[K], i[K], j[K], rr[K], v[K], t[K];
    F(mul)(p->z, p->z, z1z1);
    F(mul)(a->x, z1z1, u2);
    F(mul)(a->y, p->z, s2);
    F(mul)(s2, z1z1, s2);
    F(sub)(u2, p->x, h);
    F(sub)(s2, p->y, rr);
    if (F(is_zero)(h)) {
        if (F(is_zero)(rr)) { G(jac) d = *p; G(dbl)(r, &d); }
        else G(set_inf)(r);
        return;
    }
    F(add)(rr, rr, rr);
    F(mul)(h, h, hh);
    F(add)(hh, hh, i);
    F(add)(i, i, i);
    F(mul)(h, i, j);
    F(mul)(p->x, i, v);
    F(add)(p->z, h, t);
    F(mul)(t, t, t);
    F(sub)(t, z1z1, t);
    F(sub)(t, hh, r->z);
    F(mul)(p->y, j, t); /* 2 Y1 J, before Y1 is overwritten (r may be p) */
    F(add)(t, t, t);
    F(mul)(rr, rr, r->x);
    F(sub)(r->x, j, r->x);
    F(sub)(r->x, v, r->x);
    F(sub)(r->x, v, r->x);
    F(sub)(v, r->x, v);
    F(mul)(rr, v, v);
    F(sub)(v, t, r->y);
}

/* Jacobian to canonical xy-LE (all zeros at infinity). */
static void G(store)(const G(jac) *p, uint64_t *xy) {
    if (G(is_inf)(p)) { memset(xy, 0, 16 * K); return; }
    uint64_t zi[K], zi2[K], x[K], y[K];
    F(inv)(p->z, zi);
    F(mul)(zi, zi, zi2);
    F(mul)(p->x, zi2, x);
    F(mul)(p->y, zi2, y);
    F(mul)(y, zi, y);
    from_mont(x, xy, K);
    from_mont(y, xy + K, K);
}

/* s * a by double-and-add from the top bit (s: 4 limbs). */
static void G(scalar_mul)(G(jac) *r, const G(aff) *a, const uint64_t *s) {
    G(jac) acc;
    G(set_inf)(&acc);
    for (int i = 255; i >= 0; i--) {
        G(dbl)(&acc, &acc);
        if (scalar_bit(s, i)) G(madd)(&acc, &acc, a);
    }
    *r = acc;
}

static int G(on_curve)(const G(aff) *a) {
    if (a->inf) return 1;
    uint64_t lhs[K], rhs[K], b[K];
    memcpy(b, B_CONST, 8 * K);
    F(mul)(a->y, a->y, lhs);
    F(mul)(a->x, a->x, rhs);
    F(mul)(rhs, a->x, rhs);
    F(add)(rhs, b, rhs);
    return F(eq)(lhs, rhs);
}

/* ---- exported: arrays of xy-LE points ---- */

/* The index of the first of n points that is not canonical (a coordinate >= q), not on the
 * curve, or (with `subgroup`) not of order dividing r; -1 when all are good. */
int64_t G(check)(const uint64_t *xy, int64_t n, int subgroup) {
    for (int64_t i = 0; i < n; i++) {
        const uint64_t *p = xy + 2 * K * i;
        if (!canonical(p, 2 * K)) return i;
        G(aff) a;
        G(load)(p, &a);
        if (!G(on_curve)(&a)) return i;
        if (subgroup && !a.inf) {
            G(jac) t;
            G(scalar_mul)(&t, &a, R_SCALAR);
            if (!G(is_inf)(&t)) return i;
        }
    }
    return -1;
}

void G(add_points)(const uint64_t *a, const uint64_t *b, uint64_t *out) {
    G(aff) pa, pb;
    G(jac) r;
    G(load)(a, &pa);
    G(load)(b, &pb);
    G(from_aff)(&r, &pa);
    G(madd)(&r, &r, &pb);
    G(store)(&r, out);
}

void G(mul_point)(const uint64_t *a, const uint64_t *s, uint64_t *out) {
    G(aff) pa;
    G(jac) r;
    G(load)(a, &pa);
    G(scalar_mul)(&r, &pa, s);
    G(store)(&r, out);
}

/* sum_i s_i * P_i over n points (Pippenger, unsigned windows of c bits). Returns -1 when
 * out of memory, else 0. The points are not checked (the caller's tables are). */
int G(msm)(const uint64_t *xy, const uint64_t *scalars, int64_t n, uint64_t *out) {
    G(jac) total;
    G(set_inf)(&total);
    if (n <= 0) { G(store)(&total, out); return 0; }
    int log_n = 0;
    while ((1ll << (log_n + 1)) <= n) log_n++;
    int c = log_n < 4 ? 2 : (log_n * 7) / 10 + 2;
    if (c > 16) c = 16;
    int64_t nb = (1ll << c) - 1;
    G(aff) *pts = malloc(sizeof(G(aff)) * n);
    G(jac) *buckets = malloc(sizeof(G(jac)) * nb);
    if (!pts || !buckets) { free(pts); free(buckets); return -1; }
    for (int64_t i = 0; i < n; i++) G(load)(xy + 2 * K * i, &pts[i]);
    int windows = (256 + c - 1) / c;
    for (int w = windows - 1; w >= 0; w--) {
        for (int k = 0; k < c; k++) G(dbl)(&total, &total);
        for (int64_t b = 0; b < nb; b++) G(set_inf)(&buckets[b]);
        int lo = w * c, width = 256 - lo < c ? 256 - lo : c;
        for (int64_t i = 0; i < n; i++) {
            uint32_t d = scalar_window(scalars + 4 * i, lo, width);
            if (d) G(madd)(&buckets[d - 1], &buckets[d - 1], &pts[i]);
        }
        G(jac) running, sum;
        G(set_inf)(&running);
        G(set_inf)(&sum);
        for (int64_t b = nb - 1; b >= 0; b--) { /* sum_b (b + 1) * bucket[b] */
            G(add)(&running, &running, &buckets[b]);
            G(add)(&sum, &sum, &running);
        }
        G(add)(&total, &total, &sum);
    }
    free(pts);
    free(buckets);
    G(store)(&total, out);
    return 0;
}

/* out[i] = s_i * P for one point P and n scalars: a table of d * 2^(8w) * P (32 windows of
 * 256), then 32 mixed additions a scalar, and one batched inversion for the n results.
 * Returns -1 when out of memory, else 0. */
int G(multiples)(const uint64_t *base, const uint64_t *scalars, int64_t n, uint64_t *out) {
    enum { WINDOWS = 32, DIGITS = 256 };
    G(aff) *table = malloc(sizeof(G(aff)) * WINDOWS * DIGITS);
    G(jac) *tmp = malloc(sizeof(G(jac)) * (n > WINDOWS * DIGITS ? n : WINDOWS * DIGITS));
    uint64_t (*acc)[K] = malloc(8 * K * (n > WINDOWS * DIGITS ? n : WINDOWS * DIGITS));
    if (!table || !tmp || !acc) { free(table); free(tmp); free(acc); return -1; }
    G(aff) p;
    G(load)(base, &p);
    G(jac) step; /* 2^(8w) * P */
    G(from_aff)(&step, &p);
    for (int w = 0; w < WINDOWS; w++) {
        G(set_inf)(&tmp[w * DIGITS]);
        for (int d = 1; d < DIGITS; d++) G(add)(&tmp[w * DIGITS + d], &tmp[w * DIGITS + d - 1], &step);
        for (int k = 0; k < 8; k++) G(dbl)(&step, &step);
    }
    /* the table to affine: one inversion for all (Montgomery's trick over the non-zero Z) */
    int64_t m = WINDOWS * DIGITS;
    for (int round = 0; round < 2; round++) {
        int64_t count = round == 0 ? m : n;
        if (round == 1) {
            for (int64_t i = 0; i < n; i++) {
                G(set_inf)(&tmp[i]);
                for (int w = 0; w < WINDOWS; w++) {
                    uint32_t d = scalar_window(scalars + 4 * i, 8 * w, 8);
                    if (d) G(madd)(&tmp[i], &tmp[i], &table[w * DIGITS + d]);
                }
            }
        }
        uint64_t run[K], inv[K], t[K];
        F(one)(run);
        for (int64_t i = 0; i < count; i++) {
            memcpy(acc[i], run, 8 * K);
            if (!G(is_inf)(&tmp[i])) F(mul)(run, tmp[i].z, run);
        }
        F(inv)(run, inv);
        for (int64_t i = count - 1; i >= 0; i--) {
            if (G(is_inf)(&tmp[i])) {
                if (round == 0) table[i].inf = 1;
                else memset(out + 2 * K * i, 0, 16 * K);
                continue;
            }
            uint64_t zi[K], zi2[K], x[K], y[K];
            F(mul)(acc[i], inv, zi);
            F(mul)(inv, tmp[i].z, inv);
            F(mul)(zi, zi, zi2);
            F(mul)(tmp[i].x, zi2, x);
            F(mul)(tmp[i].y, zi2, t);
            F(mul)(t, zi, y);
            if (round == 0) {
                table[i].inf = 0;
                memcpy(table[i].x, x, 8 * K);
                memcpy(table[i].y, y, 8 * K);
            } else {
                from_mont(x, out + 2 * K * i, K);
                from_mont(y, out + 2 * K * i + K, K);
            }
        }
    }
    free(table);
    free(tmp);
    free(acc);
    return 0;
}

#endif /* GROUP_PASS */
