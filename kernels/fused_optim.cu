// Fused multi-tensor optimizer steps: one launch updates every tensor of a parameter group
// (of one dtype). Formulas are exactly those of DESIGN.md section 3, step for step in the same
// order as the NumPy reference (microtorch/backend/kernel_reference.py). The loader compiles this
// file with --fmad=false so that no multiply-add is contracted into an FMA: every operation is
// then rounded as in NumPy (division and sqrt are IEEE-exact by default), and the two agree.
//
// Math is done in the parameter's dtype T (float or double); the host passes every
// hyperparameter already cast to T, with derived scalars (1 - beta, lr / bc1, sqrt(bc2),
// 1 - lr * weight_decay) computed once in double on the host, as PyTorch does.
//
// Tensor table (int64 words in device memory), L lists of T tensors, B = gridDim.x blocks, as in
// multi_tensor_zero.cu but with sizes and chunks in elements:
//   ptrs[L][T]         list-major: ptrs[l * T + t] is tensor t of list l (0 for an absent list)
//   sizes[T]           elements per tensor (the same in every list)
//   block_tensor[B]    which tensor block b updates
//   block_chunk[B]     which chunk: elements [chunk * chunk_size, +chunk_size)
// The table is in device memory, so one launch takes any number of tensors (no 110-tensor
// kernel-argument limit as in PyTorch's multi_tensor_apply).

// Option bits (kept in sync with kernels.py / kernel_reference.py).
#define SGD_WEIGHT_DECAY 1
#define SGD_MOMENTUM 2
#define SGD_NESTEROV 4
#define SGD_MAXIMIZE 8
#define SGD_FIRST_STEP 16  // momentum buffer := g (a clone) instead of the update rule

#define ADAM_WEIGHT_DECAY 1  // L2: g = g + wd * p (Adam)
#define ADAM_DECOUPLED 2     // p = p * (1 - lr * wd) before the moments (AdamW)
#define ADAM_AMSGRAD 4
#define ADAM_MAXIMIZE 8

