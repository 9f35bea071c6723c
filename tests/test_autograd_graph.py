"""``autograd.graph``: saved-tensor hooks (pack/unpack at the save point of every op), save_on_cpu,
disable_saved_tensors_hooks, register_multi_grad_hook, Node hooks, gradient edges, against
PyTorch's own documentation examples and behaviour."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import microtorch as mt

torch = pytest.importorskip("torch")


def _both(fn):
    """``fn(module, device)`` for microtorch and PyTorch (PyTorch on the CPU)."""
    return fn(mt), fn(torch)


def _run(lib, device, fn):
    return fn(lib, device if lib is mt else "cpu")


# -- saved_tensors_hooks ----------------------------------------------------------------------
def test_docs_example_packs_and_unpacks_as_pytorch(capsys, device) -> None:
    def example(lib, dev):
        def pack_hook(x):
            print("Packing", x)
            return x.detach()

        def unpack_hook(x):
            print("Unpacking", x)
            return x

        a = lib.ones(5, requires_grad=True, device=dev)
        b = lib.ones(5, requires_grad=True, device=dev) * 2
        with lib.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = a * b
        y.sum().backward()
        return a.grad

    results = []
    for lib in (mt, torch):
        grad = _run(lib, device, example)
        out = capsys.readouterr().out.replace(", device='cuda:0'", "")
        results.append((out, grad.tolist()))
    assert results[0] == results[1]
    assert results[0][0].count("Packing") == 2 and results[0][0].count("Unpacking") == 2


def _log_ops(lib, device):
    f = lib.nn.functional
    lib.manual_seed(0)
    a = lib.randn(4, 3, requires_grad=True).to(device).detach().requires_grad_()
    b = lib.randn(4, 3, requires_grad=True).to(device).detach().requires_grad_()
    w = lib.randn(5, 3).to(device).requires_grad_()
    tgt = lib.tensor([0, 2, 1, 2]).to(device)
    return {
        "mul": lambda: a * b, "mul_scalar": lambda: a * 2.0, "div": lambda: a / b,
        "add": lambda: a + b, "exp": lambda: a.exp(), "tanh": lambda: a.tanh(),
        "sigmoid": lambda: a.sigmoid(), "relu": lambda: a.relu(), "sin": lambda: a.sin(),
        "log": lambda: a.abs().log(), "sqrt": lambda: a.abs().sqrt(), "sum": lambda: a.sum(),
        "mean": lambda: a.mean(), "softmax": lambda: a.softmax(1),
        "log_softmax": lambda: a.log_softmax(1),
        "reshape": lambda: a.reshape(3, 4), "index": lambda: a[1:3], "t": lambda: a.t(),
        "cat": lambda: lib.cat([a, b]), "where": lambda: lib.where(a > 0, a, b),
        "clamp": lambda: a.clamp(-0.5, 0.5), "norm": lambda: a.norm(), "max": lambda: a.max(),
        "embedding": lambda: f.embedding(tgt, w), "abs": lambda: a.abs(),
    }


@pytest.mark.parametrize("op", sorted(_log_ops(mt, "cpu")))
def test_ops_pack_and_unpack_what_pytorch_does(op, device) -> None:
    """Which tensors each op saves (shape, dtype, in order) and when backward unpacks them."""
    def run(lib, dev):
        log = []

        def pack(t):
            log.append(("pack", tuple(t.shape), str(t.dtype).split(".")[-1],
                        t.grad_fn.name() if t.grad_fn is not None else None, t.requires_grad))
            return t

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t

        fn = _log_ops(lib, dev)[op]
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = fn()
        log.append("backward")
        out.sum().backward()
        return log

    assert _run(mt, device, run) == _run(torch, device, run)


def test_unpacked_tensors_keep_their_place_in_the_graph(device) -> None:
    """Hooks that copy: double backward still reaches leaves and inner nodes (PyTorch
    rebuilds the unpacked tensor with the original's grad_fn or grad accumulator)."""
    def run(lib, dev):
        lib.manual_seed(0)
        x = lib.randn(4).to(dev).requires_grad_()
        w = lib.randn(4).to(dev).requires_grad_()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = ((x * x) * w).sin()
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg = lib.autograd.grad(g.sum(), [x, w])
        return [t.detach().cpu().numpy() for t in (g, *gg)]

    for got, want in zip(_run(mt, device, run), _run(torch, device, run)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # float32, same formula


def test_saved_output_unpacks_with_its_node() -> None:
    def run(lib):
        seen = []

        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x.exp()
                ctx.save_for_backward(x, out)
                return out

            @staticmethod
            def backward(ctx, g):
                x, out = ctx.saved_tensors
                seen.append((x.requires_grad, x.grad_fn, out.requires_grad,
                             out.grad_fn.name()))
                return g * out

        x = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            y = Exp.apply(x)
        y.sum().backward()
        return seen, x.grad.tolist()

    (seen, grad), (tseen, tgrad) = run(mt), run(torch)
    assert seen == tseen
    np.testing.assert_allclose(grad, tgrad, rtol=1e-6)  # float32 exp: within an ulp of PyTorch


def test_innermost_hooks_apply_and_hooks_belong_to_their_thread() -> None:
    log = []
    outer = mt.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t,
                                                  lambda t: t)
    inner = mt.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                  lambda t: t)
    x = mt.ones(2, requires_grad=True)
    with outer:
        x.exp()
        with inner:
            x.exp()
            worker = threading.Thread(target=lambda: x.sin())  # no hooks in another thread
            worker.start()
            worker.join()
        x.exp()
    x.exp()
    assert log == ["outer", "inner", "outer"]


def test_pack_hook_modifying_its_input_raises_pytorchs_error() -> None:
    def run(lib):
        a = lib.ones(3, requires_grad=True).clone()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
            with pytest.raises(RuntimeError) as info:
                a * a
        return str(info.value)

    assert run(mt) == run(torch)


def test_unpack_hook_returning_no_tensor_raises_pytorchs_error() -> None:
    def run(lib):
        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
            y = (a * a).sum()
        with pytest.raises(TypeError) as info:
            y.backward()
        return str(info.value)

    assert run(mt) == run(torch)


def test_hooks_own_the_data_no_version_check() -> None:
    """With hooks, an in-place change after saving is the hooks' business (no error): a
    hook that copied sees the old values, as in PyTorch."""
    def run(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a.clone()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (b * b).sum()
        with lib.no_grad():
            b.mul_(10)
        y.backward()
        return a.grad.tolist()

    assert run(mt) == run(torch) == [2.0, 4.0, 6.0]


def test_unpack_runs_at_every_backward_and_packed_values_are_freed(device) -> None:
    unpacked = []

    class Box:
        alive = 0

        def __init__(self, t):
            self.t = t
            Box.alive += 1

        def __del__(self):
            Box.alive -= 1

    x = mt.ones(3, requires_grad=True, device=device)
    with mt.autograd.graph.saved_tensors_hooks(Box, lambda box: unpacked.append(1) or box.t):
        y = (x.exp() * x).sum()
    assert Box.alive == 3  # exp's output, and both factors of the product
    y.backward(retain_graph=True)
    assert len(unpacked) == 3 and Box.alive == 3
    y.backward()
    assert len(unpacked) == 6 and Box.alive == 0  # freed with the graph's saved values
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_file_backed_hooks_of_the_autograd_notes(tmp_path) -> None:
    """PyTorch's autograd notes: saved tensors written to disk by the pack hook."""
    files = iter(range(100))

    def pack_hook(t):
        name = tmp_path / f"{next(files)}.pt"
        mt.save(t, name)
        return name

    def unpack_hook(name):
        return mt.load(name)

    x = mt.linspace(-1, 1, 5, dtype=mt.float64, requires_grad=True)
    with mt.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = (x.tanh() * x).sum()
    y.backward()
    assert len(list(tmp_path.iterdir())) == 3  # tanh's output, both factors of the product
    tx = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    (tx.tanh() * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    plain = mt.linspace(-1, 1, 5, dtype=mt.float64, requires_grad=True)
    (plain.tanh() * plain).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), plain.grad.numpy())


def test_disable_saved_tensors_hooks() -> None:
    for lib in (mt, torch):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("saved tensors default hooks are disabled"):
            with pytest.raises(RuntimeError, match="^saved tensors default hooks are disabled$"):
                with graph.save_on_cpu():
                    pass
            with graph.disable_saved_tensors_hooks("inner"):
                with pytest.raises(RuntimeError, match="^inner$"):
                    graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
            with pytest.raises(RuntimeError, match="^saved tensors default hooks"):
                graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again
            with pytest.raises(RuntimeError, match="^no$"):  # disabling under hooks raises
                with graph.disable_saved_tensors_hooks("no"):
                    pass
            lib.ones(2, requires_grad=True).exp()


# -- save_on_cpu ------------------------------------------------------------------------------
def test_save_on_cpu_keeps_saved_tensors_in_host_memory(device) -> None:
    mt.manual_seed(0)
    x = mt.randn(64, 64, device=device, requires_grad=True)
    w = mt.randn(64, 64, device=device, requires_grad=True)
    grads = []
    for offload in (False, True):
        x.grad = w.grad = None
        if device == "cuda":
            before = mt.cuda.memory_allocated()
        hooks = mt.autograd.graph.save_on_cpu() if offload else \
            mt.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        with hooks:
            y = (x @ w).sin()
            z = (y * y).sum()
        if device == "cuda":
            held = mt.cuda.memory_allocated() - before
            # y and z live on; the product x @ w, saved by sin, stays on the GPU only without
            # save_on_cpu (the other saved tensors, x, w and y, are alive anyway).
            assert held == (64 * 64 * 4) * (1 if offload else 2) + 4, held
        z.backward()
        grads.append((x.grad.cpu().numpy(), w.grad.cpu().numpy()))
        y = z = None
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("pin", [False, True])
def test_save_on_cpu_packs_to_host_and_back(device, pin) -> None:
    hooks = mt.autograd.graph.save_on_cpu(pin_memory=pin)
    t = mt.arange(6.0, device=device).reshape(2, 3)
    dev, packed = hooks.pack_hook(t)
    assert dev == t.device and packed.device.type == "cpu"
    if pin and mt.cuda.is_available():
        assert packed.is_pinned()
    back = hooks.unpack_hook((dev, packed))
    assert back.device == t.device
    np.testing.assert_array_equal(back.cpu().numpy(), t.cpu().numpy())


