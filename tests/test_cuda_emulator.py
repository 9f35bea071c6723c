"""The CPU emulator of the CUDA kernels (tests/cuda_emulator) is right.

First on small kernels of its own: ``__syncthreads()`` is a real barrier, divergence is an
error, the built-ins and scalar arguments arrive as on a GPU, and arguments that do not match the
C++ parameters are rejected. Then on the real kernels of ``kernels/*.cu``, launched directly
with hand-built tables, against NumPy and ``kernel_reference``, bit for bit.
"""

from __future__ import annotations

import itertools

import cuda_emulator as emulator
import numpy as np
import pytest

from microtorch.backend import kernel_reference as ref

SOURCE = r"""
// Block reversal through shared memory: thread t reads what thread blockDim - 1 - t wrote.
extern "C" __global__ void reverse_blocks(float* out, const float* in) {
    __shared__ float buf[1024];
    const long long base = (long long)blockIdx.x * blockDim.x;
    buf[threadIdx.x] = in[base + threadIdx.x];
    __syncthreads();
    out[base + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

// The same without the barrier: early threads read slots nobody has written yet.
extern "C" __global__ void reverse_blocks_unsynced(float* out, const float* in) {
    __shared__ float buf[1024];
    const long long base = (long long)blockIdx.x * blockDim.x;
    buf[threadIdx.x] = in[base + threadIdx.x];
    out[base + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

// Inclusive prefix sums per block (Hillis-Steele): two barriers per step, in a loop.
extern "C" __global__ void block_scan(long long* data) {
    __shared__ long long s[1024];
    const unsigned t = threadIdx.x;
    const long long base = (long long)blockIdx.x * blockDim.x;
    s[t] = data[base + t];
    __syncthreads();
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        const long long add = t >= offset ? s[t - offset] : 0;
        __syncthreads();
        s[t] += add;
        __syncthreads();
    }
    data[base + t] = s[t];
}

// Threads from `limit` on return before the barrier the others wait at.
extern "C" __global__ void divergent(int* out, int limit) {
    if ((int)threadIdx.x >= limit) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

// Odd and even threads wait at two different __syncthreads() calls.
extern "C" __global__ void split_barrier(int* out) {
    if (threadIdx.x % 2) {
        __syncthreads();
        out[threadIdx.x] = 1;
    } else {
        __syncthreads();
        out[threadIdx.x] = 2;
    }
}

// Every thread records its built-ins: six words per thread.
extern "C" __global__ void builtins(unsigned* out) {
    unsigned* o = out + 6 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    o[0] = threadIdx.x;
    o[1] = blockIdx.x;
    o[2] = blockDim.x;
    o[3] = gridDim.x;
    o[4] = threadIdx.y + threadIdx.z + blockIdx.y + blockIdx.z;
    o[5] = blockDim.y * blockDim.z * gridDim.y * gridDim.z;
}

// One parameter of each scalar kind.
extern "C" __global__ void scalars(double* out, float f, double d, int i, long long l,
                                   unsigned long long u, short s) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out[0] = f;
        out[1] = d;
        out[2] = i;
        out[3] = (double)l;
        out[4] = (double)u;
        out[5] = s;
    }
}
"""
NAMES = ["reverse_blocks", "reverse_blocks_unsynced", "block_scan", "divergent", "split_barrier",
         "builtins", "scalars"]
# The x86-64 context switch (the default there) and the portable ucontext fibers.
SWITCHES = {"asm": (), "ucontext": ("MTEMU_USE_UCONTEXT",)}


def own_module(switch: str = "asm") -> emulator.Module:
    """The test kernels above, compiled (or a skip without g++)."""
    try:
        return emulator.compile_source("emulator_test.cu", SOURCE, NAMES,
                                       defines=SWITCHES[switch])
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(f"CUDA emulator unavailable: {exc}")


def kernel(filename: str, name: str) -> emulator.Kernel:
    """A real kernel of kernels/<filename> (or a skip without g++)."""
    try:
        return emulator.load(filename).get_function(name)
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(f"CUDA emulator unavailable: {exc}")


