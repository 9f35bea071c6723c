"""CUDA kernels: they compile (nvcc), their NumPy references are right (PyTorch as the oracle),
and each launcher, with its kernel, agrees with its reference bit for bit: on the CPU emulator of
the kernels everywhere, and on a GPU where one is present.

Tolerances against PyTorch: rtol 1e-6 (float32) / 1e-12 (float64), with an absolute term of the
same size times the tensor's largest magnitude. The absolute term is needed because PyTorch
rounds differently in the last bit (``exp_avg.lerp_`` instead of ``beta1*m + (1-beta1)*g``,
FMA-vectorised CPU kernels, division by a scalar done as multiplication by its reciprocal), and
an element that came out of cancellation (a momentum buffer or weight crossing zero) carries an
error at the scale of the tensor, not of itself. Observed: about 3e-7 / 1.4e-15 of the scale.
The gradients are given, not computed: no step amplifies another's rounding and no reduction
sums in a CPU-dependent order, so those ulps are all there is on any CPU.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import cuda_emulator as emulator
import numpy as np
import pytest

from microtorch.backend import kernel_reference as ref
from microtorch.backend import kernels

KERNEL_DIR = Path(__file__).resolve().parents[1] / "kernels"
KERNEL_FILES = sorted(p.name for p in KERNEL_DIR.glob("*.cu"))
RTOL = {np.float32: 1e-6, np.float64: 1e-12}


def assert_close_to_scale(actual, expected, rtol: float) -> None:
    """allclose with rtol and an absolute tolerance of rtol times the largest |expected|."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


# --------------------------------------------------------------------------- (a) nvcc


def test_every_kernel_file_is_registered() -> None:
    assert KERNEL_FILES == sorted(kernels.KERNELS)


@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_kernel_compiles_with_nvcc(filename: str, tmp_path: Path) -> None:
    """Each file compiles to PTX for sm_90 and defines the entry points the loader asks for."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed (CI must have it: see DESIGN.md section 6)")
    out = tmp_path / (filename + ".ptx")
    options = list(kernels._OPTIONS.get(filename, ()))
    result = subprocess.run([nvcc, "-ptx", "-arch=sm_90", *options, str(KERNEL_DIR / filename),
                             "-o", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    ptx = out.read_text()
    for name in kernels.KERNELS[filename]:
        assert f".entry {name}(" in ptx, f"{name} missing from {filename}"


def test_sources_load_without_cupy() -> None:
    for filename in kernels.KERNELS:
        assert "__global__" in kernels.kernel_source(filename)
    with pytest.raises(RuntimeError, match="no_such_kernel.cu"):
        kernels.kernel_source("no_such_kernel.cu")


# --------------------------------------------------------------------------- (b) plans


def check_plan_covers(sizes: list[int], chunk_size: int) -> None:
    plan = ref.chunk_plan(sizes, chunk_size)
    assert len(plan) == sum(-(-s // chunk_size) for s in sizes)
    covered = [np.zeros(s, dtype=np.int64) for s in sizes]
    for tensor, start, stop in plan:
        assert 0 <= start < stop <= sizes[tensor]
        assert stop - start <= chunk_size and start % chunk_size == 0
        covered[tensor][start:stop] += 1
    for counts in covered:
        assert (counts == 1).all()  # every element exactly once
    assert [t for t, _, _ in plan] == sorted(t for t, _, _ in plan)  # tensor-major block order


@pytest.mark.parametrize("sizes", [[], [0], [1], [0, 0, 0], [65537], [7, 0, 13, 1, 0, 64, 65],
                                   [3 * 65536, 65535, 65536, 65537]])
@pytest.mark.parametrize("chunk_size", [1, 7, 64, 65536])
def test_chunk_plan_covers_every_element_once(sizes: list[int], chunk_size: int) -> None:
    check_plan_covers(sizes, chunk_size)


def test_chunk_plan_many_tensors() -> None:
    rng = np.random.default_rng(1)
    sizes = rng.integers(0, 500, size=1000)
    sizes[::17] = 0
    check_plan_covers(sizes.tolist(), 97)


def test_plan_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        ref.chunk_plan([4], 0)
    with pytest.raises(ValueError):
        ref.chunk_plan([-1], 4)


def offsets(shape, strides) -> list[int]:
    """Every element's offset (in elements), sorted: the multiset a layout addresses."""
    grids = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
    return sorted((np.asarray(strides, dtype=np.int64)[:, None] * grids).sum(axis=0).tolist())


def views() -> list[np.ndarray]:
    base = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    return [base, base.T, base[:, 1:, ::2], base[::-1, :, 1:3], base.transpose(2, 0, 3, 1),
            base[0, 0], base[1, 2, 3, 4], base[:, :0], np.asfortranarray(base[1]),
            np.broadcast_to(base[0, 0, 0], (3, 5)), base[:, :, :, ::-1]]


@pytest.mark.parametrize("index", range(len(views())))
def test_collapse_layout_keeps_the_addressed_elements(index: int) -> None:
    view = views()[index]
    strides = [s // view.itemsize for s in view.strides]
    shape, collapsed = ref.collapse_layout(view.shape, strides)
    if view.size == 0:
        assert shape == (0,)
        return
    assert offsets(shape, collapsed) == offsets(view.shape, strides)
    if view.flags.c_contiguous or view.flags.f_contiguous:
        assert len(shape) == 1


# --------------------------------------------------------------------------- (b) zeroing


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_,
                                   np.complex128])
@pytest.mark.parametrize("value", [0, 1.5])
def test_fill_strided_on_non_contiguous_views(dtype, value) -> None:
    base = np.arange(6 * 7 * 8).reshape(6, 7, 8).astype(dtype)
    before = base.copy()
    view = base[1::2, ::-3, 2:7].transpose(2, 0, 1)
    assert not view.flags.c_contiguous
    mask = np.zeros(base.shape, dtype=bool)
    mask[1::2, ::-3, 2:7] = True
    ref.fill_strided(view, value)
    assert (base[mask] == np.array(value).astype(dtype)).all()
    assert (base[~mask] == before[~mask]).all()


def test_multi_tensor_zero_zeroes_everything() -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(n).astype(dt) for n, dt in
              zip([0, 1, 7, 65537, 33, 0, 1000], itertools.cycle([np.float32, np.float16,
                                                                   np.float64]), strict=False)]
    arrays.append(np.arange(12, dtype=np.int64).reshape(3, 4))
    ref.multi_tensor_zero(arrays)
    for arr in arrays:
        assert not arr.any()
    with pytest.raises(ValueError):
        ref.multi_tensor_zero([np.ones((4, 4))[:, ::2]])


# --------------------------------------------------------------------------- (b) gradients

FLOATS = [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("grad_dtype", FLOATS)
@pytest.mark.parametrize("incoming_dtype", FLOATS)
def test_accumulate_grad_converts_dtype(grad_dtype, incoming_dtype) -> None:
    rng = np.random.default_rng(3)
    grad = rng.standard_normal((5, 7)).astype(grad_dtype)
    incoming = rng.standard_normal((5, 7)).astype(incoming_dtype)
    exact = grad.astype(np.float64) + incoming.astype(np.float64)
    held = grad  # a reference taken before accumulation sees the sum
    ref.accumulate_grad(grad, incoming)
    assert held is grad and grad.dtype == grad_dtype
    np.testing.assert_allclose(grad, exact, rtol=np.finfo(grad_dtype).eps)


@pytest.mark.parametrize("grad_dtype", FLOATS)
@pytest.mark.parametrize("incoming_dtype", FLOATS)
def test_accumulate_grad_matches_torch(grad_dtype, incoming_dtype) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    grad = rng.standard_normal(1000).astype(grad_dtype)
    incoming = rng.standard_normal(1000).astype(incoming_dtype)
    expected = torch.from_numpy(grad.copy()).add_(torch.from_numpy(incoming)).numpy()
    ref.accumulate_grad(grad, incoming)
    np.testing.assert_array_equal(grad, expected)


def test_accumulate_grad_broadcast_view_and_errors() -> None:
    grad = np.ones((3, 4), dtype=np.float32)
    ref.accumulate_grad(grad, np.broadcast_to(np.float64(0.5), (3, 4)))
    assert (grad == 1.5).all() and grad.dtype == np.float32
    with pytest.raises(ValueError):
        ref.accumulate_grad(grad, np.ones((4, 3), dtype=np.float32))
    with pytest.raises(TypeError):
        ref.accumulate_grad(grad, np.ones((3, 4), dtype=np.int64))


# --------------------------------------------------------------------------- (b) optimizers

SHAPES = [(3, 5), (7,), (2, 3, 4), (0,), (1,), (130,)]
STEPS = 5
SGD_CASES = [case for case in itertools.product((0.0, 0.9), (0.0, 0.5), (False, True),
                                                 (0.0, 0.1), (False, True))
             if not (case[2] and (case[0] == 0 or case[1] != 0))]
ADAM_CASES = list(itertools.product((False, True), (0.0, 0.1), (False, True), (False, True)))


def sgd_case_id(case) -> str:
    momentum, dampening, nesterov, weight_decay, maximize = case
    return f"mom{momentum}-damp{dampening}-nest{int(nesterov)}-wd{weight_decay}-max{int(maximize)}"


def adam_case_id(case) -> str:
    decoupled, weight_decay, amsgrad, maximize = case
    return (f"{'adamw' if decoupled else 'adam'}-wd{weight_decay}-ams{int(amsgrad)}"
            f"-max{int(maximize)}")


def random_arrays(rng, dtype) -> list[np.ndarray]:
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


class SgdRun:
    """Drives a fused_sgd implementation over steps, keeping its momentum buffers."""

    def __init__(self, fused_sgd, params, *, momentum, **options) -> None:
        self.fused_sgd, self.params, self.options = fused_sgd, params, options
        self.momentum = momentum
        self.bufs = [np.empty_like(p) for p in params] if momentum else None
        self.steps = 0

    def step(self, grads) -> None:
        self.fused_sgd(self.params, grads, self.bufs, momentum=self.momentum,
                       first_step=self.steps == 0, **self.options)
        self.steps += 1


class AdamRun:
    """Drives a fused_adam implementation over steps, keeping its moments and step count."""

    def __init__(self, fused_adam, params, *, amsgrad, **options) -> None:
        self.fused_adam, self.params, self.options = fused_adam, params, options
        self.amsgrad = amsgrad
        self.exp_avgs = [np.zeros_like(p) for p in params]
        self.exp_avg_sqs = [np.zeros_like(p) for p in params]
        self.max_exp_avg_sqs = [np.zeros_like(p) for p in params] if amsgrad else None
        self.steps = 0

    def step(self, grads) -> None:
        self.steps += 1
        self.fused_adam(self.params, grads, self.exp_avgs, self.exp_avg_sqs,
                        self.max_exp_avg_sqs, step=self.steps, amsgrad=self.amsgrad,
                        **self.options)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", SGD_CASES, ids=sgd_case_id)
def test_fused_sgd_matches_torch(case, dtype) -> None:
    torch = pytest.importorskip("torch")
    momentum, dampening, nesterov, weight_decay, maximize = case
    rng = np.random.default_rng(5)
    params = random_arrays(rng, dtype)
    tparams = [torch.tensor(p, requires_grad=True) for p in params]
    options = dict(lr=0.1, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                   nesterov=nesterov, maximize=maximize)
    opt = torch.optim.SGD(tparams, foreach=False, **options)
    run = SgdRun(ref.fused_sgd, params, **options)
    step_both(torch, opt, tparams, run, rng, dtype)
    for i, t in enumerate(tparams):
        assert_close_to_scale(params[i], t.detach().numpy(), RTOL[dtype])
        if momentum:
            assert_close_to_scale(run.bufs[i], opt.state[t]["momentum_buffer"].numpy(),
                                  RTOL[dtype])


def step_both(torch, opt, tparams, run, rng, dtype) -> None:
    """STEPS steps of a torch optimizer and a reference run on the same random gradients."""
    for _ in range(STEPS):
        grads = random_arrays(rng, dtype)
        for t, g in zip(tparams, grads, strict=True):
            t.grad = torch.tensor(g)
        opt.step()
        run.step(grads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ADAM_CASES, ids=adam_case_id)
def test_fused_adam_matches_torch(case, dtype) -> None:
    torch = pytest.importorskip("torch")
    decoupled, weight_decay, amsgrad, maximize = case
    rng = np.random.default_rng(6)
    params = random_arrays(rng, dtype)
    tparams = [torch.tensor(p, requires_grad=True) for p in params]
    options = dict(lr=0.01, betas=(0.8, 0.99), eps=1e-8, weight_decay=weight_decay,
                   amsgrad=amsgrad, maximize=maximize)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = cls(tparams, foreach=False, **options)
    run = AdamRun(ref.fused_adam, params, lr=0.01, beta1=0.8, beta2=0.99, eps=1e-8,
                  weight_decay=weight_decay, decoupled=decoupled, amsgrad=amsgrad,
                  maximize=maximize)
    step_both(torch, opt, tparams, run, rng, dtype)
    for i, t in enumerate(tparams):
        state = opt.state[t]
        assert_close_to_scale(params[i], t.detach().numpy(), RTOL[dtype])
        assert_close_to_scale(run.exp_avgs[i], state["exp_avg"].numpy(), RTOL[dtype])
        assert_close_to_scale(run.exp_avg_sqs[i], state["exp_avg_sq"].numpy(), RTOL[dtype])
        if amsgrad:
            assert_close_to_scale(run.max_exp_avg_sqs[i], state["max_exp_avg_sq"].numpy(),
                                  RTOL[dtype])


def test_fused_optimizers_keep_float32() -> None:
    """Hyperparameters stay Python floats: no float64 result (NumPy 2 promotion)."""
    rng = np.random.default_rng(7)
    params, grads = random_arrays(rng, np.float32), random_arrays(rng, np.float32)
    sgd = SgdRun(ref.fused_sgd, params, lr=np.float64(0.1), momentum=np.float64(0.9),
                 weight_decay=np.float64(0.01), nesterov=True)
    sgd.step(grads)
    sgd.step(grads)
    adam = AdamRun(ref.fused_adam, params, lr=np.float64(1e-3), amsgrad=True,
                   weight_decay=np.float64(0.01))
    adam.step(grads)
    for arr in params + sgd.bufs + adam.exp_avgs + adam.exp_avg_sqs + adam.max_exp_avg_sqs:
        assert arr.dtype == np.float32


def test_fused_optimizers_reject_bad_input() -> None:
    p = [np.zeros(3, dtype=np.float32)]
    with pytest.raises(ValueError, match="nesterov"):
        ref.fused_sgd(p, p, None, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="momentum_bufs"):
        ref.fused_sgd(p, p, None, lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="grads"):
        ref.fused_sgd(p, [np.zeros(4, dtype=np.float32)], None, lr=0.1)
    with pytest.raises(ValueError, match="grads"):
        ref.fused_sgd(p, [np.zeros(3, dtype=np.float64)], None, lr=0.1)
    with pytest.raises(TypeError):
        half = [np.zeros(3, dtype=np.float16)]
        ref.fused_sgd(half, half, None, lr=0.1)
    with pytest.raises(ValueError, match="step"):
        ref.fused_adam(p, p, p, p, None, step=0, lr=0.1)
    with pytest.raises(ValueError, match="amsgrad"):
        ref.fused_adam(p, p, p, p, None, step=1, lr=0.1, amsgrad=True)


# --------------------------------------------------------------------------- (c) launchers
#
# The launchers and the kernels themselves run twice: on the CPU emulator of the kernels (the
# .cu files compiled for the host by tests/cuda_emulator, NumPy arrays standing for device
# memory) everywhere, and on a GPU through CuPy where one is present. Both must agree with the
# NumPy references.


@pytest.fixture
def cp():
    """CuPy with at least one GPU, or a skip that says which is missing."""
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: CUDA kernels not run")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver/runtime missing
        pytest.skip(f"no usable CUDA runtime: {exc}")
    if count == 0:
        pytest.skip("CuPy sees no GPU: CUDA kernels not run")
    return cupy


class EmulatedRuntime(kernels.KernelRuntime):
    """The launchers' runtime on the CPU: NumPy arrays as device 0, kernels run by the emulator.

    It reports two multiprocessors, so grid-stride launches get fewer blocks than elements and
    every thread loops, as on a GPU with a large array.
    """

    def device_id(self, arr) -> int:
        assert isinstance(arr, np.ndarray), type(arr)
        return 0

    def pointer(self, arr) -> int:
        return arr.ctypes.data

    def upload(self, words: np.ndarray, device_id: int) -> np.ndarray:
        return np.array(words, dtype=np.int64)  # a copy, as a device upload is

    def __init__(self) -> None:
        super().__init__()
        self.launched: list[str] = []  # kernel names, in launch order

    def launch(self, filename, name, device_id, grid, block, args) -> None:
        self.launched.append(name)
        emulator.load(filename).get_function(name)((grid,), (block,), args)

    def multiprocessor_count(self, device_id: int) -> int:
        return 2

    def add_into(self, grad, incoming) -> None:
        np.add(grad, incoming, out=grad, casting="unsafe")


class HostArrays:
    """The slice of CuPy's array API the tests use, over NumPy: "device" arrays are copies."""

    asarray = staticmethod(np.array)
    asnumpy = staticmethod(np.array)
    broadcast_to = staticmethod(np.broadcast_to)


@pytest.fixture(params=["emulated", pytest.param("cuda", marks=pytest.mark.cuda)])
def xp(request):
    """Arrays for the launchers: NumPy under the kernel emulator, or CuPy on a GPU."""
    if request.param == "cuda":
        yield request.getfixturevalue("cp")
        return
    try:
        emulator.load("multi_tensor_zero.cu")
    except emulator.EmulatorUnavailable as exc:
        pytest.skip(f"kernel emulator unavailable: {exc}")
    with kernels.use_runtime(EmulatedRuntime()):
        yield HostArrays


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int64,
                                   np.complex64, np.complex128, np.bool_])
