"""PyTorch's own spread for the OpInfo tier: one sample's float32 results from PyTorch in its
other configurations on this machine.

``oracle`` accepts a float32 result outside the tolerance when it lies no farther from
PyTorch's float64 computation than twice PyTorch's float32 result does. But PyTorch's float32
result is itself one rounding among several: its distance from the float64 one moves with the
SIMD level of its kernels (oneDNN's, MKL's, ATen's) and with its thread count. Measured on an
Intel Xeon (AVX-512), nn.functional.conv2d's sample 28 (27 sums of 36 products of values up to
9): summed distance 3.5e-4 at AVX-512, 1.9e-4 at AVX2, 3.8e-4 without SIMD; microtorch's (the
same bits with OpenBLAS's SkylakeX and Haswell kernels) 3.8e-4. Judged against the AVX2 run
alone, as on an AVX2-only CPU, that result failed, though PyTorch's own kernels on the same
machine lie as far. So when the first judgement fails, the yardstick becomes the farthest of
PyTorch's runs in the configurations ``_torch_spread.torch_configs`` names (1 and 2 threads,
every SIMD level below the native one), each in a subprocess (some 7 s), once per sample: a
rare path (on that Intel Xeon, conv3d's sample 12 and normalize's sample judged this way pass,
natively and as an AVX2 CPU, and conv2d's sample 28 as an AVX2 CPU).
"""

from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


@functools.cache
def elsewhere(entry: str, dtype: str, index: int) -> list[dict]:
    """PyTorch's results of sample ``index`` of OpInfo ``entry`` in ``dtype`` in each of its
    other configurations (``pytorch_side``'s dicts), computed once per process; RuntimeError
    when a run fails."""
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    from _torch_spread import run_elsewhere

    with tempfile.TemporaryDirectory() as work:
        runs = run_elsewhere(Path(work), "opinfo.spread:pytorch_side",
                             [dict(entry=entry, dtype=dtype, index=index)])
    return [results[0] for results in runs.values()]


def pytorch_side(torch, entry: str, dtype: str, index: int) -> dict:
    """PyTorch's side of one sample as ``oracle`` computes it: ``{"value": the result as
    compared (gauge-processed where the entry needs it), "grads": the gradients of the
    weighted sum (None where nothing is differentiated)}``. Run in a worker process."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import catalog
    import oracle

    runner = oracle._Runner(catalog.find(entry), getattr(torch, dtype), "cpu")
    op = runner.op
    sample = oracle.samples_of(op, runner.dtype, runner.grad)[index]
    runner.seed(index)
    out = oracle._call(op.op, (sample.input, *sample.args), sample.kwargs)
    value = sample.output_process_fn_grad(out) if runner.gauge else out
    grads = None
    if runner.grad:
        if runner.wrapper is not None:
            runner.seed(index)
            out = oracle._call(runner.wrapper, (op.op, sample.input, *sample.args),
                               sample.kwargs)
        grads, _ = oracle._torch_grads((sample.input, sample.args, sample.kwargs),
                                       sample.output_process_fn_grad, out)
    detach = torch.utils._pytree.tree_map(
        lambda t: t.detach() if isinstance(t, torch.Tensor) else t, (value, grads))
    return {"value": detach[0], "grads": detach[1]}