def bits(arr: np.ndarray) -> np.ndarray:
    """The array's bit patterns, for bit-exact comparisons (NaN == NaN, -0.0 != 0.0)."""
    return arr.view(f"u{arr.itemsize}") if arr.dtype.kind == "f" else arr


# --------------------------------------------------------------------------- the emulator


@pytest.mark.parametrize("switch", SWITCHES)
@pytest.mark.parametrize("block", [1, 7, 512])
def test_barrier_reverses_blocks_through_shared_memory(switch: str, block: int) -> None:
    module = own_module(switch)
    grid = 3
    data = np.arange(grid * block, dtype=np.float32)
    out = np.zeros_like(data)
    module.get_function("reverse_blocks")((grid,), (block,), (out, data))
    np.testing.assert_array_equal(out, data.reshape(grid, block)[:, ::-1].ravel())

    scan = np.random.default_rng(0).integers(-1000, 1000, size=grid * block)
    expected = np.cumsum(scan.reshape(grid, block), axis=1).ravel()
    module.get_function("block_scan")((grid,), (block,), (scan,))
    np.testing.assert_array_equal(scan, expected)


def test_shared_memory_is_poisoned_per_block() -> None:
    """Without the barrier, thread 0 reads a slot no thread of its block has written: NaN."""
    data = np.arange(2 * 7, dtype=np.float32)
    out = np.zeros_like(data)
    own_module().get_function("reverse_blocks_unsynced")((2,), (7,), (out, data))
    assert np.isnan(out[0]) and np.isnan(out[7])  # block 1 does not see block 0's values
    assert out[6] == data[0]  # the last thread runs after all others wrote


@pytest.mark.parametrize("switch", SWITCHES)
def test_divergent_barrier_is_an_error(switch: str) -> None:
    module = own_module(switch)
    out = np.zeros(8, dtype=np.int32)
    with pytest.raises(RuntimeError, match=r"barrier divergence in block 0: 3 of 8 threads wait"):
        module.get_function("divergent")((2,), (8,), (out, np.int32(3)))
    with pytest.raises(RuntimeError, match=r"different __syncthreads\(\) calls"):
        module.get_function("split_barrier")((1,), (8,), (out,))
    # No thread waits if all return before the barrier; the abandoned fibers are reusable.
    module.get_function("divergent")((2,), (8,), (out, np.int32(0)))
    out[:] = 0
    module.get_function("divergent")((2,), (8,), (out, np.int32(8)))
    assert (out == 1).all()


@pytest.mark.parametrize("grid, block", [(4, 3), ((4,), (3,)), ((4, 1), (3, 1, 1))])
def test_builtins(grid, block) -> None:
    out = np.full((4, 3, 6), 99, dtype=np.uint32)
    own_module().get_function("builtins")(grid, block, (out,))
    blocks, threads = np.meshgrid(np.arange(4), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], threads)
    np.testing.assert_array_equal(out[..., 1], blocks)
    assert (out[..., 2] == 3).all() and (out[..., 3] == 4).all()
    assert (out[..., 4] == 0).all() and (out[..., 5] == 1).all()


def test_scalar_arguments_arrive_with_their_types() -> None:
    out = np.zeros(6)
    args = (out, np.float32(1.1), np.float64(1.1), np.int32(-7), np.int64(-2**40),
            np.uint64(2**63), np.int16(-3))
    own_module().get_function("scalars")(1, 1, args)
    np.testing.assert_array_equal(out, [np.float32(1.1), 1.1, -7, -2**40, 2**63, -3])


