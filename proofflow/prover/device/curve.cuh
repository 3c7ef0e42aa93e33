// Points of a curve's G1 (over Fq) and G2 (over Fq2) in XYZZ coordinates
// (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), one template over the coordinate field F for both:
// both groups have a = 0 (on BLS12-381 y^2 = x^3 + 4 and y^2 = x^3 + 4(1 + u); the
// descriptors know no other form) and the formulas never read b. The mixed addition costs
// 8M + 2S and needs no inversion. Affine points in memory are x || y, 2 * F::U64 u64 limbs
// (BLS12-381: G1 12, G2 24), (0, 0) standing for infinity (it is on neither curve while
// b != 0); XYZZ points are x || y || zz || zzz, 4 * F::U64 limbs (G1 24, G2 48).
#ifndef PROOFFLOW_CURVE_CUH
#define PROOFFLOW_CURVE_CUH

#include "fq2.cuh"

// ---- the field interface of the templates: one overload set per field ----
PF_INLINE bool f_is_zero(const fq_t& a) { return a.is_zero(); }
PF_INLINE fq_t f_add(const fq_t& a, const fq_t& b) { return a + b; }
PF_INLINE fq_t f_sub(const fq_t& a, const fq_t& b) { return a - b; }
PF_INLINE fq_t f_mul(const fq_t& a, const fq_t& b) { return fq_mul(a, b); }
PF_INLINE fq_t f_sqr(const fq_t& a) { return fq_sqr(a); }
PF_INLINE fq_t f_neg(const fq_t& a) { return -a; }
PF_INLINE fq_t f_inv(const fq_t& a) { return fq_inv(a); }
PF_INLINE fq_t f_to_mont(const fq_t& a) { return fq_to_mont(a); }
PF_INLINE fq_t f_from_mont(const fq_t& a) { return a.from_mont(); }
PF_INLINE void f_store(u64* v, const fq_t& a) { fq_store(v, a); }

PF_INLINE bool f_is_zero(const fq2_t& a) { return fq2_is_zero(a); }
PF_INLINE fq2_t f_add(const fq2_t& a, const fq2_t& b) { return fq2_add(a, b); }
PF_INLINE fq2_t f_sub(const fq2_t& a, const fq2_t& b) { return fq2_sub(a, b); }
PF_INLINE fq2_t f_mul(const fq2_t& a, const fq2_t& b) { return fq2_mul(a, b); }
PF_INLINE fq2_t f_sqr(const fq2_t& a) { return fq2_sqr(a); }
PF_INLINE fq2_t f_neg(const fq2_t& a) { return fq2_neg(a); }
PF_INLINE fq2_t f_inv(const fq2_t& a) { return fq2_inv(a); }
PF_INLINE fq2_t f_to_mont(const fq2_t& a) { return fq2_to_mont(a); }
PF_INLINE fq2_t f_from_mont(const fq2_t& a) { return fq2_from_mont(a); }
PF_INLINE void f_store(u64* v, const fq2_t& a) { fq2_store(v, a); }

template <class F> PF_INLINE F f_zero();
template <class F> PF_INLINE F f_one();
template <class F> PF_INLINE F f_load(const u64* v);
template <class F> PF_INLINE F f_from4(const uint4* v);  // an element from F::U64 / 2 uint4

template <> PF_INLINE fq_t f_zero<fq_t>() { return fq_t{}; }
template <> PF_INLINE fq_t f_one<fq_t>() { return fq_one(); }
template <> PF_INLINE fq_t f_load<fq_t>(const u64* v) { return fq_load(v); }
template <> PF_INLINE fq_t f_from4<fq_t>(const uint4* v) { return fq_from(PF_FQ_UINT4S(v)); }

template <> PF_INLINE fq2_t f_zero<fq2_t>() { return fq2_t{f_zero<fq_t>(), f_zero<fq_t>()}; }
template <> PF_INLINE fq2_t f_one<fq2_t>() { return fq2_one(); }
template <> PF_INLINE fq2_t f_load<fq2_t>(const u64* v) { return fq2_load(v); }
template <> PF_INLINE fq2_t f_from4<fq2_t>(const uint4* v) {
    const uint4* c1 = v + fq_t::U64 / 2;
    return fq2_t{fq_from(PF_FQ_UINT4S(v)), fq_from(PF_FQ_UINT4S(c1))};
}

// ---- XYZZ arithmetic (formulas of Bernstein-Lange's database, a = 0) ----

template <class F> struct xyzz_t { F x, y, zz, zzz; };

template <class F> PF_INLINE xyzz_t<F> xyzz_inf() {
    xyzz_t<F> p;
    p.x = p.y = p.zz = p.zzz = f_zero<F>();
    return p;
}

template <class F> PF_INLINE bool xyzz_is_inf(const xyzz_t<F>& p) { return f_is_zero(p.zz); }

