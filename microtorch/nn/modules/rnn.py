"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

Parameters, their names, order, shapes and initialisation are PyTorch's, so state dicts load
across and ``manual_seed`` gives the same weights. Each layer and direction runs as one fused
node (``ops.rnn``): its input projection over the whole sequence, then the recurrence.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..._tensor import Tensor
from ...autograd.function import named
from ...ops import rnn as rnn_ops
from ...ops.creation import empty, tensor, zeros
from ...ops.shape import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _lengths_list, _pack_index
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")


def _reset_uniform(module: Module) -> None:
    """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order
    (PyTorch's draw order)."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


def _no_proj_size(kwargs: dict, name: str) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"{name}.__init__() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")


class RNNBase(Module):
    """Parameters, checks and the layer loop shared by ``RNN``, ``LSTM`` and ``GRU``."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int),
                                  ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                                f"{type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size

        gate_size = rnn_ops.GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input),
                          "weight_hh": (gate_size, real_hidden)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():  # registration order = PyTorch's
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def flatten_parameters(self) -> None:
        """A no-op kept for compatibility (cuDNN's weight packing in PyTorch)."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, as PyTorch lists them."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    # -- checks ------------------------------------------------------------------------------
    def _check_input(self, input: Tensor, dims: int = 3) -> None:
        """PyTorch's checks of an input of ``dims`` dimensions (2: a packed sequence's data)."""
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight.dtype}). Convert input: input.to({weight.dtype}), or "
                             f"convert model: model.to({input.dtype})")
        if input.dim() != dims:
            raise RuntimeError(f"input must have {dims} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _state_shapes(self, batch: int) -> tuple[tuple, tuple]:
        """Shapes of h0 (proj_size or hidden_size) and c0 (hidden_size) for ``batch``."""
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return (layers, batch, self.proj_size or self.hidden_size), \
            (layers, batch, self.hidden_size)

    @staticmethod
    def _check_state(input: Tensor, hx: Tensor, expected: tuple,
                     msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))
        if hx.dtype != input.dtype:
            raise RuntimeError(f"hidden state dtype ({hx.dtype}) does not match input dtype "
                               f"({input.dtype})")

    def _batch(self, input: Tensor, name: str) -> tuple[Tensor, bool]:
        """Input as 3-D (a batch of one for unbatched 2-D input) and whether it was batched."""
        if input.dim() not in (2, 3):
            tensor = " tensor" if name == "RNN" else ""  # (PyTorch's wording varies)
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                             f"{tensor} instead")
        if input.dim() == 3:
            return input, True
        return input.unsqueeze(0 if self.batch_first else 1), False

    # -- the layer loop ----------------------------------------------------------------------
    def _run(self, input: Tensor, h0: Tensor, c0: Tensor | None
             ) -> tuple[Tensor, Tensor, Tensor | None]:
        """(output, h_n, c_n) of checked 3-D input and full initial states."""
        x = input.transpose(0, 1) if self.batch_first else input  # time-major from here on
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        x, h_n, c_n = self._layers(x, h0, c0)
        return self._named_output(x), h_n, c_n

    def _run_packed(self, data: Tensor, sizes: list[int], h0: Tensor, c0: Tensor | None
                    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """``_run`` on packed data (T, H_in) with its batch sizes (sorted batch order):
        (packed output data, h_n, c_n). Each layer takes its input padded (time-major, zero
        rows past each sequence's end) and steps only each time step's leading
        ``batch_sizes[t]`` rows, so every sequence's final state is its own last."""
        steps, n = len(sizes), sizes[0]
        rows, src = _pack_index(sizes, n, steps, data.shape[0])
        gather = tensor(src, device=data.device)  # padded position -> packed row (or the zero row)
        scatter = tensor(rows, device=data.device)  # packed row -> padded position

        def to_padded(x: Tensor) -> Tensor:  # (rows past a step's batch size: zeros, unused)
            zero_row = zeros((1, x.shape[1]), dtype=x.dtype, device=x.device)
            return cat([x, zero_row])[gather].reshape(steps, n, x.shape[1])

        def to_packed(out: Tensor) -> Tensor:
            return out.reshape(steps * n, out.shape[2])[scatter]

        return self._layers(data, h0, c0, sizes, to_padded, to_packed)

    def _layers(self, x: Tensor, h0: Tensor, c0: Tensor | None, batch_sizes=None,
                to_padded=None, to_packed=None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every layer and direction over ``x``: time-major (L, N, H_in), or packed rows with
        their ``batch_sizes`` and the maps between packed rows and the padded (L, N, G) layout
        the recurrence runs on. (last layer's output, h_n, c_n)."""
        directions = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            padded = x if to_padded is None else to_padded(x)  # (L, N, H_in), time-major
            for direction in range(directions):
                k = layer * directions + direction
                names = self._all_weights[k]
                w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
                b_ih = getattr(self, names[2]) if self.bias else None
                b_hh = getattr(self, names[3]) if self.bias else None
                w_hr = getattr(self, names[-1]) if self.proj_size > 0 else None
                out, h, c = rnn_ops.recurrence(self.mode, padded, w_ih, b_ih, h0[k],
                                               None if c0 is None else c0[k], w_hh, b_hh,
                                               w_hr, reverse=direction == 1,
                                               batch_sizes=batch_sizes)
                outs.append(out if to_packed is None else to_packed(out))
                hs.append(h)
                cs.append(c)
            x = outs[0] if directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                # F.dropout on each layer's (time-major) output: PyTorch's CPU draw order.
                x = F.dropout(x, self.dropout, True)
        return x, stack(hs), stack(cs) if c0 is not None else None

    def _forward_packed(self, input, hx: Tensor | None, cx: Tensor | None, lstm: bool):
        """forward of a PackedSequence: PyTorch's order (states into sorted batch order, run,
        states back into the original order)."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = _lengths_list(batch_sizes)
        h_shape, c_shape = self._state_shapes(sizes[0])
        if hx is None:
            hx = zeros(h_shape, dtype=data.dtype, device=data.device)
            cx = zeros(c_shape, dtype=data.dtype, device=data.device) if lstm else None
        elif sorted_indices is not None:
            hx = hx.index_select(1, sorted_indices)
            cx = cx.index_select(1, sorted_indices) if lstm else None
        self._check_input(data, 2)
        if lstm:
            self._check_state(data, hx, h_shape, "Expected hidden[0] size {}, got {}")
            self._check_state(data, cx, c_shape, "Expected hidden[1] size {}, got {}")
        else:
            self._check_state(data, hx, h_shape)
        out, h_n, c_n = self._run_packed(data, sizes, hx, cx)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if lstm else None
        packed = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
        return (packed, (h_n, c_n)) if lstm else (packed, h_n)

    def _named_output(self, x: Tensor) -> Tensor:
        """The time-major last layer's output ``x``, batch-first if so asked, with the node
        name PyTorch's CPU output has: the transpose back (a different overload for the
        LSTM), the concatenated directions, the oneDNN LSTM layer (float32 without
        projections) or the stacked time steps."""
        if self.batch_first:
            return named(x.transpose(0, 1), "TransposeBackward0" if self.mode == "LSTM" else
                         "TransposeBackward1")
        if not self.bidirectional:
            onednn = self.mode == "LSTM" and self.proj_size == 0 and \
                x._data.dtype.name == "float32"
            named(x, "MkldnnRnnLayerBackward0" if onednn else "StackBackward0")
        return x

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act tanh or relu.

    ``forward(input, hx=None)`` -> ``(output, h_n)``; input (L, N, H_in), (N, L, H_in) with
    ``batch_first`` or unbatched (L, H_in), or a ``PackedSequence`` (then output is packed and
    h_n holds each sequence's state after its own last step); hx (num_layers * directions, N,
    H).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None,
                 **kwargs) -> None:
        _no_proj_size(kwargs, "RNN")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run the sequence: (output, h_n)."""
        return _single_state_forward(self, "RNN", input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gate order r, z, n)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    ``forward(input, hx=None)`` -> ``(output, h_n)`` with ``RNN``'s shapes.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, **kwargs) -> None:
        _no_proj_size(kwargs, "GRU")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run the sequence: (output, h_n)."""
        return _single_state_forward(self, "GRU", input, hx)


def _single_state_forward(module: RNNBase, name: str, input: Tensor, hx: Tensor | None
                          ) -> tuple[Tensor, Tensor]:
    """RNN's and GRU's forward: PyTorch's checks in PyTorch's order, then the layer loop."""
    if isinstance(input, PackedSequence):
        return module._forward_packed(input, hx, None, lstm=False)
    x, batched = module._batch(input, name)
    if hx is not None:
        rank = 3 if batched else 2
        if hx.dim() != rank:
            raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, hx "
                               f"should also be {rank}-D but got {hx.dim()}-D tensor")
        if not batched:
            hx = hx.unsqueeze(1)
    module._check_input(x)
    expected = module._state_shapes(x.shape[0 if module.batch_first else 1])[0]
    if hx is None:
        hx = zeros(expected, dtype=x.dtype, device=x.device)
    module._check_state(x, hx, expected)
    output, h_n, _ = module._run(x, hx, None)
    if not batched:
        return output.squeeze(0 if module.batch_first else 1), h_n.squeeze(1)
    return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's formulation (gate order i, f, g, o)::

        i, f, o = sigmoid(...), g = tanh(...)   (each W_i* x + b_i* + W_h* h + b_h*)
        c' = f * c + i * g
        h' = o * tanh(c')     (then h' W_hr^T when proj_size > 0)

    ``forward(input, (h0, c0)=None)`` -> ``(output, (h_n, c_n))``; h0 and h_n are
    (num_layers * directions, N, proj_size or hidden_size), c0 and c_n (..., N, hidden_size).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Run the sequence: (output, (h_n, c_n))."""
        if isinstance(input, PackedSequence):
            if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            h0, c0 = (None, None) if hx is None else hx
            return self._forward_packed(input, h0, c0, lstm=True)
        x, batched = self._batch(input, "LSTM")
        h_shape, c_shape = self._state_shapes(x.shape[0 if self.batch_first else 1])
        if hx is None:
            h0 = zeros(h_shape, dtype=x.dtype, device=x.device)
            c0 = zeros(c_shape, dtype=x.dtype, device=x.device)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            h0, c0 = hx
            rank = 3 if batched else 2
            if h0.dim() != rank or c0.dim() != rank:
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} "
                                   f"input, hx and cx should also be {rank}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self._check_input(x)
        self._check_state(x, h0, h_shape, "Expected hidden[0] size {}, got {}")
        self._check_state(x, c0, c_shape, "Expected hidden[1] size {}, got {}")
        output, h_n, c_n = self._run(x, h0, c0)
        if not batched:
            return output.squeeze(0 if self.batch_first else 1), (h_n.squeeze(1),
                                                                   c_n.squeeze(1))
        return output, (h_n, c_n)


# -- cells ---------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters and checks shared by the cells: weight_ih, weight_hh, bias_ih, bias_hh."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(empty((gates, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((gates, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(gates, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(gates, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform(self)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, name: str, input: Tensor, states: tuple, labels: tuple
                 ) -> tuple[Tensor, tuple, bool]:
        """Batch unbatched input and states, default them to zeros, and check their sizes."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        for label, state in zip(labels, states):
            if state is not None and state.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got "
                                 f"{state.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = tuple(s if s is None else s.unsqueeze(0) for s in states)
        n = input.shape[0]
        states = tuple(zeros((n, self.hidden_size), dtype=input.dtype, device=input.device)
                       if s is None else s for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        for i, s in enumerate(states):
            if s.shape[0] != n:
                raise RuntimeError(f"Input batch size {n} doesn't match hidden{i} batch size "
                                   f"{s.shape[0]}")
            if s.dim() != 2 or s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got "
                                   f"{s.shape[1] if s.dim() > 1 else s.shape}, expected "
                                   f"{self.hidden_size}")
        return input, states, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """h' from input (N, H_in) or (H_in,) and hx (N, H) or (H,), zeros by default."""
        x, (h,), batched = self._prepare("RNNCell", input, (hx,), ("hidden",))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = rnn_ops.rnn_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih,
                               self.bias_hh, relu=self.nonlinearity == "relu")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gate order i, f, g, o): ``(h', c')`` from input and ``(h, c)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        """(h', c') from input (N, H_in) or (H_in,) and (h, c), zeros by default."""
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("LSTMCell: hx must be a tuple (h, c) of two tensors")
        states = (None, None) if hx is None else tuple(hx)
        x, (h, c), batched = self._prepare("LSTMCell", input, states, ("hx[0]", "hx[1]"))
        h, c = rnn_ops.lstm_cell(x, h, c, self.weight_ih, self.weight_hh, self.bias_ih,
                                 self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (gate order r, z, n; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """h' from input (N, H_in) or (H_in,) and hx (N, H) or (H,), zeros by default."""
        x, (h,), batched = self._prepare("GRUCell", input, (hx,), ("hidden",))
        out = rnn_ops.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