def test_launch_fill_strided_matches_reference(xp, dtype) -> None:
    host = (np.arange(5 * 6 * 7) % 11).reshape(5, 6, 7).astype(dtype)
    for index, value in [((slice(None), slice(None, None, 2)), 0),
                         ((slice(None, None, -2), slice(1, 4), slice(None, None, 3)), 2.5),
                         ((Ellipsis,), 1), ((slice(2, 3), slice(0, 0)), 1)]:
        device = xp.asarray(host)
        expected = host.copy()
        view = device[index]
        kernels.fill_strided(view.transpose() if view.ndim > 1 else view, value)
        ref.fill_strided(expected[index], value)
        np.testing.assert_array_equal(xp.asnumpy(device), expected)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.complex128, np.float32])
def test_launch_fill_strided_narrows_stores_for_misaligned_views(xp, dtype) -> None:
    """A dtype view at an odd byte offset is filled with stores its address allows."""
    backing = xp.asarray(np.full(1000, 7, dtype=np.uint8))
    itemsize = np.dtype(dtype).itemsize
    try:
        view = backing[2:2 + 20 * itemsize].view(dtype)[::3]  # 2-byte aligned, strided
    except ValueError as exc:  # an array library may refuse misaligned views altogether
        pytest.skip(f"{xp.__name__} makes no misaligned {np.dtype(dtype)} view: {exc}")
    expected = xp.asnumpy(backing)
    expected[2:2 + 20 * itemsize].view(dtype)[::3] = 0
    kernels.fill_strided(view, 0)
    np.testing.assert_array_equal(xp.asnumpy(backing), expected)
    if isinstance(kernels.current_runtime(), EmulatedRuntime):
        assert kernels.current_runtime().launched[-1] == "fill_strided_2"
    if itemsize > 2:  # a value whose bytes differ can't be written 2 bytes at a time
        with pytest.raises(ValueError, match="2-byte stores"):
            kernels.fill_strided(view, 1)