# -- register_multi_grad_hook -----------------------------------------------------------------
def test_multi_grad_hook_docs_example(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        a = lib.rand(2, 3, requires_grad=True)
        b = lib.rand(2, 3, requires_grad=True)
        c = a * b
        d = a * b

        def fn(grads):
            print([g is not None for g in grads])

        handle = lib.autograd.graph.register_multi_grad_hook((a, b, c, d), fn)
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward(retain_graph=True)
        handle.remove()
        c.sum().backward(retain_graph=True)

        def first(grad):
            print("any", tuple(grad.shape))

        handle = lib.autograd.graph.register_multi_grad_hook((a, b, c, d), first, mode="any")
        (c + d).sum().backward(retain_graph=True)
        d.sum().backward(inputs=(b,), retain_graph=True)
        handle.remove()
        with pytest.raises(RuntimeError) as info:  # a leaf's hook under autograd.grad
            lib.autograd.graph.register_multi_grad_hook((a, b), fn)
            lib.autograd.grad(c.sum(), (a,))
        print(info.value)
        with pytest.raises(ValueError) as info:
            lib.autograd.graph.register_multi_grad_hook((a,), fn, mode="some")
        print(info.value)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("[True, True, True, False]\n[True, False, True, False]\n")


# -- Node -------------------------------------------------------------------------------------
def test_node_docs_examples(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        a = lib.tensor([0.0, 0.0, 0.0], requires_grad=True)
        b = a.clone()
        assert isinstance(b.grad_fn, lib.autograd.graph.Node)
        print(b.grad_fn.name())
        handle = b.grad_fn.register_hook(lambda gI, gO: (gO[0] * 2,))
        b.sum().backward(retain_graph=True)
        print(a.grad)
        handle.remove()
        a.grad = None
        b.sum().backward(retain_graph=True)
        print(a.grad)
        handle = b.grad_fn.register_prehook(lambda gI: (gI[0] * 2,))
        a.grad = None
        b.sum().backward(retain_graph=True)
        print(a.grad)
        handle.remove()
        a.grad = None
        b.sum().backward(retain_graph=True)
        print(a.grad)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_node_hook_order_arguments_and_errors(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: print("tensor hook", g) or g + 1)
        y.retain_grad()
        y.grad_fn.register_prehook(lambda go: print("pre", go) or None)
        y.grad_fn.register_hook(lambda gi, go: print("post", gi, go) or None)
        y.sum().backward(retain_graph=True)
        print(x.grad, y.grad)
        z = x * 3
        z.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))  # the number's slot is None
        with pytest.raises(RuntimeError) as info:
            z.sum().backward(retain_graph=True)
        print(info.value)
        z = x * 3
        z.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        with pytest.raises(RuntimeError) as info:
            z.sum().backward()
        print(info.value)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_node_hooks_on_a_function_with_several_outputs(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 * 2 + g2 * 3

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = Split.apply(x)
        a.grad_fn.register_prehook(lambda go: print("pre", go) or (go[0] * 10, go[1]))
        a.grad_fn.register_hook(lambda gi, go: print("post", gi, go) or None)
        (a.sum() + b.sum()).backward()
        print(x.grad)
        outputs.append(capsys.readouterr().out.replace("<SplitBackward>", ""))
    assert outputs[0] == outputs[1]


def test_accumulate_grad_node_hooks_and_metadata(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 3
        acc = b.grad_fn.next_functions[0][0]
        acc.metadata["x"] = 1
        print(acc.name(), b.grad_fn.next_functions[0][0].metadata)
        a.register_hook(lambda g: print("tensor hook", g) or g * 2)
        pre = acc.register_prehook(lambda go: print("pre", go) or (go[0] + 1,))
        post = acc.register_hook(lambda gi, go: print("post", gi, go))
        a.register_post_accumulate_grad_hook(lambda t: print("post accumulate", t.grad))
        b.sum().backward(retain_graph=True)
        b.sum().backward(inputs=[a], retain_graph=True)
        print(lib.autograd.grad(b.sum(), a, retain_graph=True))  # no accumulation: no hooks
        pre.remove()
        post.remove()
        a.grad = None
        b.sum().backward()
        print(a.grad)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_node_metadata_and_name() -> None:
    x = mt.ones(2, requires_grad=True)
    y = x.exp()
    assert y.grad_fn.metadata == {}
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata is y.grad_fn.metadata and y.grad_fn.metadata["tag"] == 1
    assert y.grad_fn.name() == torch.ones(2, requires_grad=True).exp().grad_fn.name()
    assert isinstance(y.grad_fn.next_functions[0][0], mt.autograd.graph.Node)
    assert not isinstance(x, mt.autograd.graph.Node)


# -- gradient edges, increment_version --------------------------------------------------------
def test_gradient_edges(device) -> None:
    x = mt.arange(3.0, device=device).requires_grad_()
    y = x * x
    z = (y * 2.0).sum()
    edge_x = mt.autograd.graph.get_gradient_edge(x)
    edge_y = mt.autograd.graph.get_gradient_edge(y)
    assert edge_x.node.name() == "torch::autograd::AccumulateGrad" and edge_x.output_nr == 0
    assert edge_y.node is y.grad_fn
    gx, gy = mt.autograd.grad(z, (edge_x, edge_y), retain_graph=True)
    rx, ry = mt.autograd.grad(z, (x, y))
    assert mt.equal(gx, rx) and mt.equal(gy, ry)
    for lib in (mt, torch):
        with pytest.raises(RuntimeError, match="^It is not possible to get the gradient edge "
                                               "for a Tensor that does not require gradients$"):
            lib.autograd.graph.get_gradient_edge(lib.ones(2))
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the "
                                               "given input is a GradientEdge"):
            lib.autograd.grad((a * 2).sum(), lib.autograd.graph.get_gradient_edge(b),
                              allow_unused=True, materialize_grads=True)


def test_increment_version() -> None:
    messages = []
    for lib in (mt, torch):
        x = lib.ones(3, requires_grad=True)
        y = x.clone()
        z = (y * y).sum()
        v = y._version
        lib.autograd.graph.increment_version(y)
        lib.autograd.graph.increment_version([y, x])
        assert y._version == v + 2
        with pytest.raises(RuntimeError) as info:
            z.backward()
        messages.append(str(info.value).split(" Hint")[0].replace("microtorch.", "torch."))
    assert messages[0] == messages[1]


# -- allow_mutation_on_saved_tensors ----------------------------------------------------------
def test_allow_mutation_on_saved_tensors(capsys) -> None:
    outputs = []
    for lib in (mt, torch):
        graph = lib.autograd.graph
        with graph.allow_mutation_on_saved_tensors():  # PyTorch's documentation example
            a = lib.ones(2, 3, requires_grad=True)
            b = a.clone()
            out = (b**2).sum()
            print(b.sin_())
            out.sum().backward()
        print(a.grad)
        with graph.allow_mutation_on_saved_tensors() as ctx:
            a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            b = a * 1
            c = b.exp()
            with lib.no_grad():
                b.add_(10)
                b[0] = 7
                b.zero_()
                b.fill_(2)
                b.copy_(lib.ones(3))
                b.uniform_()
                lib.nn.init.ones_(b)
                lib.mul(b, 3, out=b)
            (c * b).sum().backward()
            print(a.grad, len(ctx.cloned), len(ctx.original))
        print(len(ctx.cloned), len(ctx.original))
        with pytest.raises(RuntimeError) as info:
            with graph.allow_mutation_on_saved_tensors():
                with graph.allow_mutation_on_saved_tensors():
                    pass
        print(info.value)
        with graph.allow_mutation_on_saved_tensors():
            a = lib.ones(3, requires_grad=True)
            y = (a * a).sum()
        with pytest.raises(AssertionError) as info:
            y.backward()
        print(info.value)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