__device__ __forceinline__ float sqrt_t(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_t(double x) { return sqrt(x); }

// The (tensor, element range) that this block owns.
struct Chunk {
    long long tensor, begin, stop;
};

__device__ __forceinline__ Chunk my_chunk(const long long* table, long long num_tensors,
                                          int num_lists, long long chunk_size) {
    const long long* sizes = table + num_lists * num_tensors;
    const long long* block_tensor = sizes + num_tensors;
    const long long* block_chunk = block_tensor + gridDim.x;
    Chunk c;
    c.tensor = block_tensor[blockIdx.x];
    c.begin = block_chunk[blockIdx.x] * chunk_size;
    const long long end = c.begin + chunk_size;
    c.stop = end < sizes[c.tensor] ? end : sizes[c.tensor];
    return c;
}

template <typename T>
__device__ __forceinline__ T* tensor_ptr(const long long* table, long long num_tensors, int list,
                                         long long tensor) {
    return (T*)table[list * num_tensors + tensor];
}

// SGD: lists params, grads, momentum_buffers.
//   g = -grad if maximize else grad
//   if wd: g = g + wd * p
//   if momentum: buf = g (first step) else buf = momentum * buf + (1 - dampening) * g
//                g = g + momentum * buf if nesterov else buf
//   p = p - lr * g
template <typename T>
__device__ void sgd_step(const long long* __restrict__ table, long long num_tensors,
                         long long chunk_size, T lr, T momentum, T one_minus_dampening,
                         T weight_decay, int flags) {
    const Chunk c = my_chunk(table, num_tensors, 3, chunk_size);
    T* param = tensor_ptr<T>(table, num_tensors, 0, c.tensor);
    const T* grad = tensor_ptr<T>(table, num_tensors, 1, c.tensor);
    T* buf = tensor_ptr<T>(table, num_tensors, 2, c.tensor);
    for (long long i = c.begin + threadIdx.x; i < c.stop; i += blockDim.x) {
        const T p = param[i];
        T g = grad[i];
        if (flags & SGD_MAXIMIZE) g = -g;
        if (flags & SGD_WEIGHT_DECAY) g = weight_decay * p + g;
        if (flags & SGD_MOMENTUM) {
            T b;
            if (flags & SGD_FIRST_STEP) {
                b = g;
            } else {
                b = momentum * buf[i];
                b = b + one_minus_dampening * g;
            }
            buf[i] = b;
            g = (flags & SGD_NESTEROV) ? g + momentum * b : b;
        }
        param[i] = p - lr * g;
    }
}

// Adam / AdamW: lists params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs.
//   g = -grad if maximize else grad
//   Adam: if wd: g = g + wd * p        AdamW: p = p * (1 - lr * wd)
//   m = beta1 * m + (1 - beta1) * g    v = beta2 * v + (1 - beta2) * g^2
//   amsgrad: vmax = max(vmax, v) (NaN propagates, as np.maximum), used in place of v
//   p = p - (lr / bc1) * (m / (sqrt(v) / sqrt(bc2) + eps))
template <typename T>
__device__ void adam_step(const long long* __restrict__ table, long long num_tensors,
                          long long chunk_size, T beta1, T one_minus_beta1, T beta2,
                          T one_minus_beta2, T eps, T weight_decay, T decay_factor, T step_size,
                          T bias_correction2_sqrt, int flags) {
    const Chunk c = my_chunk(table, num_tensors, 5, chunk_size);
    T* param = tensor_ptr<T>(table, num_tensors, 0, c.tensor);
    const T* grad = tensor_ptr<T>(table, num_tensors, 1, c.tensor);
    T* exp_avg = tensor_ptr<T>(table, num_tensors, 2, c.tensor);
    T* exp_avg_sq = tensor_ptr<T>(table, num_tensors, 3, c.tensor);
    T* max_exp_avg_sq = tensor_ptr<T>(table, num_tensors, 4, c.tensor);
    for (long long i = c.begin + threadIdx.x; i < c.stop; i += blockDim.x) {
        T p = param[i];
        T g = grad[i];
        if (flags & ADAM_MAXIMIZE) g = -g;
        if (flags & ADAM_WEIGHT_DECAY) g = weight_decay * p + g;
        if (flags & ADAM_DECOUPLED) p = p * decay_factor;
        const T m = beta1 * exp_avg[i] + one_minus_beta1 * g;
        const T v = beta2 * exp_avg_sq[i] + one_minus_beta2 * (g * g);
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        T v_used = v;
        if (flags & ADAM_AMSGRAD) {
            const T old = max_exp_avg_sq[i];
            v_used = (old != old || old >= v) ? old : v;
            max_exp_avg_sq[i] = v_used;
        }
        const T denom = sqrt_t(v_used) / bias_correction2_sqrt + eps;
        param[i] = p - (m / denom) * step_size;
    }
}

#define DEFINE_OPTIM(SUFFIX, T)                                                                  \
    extern "C" __global__ void fused_sgd_##SUFFIX(const long long* table, long long num_tensors, \
                                                  long long chunk_size, T lr, T momentum,        \
                                                  T one_minus_dampening, T weight_decay,         \
                                                  int flags) {                                   \
        sgd_step<T>(table, num_tensors, chunk_size, lr, momentum, one_minus_dampening,           \
                    weight_decay, flags);                                                        \
    }                                                                                            \
    extern "C" __global__ void fused_adam_##SUFFIX(                                              \
        const long long* table, long long num_tensors, long long chunk_size, T beta1,            \
        T one_minus_beta1, T beta2, T one_minus_beta2, T eps, T weight_decay, T decay_factor,    \
        T step_size, T bias_correction2_sqrt, int flags) {                                       \
        adam_step<T>(table, num_tensors, chunk_size, beta1, one_minus_beta1, beta2,              \
                     one_minus_beta2, eps, weight_decay, decay_factor, step_size,                \
                     bias_correction2_sqrt, flags);                                              \
    }

DEFINE_OPTIM(float32, float)
DEFINE_OPTIM(float64, double)
