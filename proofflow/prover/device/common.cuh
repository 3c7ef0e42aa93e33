// What every kernel header shares: word types, qualifiers, and the few CUDA builtins the
// field and curve code uses, so that the same headers compile for the GPU (NVRTC, nvcc)
// and for the host (g++: the CPU twin that tests/kernel_twin.cpp builds). On the GPU the
// field arithmetic (mont.cuh) is PTX carry chains; on the host it is the portable C++ on
// 32-bit words below, computing the same values. No host header is included: NVRTC has none.
#ifndef PROOFFLOW_COMMON_CUH
#define PROOFFLOW_COMMON_CUH

typedef unsigned int u32;
typedef unsigned long long u64;

#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define PF_GPU 1  // device code: inline PTX, __ldg
#endif

#ifndef __CUDACC__
// A host compiler: the CUDA qualifiers vanish, uint4 is a plain struct.
#define __host__
#define __device__
#define __forceinline__ inline __attribute__((always_inline))
struct uint4 { u32 x, y, z, w; };
static inline uint4 make_uint4(u32 x, u32 y, u32 z, u32 w) { return uint4{x, y, z, w}; }
#endif

#define PF_HD __host__ __device__
#define PF_INLINE __host__ __device__ __forceinline__
#ifdef __CUDACC__
#define PF_NOINLINE __noinline__
#else
#define PF_NOINLINE __attribute__((noinline))
#endif

// A read-only 16-byte load (through the non-coherent cache on the GPU).
PF_INLINE uint4 pf_ldg(const uint4* p) {
#ifdef PF_GPU
    return __ldg(p);
#else
    return *p;
#endif
}

PF_INLINE int pf_clz(u32 x) {
#ifdef PF_GPU
    return __clz(x);
#else
    return x ? __builtin_clz(x) : 32;
#endif
}

PF_INLINE int pf_min(int a, int b) { return a < b ? a : b; }
PF_INLINE int pf_max(int a, int b) { return a > b ? a : b; }

#ifndef PF_GPU
// Portable multiword arithmetic on N little-endian 32-bit words (the host build of
// mont.cuh). Carries go through 64-bit sums.
template <int N>
inline u32 mp_add(u32* r, const u32* a, const u32* b) {  // r = a + b, returns the carry
    u64 c = 0;
    for (int i = 0; i < N; i++) {
        c += (u64)a[i] + b[i];
        r[i] = (u32)c;
        c >>= 32;
    }
    return (u32)c;
}

template <int N>
inline u32 mp_sub(u32* r, const u32* a, const u32* b) {  // r = a - b, returns the borrow
    u64 borrow = 0;
    for (int i = 0; i < N; i++) {
        u64 d = (u64)a[i] - b[i] - borrow;
        r[i] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    return (u32)borrow;
}

// t < 2m  ->  t mod m
template <int N>
inline void mp_reduce_once(u32* r, const u32* t, const u32* m) {
    u32 d[N];
    u32 borrow = mp_sub<N>(d, t, m);
    for (int i = 0; i < N; i++) r[i] = borrow ? t[i] : d[i];
}

// (a + b) mod m and (a - b) mod m for a, b < m < 2^(32N - 1)
template <int N>
inline void mp_add_mod(u32* r, const u32* a, const u32* b, const u32* m) {
    u32 t[N];
    mp_add<N>(t, a, b);
    mp_reduce_once<N>(r, t, m);
}

template <int N>
inline void mp_sub_mod(u32* r, const u32* a, const u32* b, const u32* m) {
    u32 t[N];
    if (mp_sub<N>(t, a, b)) mp_add<N>(t, t, m);
    for (int i = 0; i < N; i++) r[i] = t[i];
}

// Montgomery product a * b / 2^(32N) mod m, CIOS; inv = -m^-1 mod 2^32, m < 2^(32N - 1).
template <int N>
inline void mp_mont_mul(u32* r, const u32* a, const u32* b, const u32* m, u32 inv) {
    u32 t[N + 2] = {0};
    for (int i = 0; i < N; i++) {
        u64 c = 0;
        for (int j = 0; j < N; j++) {
            c += (u64)a[j] * b[i] + t[j];
            t[j] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N] = (u32)c;
        t[N + 1] = (u32)(c >> 32);
        u32 q = t[0] * inv;
        c = ((u64)q * m[0] + t[0]) >> 32;
        for (int j = 1; j < N; j++) {
            c += (u64)q * m[j] + t[j];
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N - 1] = (u32)c;
        t[N] = t[N + 1] + (u32)(c >> 32);
    }
    mp_reduce_once<N>(r, t, m);  // t < 2m < 2^(32N): t[N] is 0 here
}
#endif

#endif  // PROOFFLOW_COMMON_CUH
