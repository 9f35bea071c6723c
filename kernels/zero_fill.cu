// In-place fill of a strided (possibly non-contiguous) array with one value.
//
// The kernels work on bit patterns, one per item size (1, 2, 4, 8, 16 bytes), so one template
// serves every dtype: float16 (__half), float32 and float64 are the 2-, 4- and 8-byte instances,
// and a generic value of any dtype (ints, bool, complex) is just another pattern. The host
// converts the value to the array's dtype with NumPy (the same rounding as `arr[...] = value`)
// and passes its bits, so no half-precision arithmetic (and no cuda_fp16.h) is needed here.
//
// Names are `extern "C"` wrappers around one template: stable names for CuPy's RawModule
// (no name mangling, no name_expressions), and `nvcc -ptx` compiles every instantiation.
//
// Layout: `layout` points to 2*ndim int64 values in device memory: shape[ndim] then
// strides[ndim], strides in elements (may be negative or zero). The host collapses mergeable
// dimensions first, so a dense array arrives as ndim == 1.

#define MAX_DIMS 64  // NumPy's and CuPy's own limit on ndim

struct Bits128 {  // complex128: two 8-byte halves (its alignment in memory is only 8)
    unsigned long long lo, hi;
};

template <typename Word>
__device__ __forceinline__ Word make_word(unsigned long long lo, unsigned long long) {
    return (Word)lo;  // the low bytes on a little-endian GPU
}

template <>
__device__ __forceinline__ Bits128 make_word<Bits128>(unsigned long long lo, unsigned long long hi) {
    Bits128 w;
    w.lo = lo;
    w.hi = hi;
    return w;
}

template <typename Word>
__device__ void fill_strided(Word* __restrict__ data, Word value, long long n, int ndim,
                             const long long* __restrict__ layout) {
    // Every thread needs the whole layout for every element: keep it in shared memory.
    __shared__ long long s_layout[2 * MAX_DIMS];
    for (int k = threadIdx.x; k < 2 * ndim; k += blockDim.x) s_layout[k] = layout[k];
    __syncthreads();
    const long long* shape = s_layout;
    const long long* strides = s_layout + ndim;

    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        // Unravel the C-order index; the outermost dimension needs no modulo (i < n).
        long long rem = i;
        long long offset = 0;
        for (int d = ndim - 1; d > 0; --d) {
            offset += (rem % shape[d]) * strides[d];
            rem /= shape[d];
        }
        offset += rem * strides[0];
        data[offset] = value;
    }
}

#define DEFINE_FILL(NAME, WORD)                                                                  \
    extern "C" __global__ void NAME(WORD* data, unsigned long long lo, unsigned long long hi,     \
                                    long long n, int ndim, const long long* layout) {            \
        fill_strided<WORD>(data, make_word<WORD>(lo, hi), n, ndim, layout);                      \
    }

DEFINE_FILL(fill_strided_1, unsigned char)        // bool, int8, uint8
DEFINE_FILL(fill_strided_2, unsigned short)       // float16, int16
DEFINE_FILL(fill_strided_4, unsigned int)         // float32, int32
DEFINE_FILL(fill_strided_8, unsigned long long)   // float64, int64, complex64
DEFINE_FILL(fill_strided_16, Bits128)             // complex128