def test_arguments_are_checked_against_the_cxx_signature() -> None:
    scalars = own_module().get_function("scalars")
    assert scalars.signature == ("scalars(double*, float, double, int, long long int, "
                                 "long long unsigned int, short int)")
    out = np.zeros(6)
    good = [out, np.float32(1), np.float64(1), np.int32(1), np.int64(1), np.uint64(1),
            np.int16(1)]
    with pytest.raises(TypeError, match=r"takes 7 arguments, scalars\(double\*"):
        scalars(1, 1, tuple(good[:-1]))
    cases = [(1, np.float64(1), r"args\[1\]: expects float \(4-byte floating point\), "
              r"got numpy.float64"),
             (4, np.int32(1), r"args\[4\]: expects long long int \(8-byte integer\), "
              r"got numpy.int32"),
             (3, 1, r"args\[3\]: expects int .*got int: pass a typed NumPy scalar"),
             (2, 1.0, r"args\[2\]: expects double .*got float: pass a typed NumPy scalar"),
             (4, np.float64(1), r"args\[4\].*8-byte integer.*got numpy.float64"),
             (6, np.uint16(1), None),  # signedness is not checked: the same size is enough
             (0, np.float64(1), r"args\[0\]: expects double\* \(pointer\), an array"),
             (1, np.zeros(1, np.float32), r"args\[1\]: expects float .*got an array"),
             (0, None, r"args\[0\].*got NoneType")]
    for index, value, message in cases:
        args = list(good)
        args[index] = value
        if message is None:
            scalars(1, 1, tuple(args))
            continue
        with pytest.raises(TypeError, match=message):
            scalars(1, 1, tuple(args))
    with pytest.raises(TypeError, match="args must be a tuple"):
        scalars(1, 1, out)


@pytest.mark.parametrize("grid, block", [((2, 2), 1), (1, (4, 1, 2)), (0, 1), (1, 1025),
                                         ((1, 1, 1, 1), 1), (1.0, 1)])
def test_launch_shape_is_checked(grid, block) -> None:
    with pytest.raises(ValueError):
        own_module().get_function("builtins")(grid, block, (np.zeros(64, np.uint32),))


def test_lookup_and_compile_errors() -> None:
    module = own_module()
    with pytest.raises(RuntimeError, match=r"no kernel 'nope' in emulator_test.cu"):
        module.get_function("nope")
    with pytest.raises(RuntimeError, match=r"no kernel 'nope' in kernels/zero_fill.cu"):
        kernel("zero_fill.cu", "nope")
    with pytest.raises(RuntimeError, match="unknown kernel file 'nope.cu'"):
        emulator.load("nope.cu")
    with pytest.raises(RuntimeError, match=r"g\+\+ failed to compile broken.cu(.|\n)*error"):
        emulator.compile_source("broken.cu", 'extern "C" __global__ void k() { oops; }', ["k"])


# --------------------------------------------------------------------------- the real kernels


def table(pointer_lists: list[list[int]], sizes: list[int], chunk: int) -> tuple[np.ndarray, int]:
    """A multi-tensor launch table as the launchers build it, and its number of blocks."""
    block_tensor, block_chunk = ref.plan_arrays(sizes, chunk)
    words = np.concatenate([np.asarray(ptrs, dtype=np.int64) for ptrs in pointer_lists]
                           + [np.asarray(sizes, dtype=np.int64), block_tensor, block_chunk])
    return words, len(block_tensor)


@pytest.mark.parametrize("chunk_bytes, block", [(48, 7), (4096, 512)])
def test_multi_tensor_zero_odd_sizes_unaligned_starts(chunk_bytes: int, block: int) -> None:
    rng = np.random.default_rng(1)
    backing = rng.integers(1, 255, size=40_000, dtype=np.uint8)
    expected = backing.copy()
    views, offset = [], 0
    for n in [0, 1, 15, 16, 17, 33, 47, 48, 49, 200, 0, 4095, 4097, 9000, 3]:
        offset += int(rng.integers(1, 20))  # gaps that must survive; starts not 16-aligned
        views.append(backing[offset:offset + n])
        expected[offset:offset + n] = 0
        offset += n
    floats = [rng.standard_normal(n).astype(dt) for n, dt in
              [(1001, np.float32), (3, np.float16), (777, np.float64)]]
    arrays = views + floats
    words, blocks = table([[a.ctypes.data for a in arrays]], [a.nbytes for a in arrays],
                          chunk_bytes)
    kernel("multi_tensor_zero.cu", "multi_tensor_zero")(
        (blocks,), (block,), (words, np.int64(len(arrays)), np.int64(chunk_bytes)))
    np.testing.assert_array_equal(backing, expected)
    for arr in floats:
        assert not arr.any()


@pytest.mark.parametrize("dtype", [np.bool_, np.float16, np.float32, np.float64, np.complex128])
def test_fill_strided_on_a_transposed_strided_view(dtype) -> None:
    base = np.arange(6 * 7 * 8).reshape(6, 7, 8).astype(dtype)
    expected = base.copy()
    view = base[1::2, ::-3, 2:7].transpose(2, 0, 1)
    expected[1::2, ::-3, 2:7] = 1.5
    itemsize = base.itemsize
    shape, strides = ref.collapse_layout(view.shape, [s // itemsize for s in view.strides])
    assert len(shape) > 1 and min(strides) < 0
    layout = np.array(shape + strides, dtype=np.int64)
    value = np.zeros(2, dtype=np.uint64)
    value.view(np.uint8)[:itemsize] = np.array(1.5, dtype=dtype).reshape(1).view(np.uint8)
    kernel("zero_fill.cu", f"fill_strided_{itemsize}")(
        (2,), (16,), (view, value[0], value[1], np.int64(view.size), np.int32(len(shape)),
                      layout))
    np.testing.assert_array_equal(base, expected)


FLOATS = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("grad_dtype, incoming_dtype", list(itertools.product(FLOATS, FLOATS)))
def test_accumulate_grad_bit_exact(grad_dtype, incoming_dtype) -> None:
    rng = np.random.default_rng(2)
    n = 5000
    grad = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 5, n)).astype(grad_dtype)
    incoming = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 5, n)).astype(incoming_dtype)
    # 1 + 2**-11 + 2**-40 lies just above a float16 halfway point: one rounding gives
    # 1 + 2**-10, rounding through float32 first would give 1.0.
    grad[:2] = 1.0
    incoming[:2] = 2.0**-11 + 2.0**-40
    expected = grad.copy()
    ref.accumulate_grad(expected, incoming)
    name = f"accumulate_grad_{np.dtype(grad_dtype).name}_{np.dtype(incoming_dtype).name}"
    kernel("grad_accumulate.cu", name)((3,), (256,), (grad, incoming, np.int64(n)))
    np.testing.assert_array_equal(bits(grad), bits(expected))
    if grad_dtype == np.float16 and incoming_dtype == np.float64:
        assert grad[0] == 1 + 2.0**-10


@pytest.mark.parametrize("nesterov, first_step", [(False, False), (True, True)])
def test_fused_sgd_float32_bit_exact(nesterov: bool, first_step: bool) -> None:
    rng = np.random.default_rng(3)
    sizes = [15, 7, 0, 1, 130, 1000]
    params = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    grads = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    bufs = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    expected_params, expected_bufs = [p.copy() for p in params], [b.copy() for b in bufs]
    options = dict(lr=0.1, momentum=0.9, dampening=0.0 if nesterov else 0.1,
                   weight_decay=0.01, nesterov=nesterov, maximize=not nesterov,
                   first_step=first_step)
    ref.fused_sgd(expected_params, grads, expected_bufs, **options)
    lr, momentum, one_minus_damp, weight_decay, flags = ref.sgd_scalars(momentum_bufs=bufs,
                                                                        **options)
    chunk = 64
    words, blocks = table([[a.ctypes.data for a in arrays] for arrays in (params, grads, bufs)],
                          sizes, chunk)
    kernel("fused_optim.cu", "fused_sgd_float32")(
        (blocks,), (32,), (words, np.int64(len(sizes)), np.int64(chunk), np.float32(lr),
                           np.float32(momentum), np.float32(one_minus_damp),
                           np.float32(weight_decay), np.int32(flags)))
    for actual, expected in zip(params + bufs, expected_params + expected_bufs):
        np.testing.assert_array_equal(bits(actual), bits(expected))