// 2 * (x, y) for an affine point (mdbl-2008-s-1)
template <class F> PF_HD xyzz_t<F> affine_dbl(const F& x, const F& y) {
    F u = f_add(y, y), v = f_sqr(u), w = f_mul(u, v), s = f_mul(x, v);
    F x2 = f_sqr(x), m = f_add(f_add(x2, x2), x2);
    xyzz_t<F> r;
    r.x = f_sub(f_sqr(m), f_add(s, s));
    r.y = f_sub(f_mul(m, f_sub(s, r.x)), f_mul(w, y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// 2 * p (dbl-2008-s-1)
template <class F> PF_HD xyzz_t<F> xyzz_dbl_formula(const xyzz_t<F>& p) {
    if (xyzz_is_inf(p)) return p;
    F u = f_add(p.y, p.y), v = f_sqr(u), w = f_mul(u, v), s = f_mul(p.x, v);
    F x2 = f_sqr(p.x), m = f_add(f_add(x2, x2), x2);
    xyzz_t<F> r;
    r.x = f_sub(f_sqr(m), f_add(s, s));
    r.y = f_sub(f_mul(m, f_sub(s, r.x)), f_mul(w, p.y));
    r.zz = f_mul(v, p.zz);
    r.zzz = f_mul(w, p.zzz);
    return r;
}

// p + (x, y) for an affine point, (x, y) not infinity (madd-2008-s)
template <class F> PF_HD xyzz_t<F> xyzz_add_affine(const xyzz_t<F>& p, const F& x, const F& y) {
    if (xyzz_is_inf(p)) {
        xyzz_t<F> r;
        r.x = x;
        r.y = y;
        r.zz = r.zzz = f_one<F>();
        return r;
    }
    F u2 = f_mul(x, p.zz), s2 = f_mul(y, p.zzz);
    F pp_ = f_sub(u2, p.x), r_ = f_sub(s2, p.y);
    if (f_is_zero(pp_)) return f_is_zero(r_) ? affine_dbl(x, y) : xyzz_inf<F>();
    F pp = f_sqr(pp_), ppp = f_mul(pp_, pp), q = f_mul(p.x, pp);
    xyzz_t<F> o;
    o.x = f_sub(f_sub(f_sqr(r_), ppp), f_add(q, q));
    o.y = f_sub(f_mul(r_, f_sub(q, o.x)), f_mul(p.y, ppp));
    o.zz = f_mul(p.zz, pp);
    o.zzz = f_mul(p.zzz, ppp);
    return o;
}

// p + q (add-2008-s)
template <class F> PF_HD xyzz_t<F> xyzz_add_formula(const xyzz_t<F>& p, const xyzz_t<F>& q) {
    if (xyzz_is_inf(p)) return q;
    if (xyzz_is_inf(q)) return p;
    F u1 = f_mul(p.x, q.zz), u2 = f_mul(q.x, p.zz);
    F s1 = f_mul(p.y, q.zzz), s2 = f_mul(q.y, p.zzz);
    F pp_ = f_sub(u2, u1), r_ = f_sub(s2, s1);
    if (f_is_zero(pp_)) return f_is_zero(r_) ? xyzz_dbl_formula(p) : xyzz_inf<F>();
    F pp = f_sqr(pp_), ppp = f_mul(pp_, pp), qq = f_mul(u1, pp);
    xyzz_t<F> o;
    o.x = f_sub(f_sub(f_sqr(r_), ppp), f_add(qq, qq));
    o.y = f_sub(f_mul(r_, f_sub(qq, o.x)), f_mul(s1, ppp));
    o.zz = f_mul(f_mul(p.zz, q.zz), pp);
    o.zzz = f_mul(f_mul(p.zzz, q.zzz), ppp);
    return o;
}

// The formulas are inlined into each caller for G1, as the hot loops want. G2's are three
// times larger: inlined at every call site of the reduction they made a 365k-instruction
// kernel that took minutes to compile, so they are functions there, compiled once.
template <class F> PF_INLINE xyzz_t<F> xyzz_dbl(const xyzz_t<F>& p) { return xyzz_dbl_formula(p); }
template <class F> PF_INLINE xyzz_t<F> xyzz_add(const xyzz_t<F>& p, const xyzz_t<F>& q) {
    return xyzz_add_formula(p, q);
}
template <> PF_NOINLINE PF_HD xyzz_t<fq2_t> xyzz_dbl<fq2_t>(const xyzz_t<fq2_t>& p) { return xyzz_dbl_formula(p); }
template <> PF_NOINLINE PF_HD xyzz_t<fq2_t> xyzz_add<fq2_t>(const xyzz_t<fq2_t>& p, const xyzz_t<fq2_t>& q) {
    return xyzz_add_formula(p, q);
}

// ---- points in memory ----

template <class F> PF_INLINE void xyzz_store(u64* v, const xyzz_t<F>& p) {
    f_store(v, p.x); f_store(v + F::U64, p.y); f_store(v + 2 * F::U64, p.zz); f_store(v + 3 * F::U64, p.zzz);
}

template <class F> PF_INLINE xyzz_t<F> xyzz_load(const u64* v) {
    xyzz_t<F> p;
    p.x = f_load<F>(v); p.y = f_load<F>(v + F::U64); p.zz = f_load<F>(v + 2 * F::U64);
    p.zzz = f_load<F>(v + 3 * F::U64);
    return p;
}

// XYZZ points j = lo .. hi - 1 made affine, (x, y) = (X / ZZ, Y / ZZZ), with one inversion
// for them all (Montgomery's trick) instead of one a point: put(j, p) in order of j keeps
// point j in tmp (4 coordinates) and the running product of the zz * zzz before it in
// dst[j]'s x; finish inverts the product once and walks back, writing each point to dst
// (2 coordinates), out of Montgomery form if asked; infinity gives (0, 0), the encoding of
// prover/points.py. msm.cu's precomputed copies and fixed_base.cu's setup use it.
template <class F> struct affine_batch {
    u64* dst;
    u64* tmp;
    F run;

    PF_INLINE affine_batch(u64* dst_, u64* tmp_) : dst(dst_), tmp(tmp_), run(f_one<F>()) {}
    PF_INLINE void put(u64 j, const xyzz_t<F>& p) {
        xyzz_store(tmp + 4ull * F::U64 * j, p);
        f_store(dst + 2ull * F::U64 * j, run);
        if (!xyzz_is_inf(p)) run = f_mul(run, f_mul(p.zz, p.zzz));
    }
    PF_INLINE void finish(u64 lo, u64 hi, bool from_mont) {
        F inv = f_inv(run);  // 1 / (the product of every zz * zzz)
        for (u64 j = hi; j-- > lo;) {
            xyzz_t<F> p = xyzz_load<F>(tmp + 4ull * F::U64 * j);
            u64* o = dst + 2ull * F::U64 * j;
            if (xyzz_is_inf(p)) {
                f_store(o, f_zero<F>());
                f_store(o + F::U64, f_zero<F>());
                continue;
            }
            F zz_zzz = f_mul(p.zz, p.zzz), i = f_mul(inv, f_load<F>(o));  // i = 1 / (zz * zzz)
            inv = f_mul(inv, zz_zzz);  // now 1 / (the product before point j)
            F x = f_mul(p.x, f_mul(i, p.zzz)), y = f_mul(p.y, f_mul(i, p.zz));
            f_store(o, from_mont ? f_from_mont(x) : x);
            f_store(o + F::U64, from_mont ? f_from_mont(y) : y);
        }
    }
};

// Affine point i of a table, read-only, as F::U64 uint4 loads (x: the first half).
template <class F> PF_INLINE void affine_fetch(const u64* pts, u64 i, uint4* v) {
    const uint4* p = reinterpret_cast<const uint4*>(pts) + (u64)F::U64 * i;
#pragma unroll
    for (int t = 0; t < F::U64; t++) v[t] = pf_ldg(p + t);
}

// The points a thread adds, in order: those of entries lo, lo + step, ... below hi (each
// entry a row of the table, its top bit the sign of its digit), negated where the sign is
// set. A G1 point (24 registers) is loaded while the one before is added, which hides the
// load. A G2 point takes 48, which the prefetch took from the G2 addition (it spilled:
// docs/gpu-kernels.md), and that addition is ~3x as long, so G2 loads each point when due.
// With called products (PF_FIELD_CALL) G1 does too: the 24 registers held across the calls
// were saved and restored around each of them (G1 accumulation spills 412/764 -> 148/492 bytes).
template <class F> struct entry_reader {
#ifdef PF_FIELD_CALL
    static constexpr bool prefetch = false;
#else
    static constexpr bool prefetch = F::U64 == fq_t::U64;
#endif
    const u64* pts;
    const u32* entries;
    u64 hi, step;
    u32 e;
    uint4 v[F::U64];

    PF_INLINE entry_reader(const u64* pts_, const u32* entries_, u64 lo, u64 hi_, u64 step_ = 1)
        : pts(pts_), entries(entries_), hi(hi_), step(step_) {
        if (prefetch && lo < hi) fetch(lo);
    }
    PF_INLINE void fetch(u64 j) {
        e = entries[j];
        affine_fetch<F>(pts, e & 0x7fffffffu, v);
    }
    // Entry j's point; (0, 0) is infinity.
    PF_INLINE void read(u64 j, F& x, F& y) {
        if (!prefetch) fetch(j);
        x = f_from4<F>(v);
        y = f_from4<F>(v + F::U64 / 2);
        bool neg = e >> 31;
        if (prefetch && j + step < hi) fetch(j + step);
        if (neg) y = f_neg(y);
    }
};

#endif  // PROOFFLOW_CURVE_CUH