def test_launch_multi_tensor_zero_one_launch_many_tensors(xp) -> None:
    """300 tensors (more than PyTorch's 110 per launch), odd sizes, unaligned starts."""
    rng = np.random.default_rng(8)
    backing = xp.asarray(rng.integers(1, 255, size=3_000_000, dtype=np.uint8))
    host = xp.asnumpy(backing)
    arrays, offset = [], 0
    sizes = list(rng.integers(0, 200, size=296)) + [0, kernels.ZERO_CHUNK_BYTES + 5, 1, 17]
    for n in sizes:
        offset += int(rng.integers(1, 20))  # gaps that must survive; starts not 16-aligned
        arrays.append(backing[offset:offset + n])
        host[offset:offset + n] = 0
        offset += n
    floats = [xp.asarray(rng.standard_normal(n).astype(dt)) for n, dt in
              [(65537, np.float32), (3, np.float16), (70000, np.float64)]]
    kernels.multi_tensor_zero(arrays + floats)
    np.testing.assert_array_equal(xp.asnumpy(backing), host)
    for arr in floats:
        assert not bool(arr.any())
    tables = kernels.current_runtime().zero_tables
    cached = len(tables)
    kernels.multi_tensor_zero(arrays + floats)  # the table is reused, not rebuilt
    assert len(tables) == cached


