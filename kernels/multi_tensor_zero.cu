// Zero many contiguous tensors of any sizes and dtypes in one launch.
//
// Like PyTorch's multi_tensor_apply, every tensor is cut into chunks and each block zeroes one
// chunk; a block table maps block -> (tensor, chunk). Unlike PyTorch, which passes its tables
// as kernel arguments (4 KiB of argument space: at most 110 tensors and 320 blocks per launch,
// so many launches for a large model), our table lives in device memory: one launch takes every
// tensor, whatever their number. The host builds the table once per list of tensors and caches
// it, so repeated zero_grad calls upload nothing.
//
// Zero is all-zero bytes for every dtype (+0.0 for floats), so sizes and chunks are in bytes and
// one kernel serves all dtypes. Chunks are multiples of 16 bytes from the tensor start, but a
// tensor (a view into a larger buffer) may start anywhere: each block writes single bytes up to
// the first 16-byte boundary, then 16-byte vectors, then a byte tail.
//
// Table (int64 words in device memory), T tensors, B = gridDim.x blocks:
//   ptrs[T]            tensor base addresses
//   sizes[T]           tensor sizes in bytes
//   block_tensor[B]    which tensor block b zeroes
//   block_chunk[B]     which chunk of that tensor: bytes [chunk * chunk_bytes, +chunk_bytes)
// Empty tensors have no chunks and so no blocks.

// 16 bytes stored as one vector instruction (st.global.v4). Our own type rather than CUDA's
// uint4, so the file needs no CUDA header under NVRTC.
struct alignas(16) Bytes16 {
    unsigned int x, y, z, w;
};

extern "C" __global__ void multi_tensor_zero(const long long* __restrict__ table,
                                             long long num_tensors, long long chunk_bytes) {
    const long long* ptrs = table;
    const long long* sizes = table + num_tensors;
    const long long* block_tensor = table + 2 * num_tensors;
    const long long* block_chunk = block_tensor + gridDim.x;

    const long long t = block_tensor[blockIdx.x];
    const long long begin = block_chunk[blockIdx.x] * chunk_bytes;
    const long long stop = begin + chunk_bytes < sizes[t] ? begin + chunk_bytes : sizes[t];
    const long long n = stop - begin;
    unsigned char* p = (unsigned char*)ptrs[t] + begin;

    long long head = (long long)((16 - ((unsigned long long)p & 15)) & 15);
    if (head > n) head = n;
    const long long vectors = (n - head) / 16;
    const long long tail = head + vectors * 16;

    for (long long i = threadIdx.x; i < head; i += blockDim.x) p[i] = 0;
    const Bytes16 zero = {0u, 0u, 0u, 0u};
    Bytes16* body = (Bytes16*)(p + head);
    for (long long i = threadIdx.x; i < vectors; i += blockDim.x) body[i] = zero;
    for (long long i = tail + threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
}
