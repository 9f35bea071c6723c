// Fused `grad += incoming` with dtype conversion, for contiguous arrays of the same size:
// grad and incoming each float16, float32 or float64 (nine kernels).
//
// Semantics are those of NumPy's `np.add(grad, incoming, out=grad, casting="unsafe")` and of
// PyTorch's `grad.add_(incoming)`: the sum is computed in the promoted type (float16 math is
// done in float32, as both libraries do), then rounded once to grad's dtype.
//
// float16 is carried as raw bits and converted with PTX `cvt` instructions, so the file needs no
// cuda_fp16.h (which NVRTC does not always find). Names are `extern "C"` wrappers around one
// template: accumulate_grad_<grad dtype>_<incoming dtype>.

struct f16 {
    unsigned short bits;
};

// The #else branches (here and in Narrow<f16>) exist only for the CPU test emulator
// (tests/cuda_emulator), which compiles this file as host C++ with g++: the same IEEE
// conversions with GCC's _Float16, each a single round-to-nearest-even. nvcc -ptx and NVRTC
// define __CUDA_ARCH__, so the GPU always takes the PTX path.
__device__ __forceinline__ float widen(f16 h) {
    float f;
#ifdef __CUDA_ARCH__
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
#else
    _Float16 x;
    __builtin_memcpy(&x, &h.bits, 2);
    f = (float)x;
#endif
    return f;
}
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }

// The type the sum is computed in: double if either side is double, else float.
template <typename A, typename B>
struct Opmath {
    typedef float type;
};
template <typename B>
struct Opmath<double, B> {
    typedef double type;
};
template <typename A>
struct Opmath<A, double> {
    typedef double type;
};
template <>
struct Opmath<double, double> {
    typedef double type;
};

// Round-to-nearest-even conversion of the sum to grad's storage type (one rounding).
template <typename T>
struct Narrow;
template <>
struct Narrow<f16> {
    static __device__ __forceinline__ f16 from(float x) {
        f16 h;
#ifdef __CUDA_ARCH__
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
#else
        const _Float16 y = (_Float16)x;  // host branch for the emulator (see widen)
        __builtin_memcpy(&h.bits, &y, 2);
#endif
        return h;
    }
    static __device__ __forceinline__ f16 from(double x) {
        f16 h;
#ifdef __CUDA_ARCH__
        asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.bits) : "d"(x));
#else
        const _Float16 y = (_Float16)x;  // one rounding (libgcc __truncdfhf2), not via float
        __builtin_memcpy(&h.bits, &y, 2);
#endif
        return h;
    }
};
template <>
struct Narrow<float> {
    static __device__ __forceinline__ float from(float x) { return x; }
    static __device__ __forceinline__ float from(double x) { return (float)x; }
};
template <>
struct Narrow<double> {
    static __device__ __forceinline__ double from(double x) { return x; }
};

template <typename G, typename I>
__device__ void accumulate_grad(G* __restrict__ grad, const I* __restrict__ incoming,
                                long long n) {
    typedef typename Opmath<G, I>::type C;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const C sum = (C)widen(grad[i]) + (C)widen(incoming[i]);
        grad[i] = Narrow<G>::from(sum);
    }
}

#define DEFINE_ACCUMULATE(GNAME, G, INAME, I)                                                    \
    extern "C" __global__ void accumulate_grad_##GNAME##_##INAME(G* grad, const I* incoming,     \
                                                                 long long n) {                  \
        accumulate_grad<G, I>(grad, incoming, n);                                                \
    }

DEFINE_ACCUMULATE(float16, f16, float16, f16)
DEFINE_ACCUMULATE(float16, f16, float32, float)
DEFINE_ACCUMULATE(float16, f16, float64, double)
DEFINE_ACCUMULATE(float32, float, float16, f16)
DEFINE_ACCUMULATE(float32, float, float32, float)
DEFINE_ACCUMULATE(float32, float, float64, double)
DEFINE_ACCUMULATE(float64, double, float16, f16)
DEFINE_ACCUMULATE(float64, double, float32, float)
DEFINE_ACCUMULATE(float64, double, float64, double)