@pytest.mark.parametrize("grad_dtype", FLOATS)
@pytest.mark.parametrize("incoming_dtype", FLOATS)
def test_launch_accumulate_grad_matches_reference(xp, grad_dtype, incoming_dtype) -> None:
    rng = np.random.default_rng(9)
    grad = rng.standard_normal(100_003).astype(grad_dtype)
    incoming = rng.standard_normal(100_003).astype(incoming_dtype)
    device_grad = xp.asarray(grad)
    kernels.accumulate_grad(device_grad, xp.asarray(incoming))
    ref.accumulate_grad(grad, incoming)
    np.testing.assert_array_equal(xp.asnumpy(device_grad), grad)
    # A broadcast view takes the array library's path, with the same result.
    device_grad = xp.asarray(grad)
    kernels.accumulate_grad(device_grad, xp.broadcast_to(xp.asarray(incoming[:1]), grad.shape))
    ref.accumulate_grad(grad, np.broadcast_to(incoming[:1], grad.shape))
    np.testing.assert_array_equal(xp.asnumpy(device_grad), grad)


LAUNCH_SHAPES = [(2 * 65536 + 3,), (0,), (1,), (33, 17)] + [(n,) for n in range(1, 200, 7)]


def to_device(xp, arrays):
    return None if arrays is None else [xp.asarray(a) for a in arrays]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", SGD_CASES, ids=sgd_case_id)
def test_launch_fused_sgd_matches_reference(xp, case, dtype) -> None:
    momentum, dampening, nesterov, weight_decay, maximize = case
    rng = np.random.default_rng(10)
    params = [rng.standard_normal(s).astype(dtype) for s in LAUNCH_SHAPES]
    options = dict(lr=0.1, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                   nesterov=nesterov, maximize=maximize)
    host = SgdRun(ref.fused_sgd, params, **options)
    device = SgdRun(kernels.fused_sgd, to_device(xp, params), **options)
    device.bufs = to_device(xp, host.bufs)
    for _ in range(3):
        grads = [rng.standard_normal(s).astype(dtype) for s in LAUNCH_SHAPES]
        host.step(grads)
        device.step(to_device(xp, grads))
    for a, b in zip(device.params + (device.bufs or []), host.params + (host.bufs or []),
                    strict=True):
        np.testing.assert_array_equal(xp.asnumpy(a), b)  # bit-exact: no FMA (--fmad=false)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ADAM_CASES, ids=adam_case_id)
