"""einops on microtorch tensors (issue 25): the backend registers itself when einops is
imported (before or after microtorch), every einops function gives PyTorch's values, and the
layers of ``microtorch.utils.einops`` match ``einops.layers.torch`` (same seed, same weights)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import microtorch

einops = pytest.importorskip("einops")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parent.parent

CALLS = {
    "rearrange_merge": lambda e, x: e.rearrange(x, "b c h -> b (c h)"),
    "rearrange_split": lambda e, x: e.rearrange(x, "b (c1 c2) h -> c2 b c1 h", c1=3),
    "rearrange_list": lambda e, x: e.rearrange([x[0], x[1]], "n c h -> c n h"),
    "reduce_mean": lambda e, x: e.reduce(x, "b c h -> b h", "mean"),
    "reduce_max_pool": lambda e, x: e.reduce(x, "b c (h 2) -> b c h", "max"),
    "reduce_prod": lambda e, x: e.reduce(x, "b c h -> c", "prod"),
    "repeat_new_axis": lambda e, x: e.repeat(x, "b c h -> b c h r", r=2),
    "repeat_tile": lambda e, x: e.repeat(x, "b c h -> (b 2) c h"),
    "einsum": lambda e, x: e.einsum(x, x, "b c h, b d h -> b c d"),
    "pack": lambda e, x: e.pack([x, x[:, 0]], "b *")[0],
}


@pytest.mark.parametrize("name", CALLS)
def test_einops_functions_on_microtorch_tensors_equal_pytorchs(name, device):
    data = np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)
    expected = CALLS[name](einops, torch.tensor(data))
    x = microtorch.tensor(data, device=device, requires_grad=True)
    got = CALLS[name](einops, x)
    assert isinstance(got, microtorch.Tensor) and got.device.type == device
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.numpy(), rtol=1e-6,
                               atol=1e-6)
    got.sum().backward()  # differentiable: einops runs microtorch's ops
    assert x.grad is not None and x.grad.shape == x.shape


def test_layers_match_einops_layers_torch():
    from einops.layers.torch import EinMix as TorchEinMix
    from einops.layers.torch import Rearrange as TorchRearrange
    from einops.layers.torch import Reduce as TorchReduce

    from microtorch.utils.einops import EinMix, Rearrange, Reduce

    data = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
    x, tx = microtorch.tensor(data), torch.tensor(data)
    for ours, theirs in ((Rearrange("b c h -> b (c h)"), TorchRearrange("b c h -> b (c h)")),
                         (Reduce("b c (h 2) -> b c h", "max"),
                          TorchReduce("b c (h 2) -> b c h", "max"))):
        assert repr(ours) == repr(theirs)
        assert ours(x).tolist() == theirs(tx).tolist()
    microtorch.manual_seed(0)
    mix = EinMix("b c h -> b c k", weight_shape="h k", bias_shape="k", h=8, k=5)
    torch.manual_seed(0)
    tmix = TorchEinMix("b c h -> b c k", weight_shape="h k", bias_shape="k", h=8, k=5)
    assert mix.weight.tolist() == tmix.weight.tolist()  # PyTorch's draws, same seed
    np.testing.assert_allclose(mix(x).detach().numpy(), tmix(tx).detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    model = microtorch.nn.Sequential(Rearrange("b c h -> b (c h)"), microtorch.nn.Linear(24, 2))
    assert model(x).shape == (2, 2)


@pytest.mark.parametrize("order", ["einops first", "microtorch first"])
def test_backend_registers_whatever_was_imported_first(order):
    imports = ("import einops, microtorch" if order == "einops first"
               else "import microtorch, einops")
    code = (f"{imports}\n"
            "import sys\n"
            "assert 'microtorch.utils.einops' not in sys.modules\n"
            "x = microtorch.ones(2, 3)\n"
            "print(einops.rearrange(x, 'a b -> b a').shape)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "microtorch.Size([3, 2])"


def test_microtorch_does_not_import_einops():
    code = "import microtorch, sys; print('einops' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr
