"""Models train on ``cuda`` exactly as on the CPU: every optimizer, every gradient storage.

A CNN, an LSTM, a Transformer encoder layer and an MLP each take three steps of every optimizer
of ``microtorch.optim``, with the default per-parameter gradients, ``foreach=True`` (multi-tensor
kernels) and ``flat_grads=True`` (one gradient buffer), and alternating ``set_to_none``. The
CUDA run starts from a copy of the CPU model and must end with the same parameters and losses:
rtol 1e-5 (about 80 float32 ulps). An early-step comparison: the backends sum their matmuls and
convolutions in orders of their own (a sum of n terms moves by up to n - 1 ulps of its terms'
magnitude), and three steps do not amplify that yet.
Runs wherever ``cuda`` is available: through the CuPy stand-in (``MICROTORCH_TEST_CUDA=
standin``, with the kernels on the CPU emulator) or on a GPU.
"""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

import microtorch
from microtorch import nn, optim
from microtorch.backend import aten_arith
from microtorch.nn import functional as F

pytestmark = pytest.mark.cuda

if not microtorch.cuda.is_available():
    pytest.skip("CUDA not available (needs CuPy and a GPU, or MICROTORCH_TEST_CUDA=standin)",
                allow_module_level=True)


class LastStep(nn.Module):
    """An LSTM over a sequence, then a linear head on its last output."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class Encoder(nn.Module):
    """One Transformer encoder layer (no dropout) and a pooled linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 3, 3), nn.Flatten(), nn.Linear(3 * 2 * 2, 3))


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))


# name: (model factory, input shape); every model maps a batch of 4 to 3 class scores.
MODELS = {"cnn": (_cnn, (4, 2, 8, 8)), "lstm": (LastStep, (4, 5, 4)),
          "transformer": (Encoder, (4, 5, 8)), "mlp": (_mlp, (4, 6))}

# Settings that exercise each optimizer's options; an optimizer not listed here (a new one)
# still runs, with its defaults and lr=0.01. Adam's eps is large enough that the gradient of
# attention's key bias, zero but for rounding noise of either sign, does not become a step of
# size lr whose sign differs between two exact computations.
OPTIMIZER_OPTIONS = {
    "SGD": {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    "Adam": {"lr": 0.01, "amsgrad": True, "weight_decay": 0.01, "eps": 1e-4},
    "AdamW": {"lr": 0.01, "weight_decay": 0.1, "eps": 1e-4},
    "Adagrad": {"lr": 0.05, "weight_decay": 0.01},
    "RMSprop": {"lr": 0.01, "momentum": 0.5, "centered": True},
    "Adadelta": {"lr": 1.0, "weight_decay": 0.01},
    "Adamax": {"lr": 0.01, "eps": 1e-4},
    "NAdam": {"lr": 0.01, "eps": 1e-4},
    "RAdam": {"lr": 0.01, "eps": 1e-4},
    "ASGD": {"lr": 0.01, "t0": 1},
    "Rprop": {"lr": 0.01},
    "LBFGS": {"lr": 0.5, "max_iter": 3},
}
OPTIMIZERS = sorted(name for name in optim.__all__ if isinstance(getattr(optim, name), type)
                    and issubclass(getattr(optim, name), optim.Optimizer)
                    and getattr(optim, name) is not optim.Optimizer)
STORAGES = {"default": {}, "foreach": {"foreach": True}, "flat_grads": {"flat_grads": True}}


def _needs_closure(cls) -> bool:
    closure = inspect.signature(cls.step).parameters.get("closure")
    return closure is not None and closure.default is inspect.Parameter.empty


def _train(model, device, opt_name, storage, x, y) -> list[float]:
    options = OPTIMIZER_OPTIONS.get(opt_name, {"lr": 0.01})
    cls = getattr(optim, opt_name)
    params = list(model.parameters())
    if opt_name == "Muon":  # (2-D parameters only, as PyTorch's; the rest stay as they are)
        params = [p for p in params if p.ndim == 2]
    opt = cls(params, **options, **storage)
    x, y = x.to(device), y.to(device)
    losses = []
    for step in range(3):
        if _needs_closure(cls):  # LBFGS re-evaluates the model inside its step
            def closure(set_to_none=step % 2 == 0):
                opt.zero_grad(set_to_none=set_to_none)
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                return loss

            losses.append(opt.step(closure))
            continue
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=step % 2 == 0)
        losses.append(loss)
    return [float(v) for v in losses]  # read at the end: no sync inside the loop


def test_every_optimizer_is_covered() -> None:
    assert {"SGD", "Adam", "AdamW", "Adagrad", "RMSprop"} <= set(OPTIMIZERS)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("model_name", MODELS)
def test_model_trains_on_cuda_as_on_the_cpu(model_name, opt_name, storage, monkeypatch) -> None:
    cls = getattr(optim, opt_name)
    accepted = inspect.signature(cls).parameters
    if any(option not in accepted for option in STORAGES[storage]):
        pytest.skip(f"{opt_name} has no {storage} option")
    make, shape = MODELS[model_name]
    microtorch.manual_seed(0)
    cpu_model = make()
    cuda_model = copy.deepcopy(cpu_model).to("cuda")
    x = microtorch.randn(*shape)
    y = microtorch.tensor([0, 2, 1, 2])
    if opt_name == "SparseAdam":  # dense gradients: the step refuses them on both devices
        for model, dev in ((cpu_model, "cpu"), (cuda_model, "cuda")):
            with pytest.raises(RuntimeError, match="SparseAdam"):
                _train(model, dev, opt_name, STORAGES[storage], x, y)
        return
    # The CUDA path rounds a multiply-add twice (backend.aten_arith), the CPU path fuses it
    # as PyTorch's CPU kernels do; the reference here rounds as the CUDA path, so the runs
    # compare the two paths' algorithms. (Fused or not makes more than ulps here: attention's
    # key bias gets gradients of pure rounding noise, which RMSprop scales to lr-sized steps.)
    with monkeypatch.context() as unfused:
        unfused.setattr(aten_arith, "_build_fuses", lambda: False)
        cpu_losses = _train(cpu_model, "cpu", opt_name, STORAGES[storage], x, y)
    cuda_losses = _train(cuda_model, "cuda", opt_name, STORAGES[storage], x, y)
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=1e-5, atol=1e-6)
    assert cpu_losses[-1] != cpu_losses[0]  # it did train
    for (name, p), q in zip(cpu_model.named_parameters(), cuda_model.parameters(),
                            strict=True):
        assert q.is_cuda and q.dtype == p.dtype
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