def test_launch_fused_adam_matches_reference(xp, case, dtype) -> None:
    decoupled, weight_decay, amsgrad, maximize = case
    rng = np.random.default_rng(11)
    params = [rng.standard_normal(s).astype(dtype) for s in LAUNCH_SHAPES]
    options = dict(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-8, weight_decay=weight_decay,
                   decoupled=decoupled, amsgrad=amsgrad, maximize=maximize)
    host = AdamRun(ref.fused_adam, params, **options)
    device = AdamRun(kernels.fused_adam, to_device(xp, params), **options)
    for name in ("exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"):
        setattr(device, name, to_device(xp, getattr(host, name)))
    for _ in range(3):
        grads = [rng.standard_normal(s).astype(dtype) for s in LAUNCH_SHAPES]
        host.step(grads)
        device.step(to_device(xp, grads))
    for name in ("params", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"):
        for a, b in zip(getattr(device, name) or [], getattr(host, name) or [], strict=True):
            np.testing.assert_array_equal(xp.asnumpy(a), b)


def test_launch_fused_sgd_mixed_dtypes_one_call(xp) -> None:
    """A group with float32 and float64 parameters: one launch per dtype, same result."""
    rng = np.random.default_rng(12)
    params = [rng.standard_normal(5).astype(dt) for dt in (np.float32, np.float64, np.float32)]
    grads = [rng.standard_normal(5).astype(p.dtype) for p in params]
    device_params = to_device(xp, params)
    kernels.fused_sgd(device_params, to_device(xp, grads), None, lr=0.5, weight_decay=0.1)
    ref.fused_sgd(params, grads, None, lr=0.5, weight_decay=0.1)
    for a, b in zip(device_params, params, strict=True):
        np.testing.assert_array_equal(xp.asnumpy(a), b)


def test_launch_keeps_float32_subnormals(xp) -> None:
    """Subnormal float32 values survive accumulation and a fused step (no flush to zero)."""
    tiny = np.float32(3e-39)  # below float32's smallest normal, 1.18e-38
    grad, incoming = np.full(1000, tiny), np.full(1000, tiny)  # float32, like tiny
    device_grad = xp.asarray(grad)
    kernels.accumulate_grad(device_grad, xp.asarray(incoming))
    ref.accumulate_grad(grad, incoming)
    assert grad[0] == 2 * tiny and grad.dtype == np.float32
    np.testing.assert_array_equal(xp.asnumpy(device_grad), grad)
    params = [np.full(300, 4 * tiny, dtype=np.float32)]
    device_params = to_device(xp, params)
    kernels.fused_sgd(device_params, to_device(xp, [incoming[:300]]), None, lr=1.0)
    ref.fused_sgd(params, [incoming[:300]], None, lr=1.0)
    assert params[0][0] == 3 * tiny
    np.testing.assert_array_equal(xp.asnumpy(device_params[0]), params[0])


def test_runtime_is_restored_after_use() -> None:
    default = kernels.current_runtime()
    assert isinstance(default, kernels.CupyRuntime)
    with pytest.raises(KeyError), kernels.use_runtime(EmulatedRuntime()) as runtime:
        assert kernels.current_runtime() is runtime
        raise KeyError("inside")
    assert kernels.current_runtime() is default


@pytest.mark.cuda
def test_cuda_kernels_compiled_once_and_errors_name_the_file(cp, monkeypatch) -> None:
    runtime = kernels.current_runtime()
    device_id = cp.cuda.Device().id
    first = runtime.kernel("multi_tensor_zero.cu", "multi_tensor_zero", device_id)
    module = runtime.module("multi_tensor_zero.cu", device_id)
    assert runtime.kernel("multi_tensor_zero.cu", "multi_tensor_zero", device_id) is first
    assert runtime.module("multi_tensor_zero.cu", device_id) is module
    monkeypatch.setattr(kernels, "kernel_source", lambda filename: "this is not CUDA")
    with pytest.raises(RuntimeError, match="broken_for_test.cu"):
        runtime.kernel("broken_for_test.cu", "anything", device_id)
