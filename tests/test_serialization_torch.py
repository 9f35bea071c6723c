"""Checkpoints move between PyTorch and microtorch both ways: state dicts, shared storages and
views, every dtype, and optimizer states that give the same next step; safetensors files
written by safetensors.torch and by microtorch read in the other."""

from __future__ import annotations

import collections
import io

import numpy as np
import pytest

import microtorch
from microtorch import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _values(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([[True, False, True], [False, False, True]])
    return (np.arange(6).reshape(2, 3) * 3 - 4).astype(dtype) if dtype != "uint8" else \
        np.arange(6, dtype=np.uint8).reshape(2, 3) * 40


def test_torch_reads_microtorch_checkpoint(tmp_path):
    flat = microtorch.arange(12.0)
    state = collections.OrderedDict(
        {f"t_{d}": microtorch.tensor(_values(d)) for d in _DTYPES})
    state.update(flat=flat, view=flat[2:8].view(2, 3).t(), strided=flat[1::4],
                 param=nn.Parameter(microtorch.ones(2)), scalar=microtorch.tensor(1.5),
                 meta={"epoch": 3, "names": ["a", "b"], "pair": (1, None)},
                 dtype=microtorch.float64, device=microtorch.device("cpu"))
    path = tmp_path / "mt.pt"
    microtorch.save(state, path)
    out = torch.load(path, weights_only=True)
    assert list(out) == list(state)
    for d in _DTYPES:
        t = out[f"t_{d}"]
        assert t.dtype == getattr(torch, d) and t.numpy().tolist() == _values(d).tolist(), d
    view = out["view"]
    assert view.shape == (3, 2) and view.stride() == (1, 3) and view.storage_offset() == 2
    assert view.untyped_storage().data_ptr() == out["flat"].untyped_storage().data_ptr()
    assert out["strided"].tolist() == [1.0, 5.0, 9.0]
    out["flat"][2] = -7.0  # shared storage, as saved
    assert view[0, 0].item() == -7.0
    assert isinstance(out["param"], torch.nn.Parameter) and out["param"].requires_grad
    assert out["scalar"].shape == () and out["scalar"].item() == 1.5
    assert out["meta"] == {"epoch": 3, "names": ["a", "b"], "pair": (1, None)}
    assert out["dtype"] is torch.float64 and out["device"] == torch.device("cpu")


def test_microtorch_reads_torch_checkpoint(tmp_path):
    flat = torch.arange(12.0)
    state = collections.OrderedDict({f"t_{d}": torch.from_numpy(_values(d)) for d in _DTYPES})
    state.update(flat=flat, view=flat[2:8].view(2, 3).t(), strided=flat[1::4],
                 param=torch.nn.Parameter(torch.ones(2)), bf16=torch.ones(3, dtype=torch.bfloat16),
                 meta={"epoch": 3, "set": {1, 2}}, dtype=torch.float16,
                 device=torch.device("cpu"), size=torch.Size([2, 3]))
    path = tmp_path / "torch.pt"
    torch.save(state, path)
    if not hasattr(microtorch, "bfloat16"):
        with pytest.raises(pickle_error(), match="BFloat16Storage"):
            microtorch.load(path)
        del state["bf16"]
        torch.save(state, path)
    out = microtorch.load(path)
    for d in _DTYPES:
        t = out[f"t_{d}"]
        assert t.dtype == getattr(microtorch, d) and t.tolist() == _values(d).tolist(), d
    assert out["view"].tolist() == flat[2:8].view(2, 3).t().tolist()
    out["flat"][3] = -1.0
    assert out["view"][1, 0].item() == -1.0  # one storage, still shared
    assert out["strided"].tolist() == [1.0, 5.0, 9.0]
    assert type(out["param"]) is nn.Parameter and out["param"].requires_grad
    assert out["meta"] == {"epoch": 3, "set": {1, 2}}
    assert out["dtype"] is microtorch.float16 and out["size"] == (2, 3)
    if hasattr(microtorch, "bfloat16"):
        assert out["bf16"].dtype == microtorch.bfloat16


def pickle_error():
    import pickle

    return pickle.UnpicklingError


def test_torch_module_state_dict_with_metadata_loads_into_microtorch(tmp_path):
    tmodel = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                                 torch.nn.Flatten(), torch.nn.Linear(12, 4))
    buf = io.BytesIO()
    torch.save(tmodel.state_dict(), buf)  # an OrderedDict with a _metadata attribute
    buf.seek(0)
    state = microtorch.load(buf)
    assert list(state) == list(tmodel.state_dict()) and hasattr(state, "_metadata")
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Flatten(), nn.Linear(12, 4))
    model.load_state_dict(state)
    model.eval()
    tmodel.eval()
    x = np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(model(microtorch.tensor(x)).detach().numpy(),
                               tmodel(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


# ------------------------------------------------------------ optimizer states, next step


def _data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((8, 5)).astype(np.float32), \
        rng.standard_normal((8, 2)).astype(np.float32)


def _step(fw, model, opt, x, y) -> None:
    opt.zero_grad()
    loss = ((model(fw.tensor(x)) - fw.tensor(y)) ** 2).mean()
    loss.backward()
    opt.step()


_OPTIMIZERS = {
    "sgd_momentum": lambda fw, p: fw.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda fw, p: fw.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.01),
    "adamw_amsgrad": lambda fw, p: fw.optim.AdamW(p, lr=0.01, amsgrad=True),
}


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
@pytest.mark.parametrize("saver", ["microtorch", "torch"])
def test_optimizer_state_gives_the_same_next_step(tmp_path, name, saver):
    x, y = _data()
    frameworks = {"microtorch": microtorch, "torch": torch}
    src_fw = frameworks[saver]
    dst_fw = frameworks["torch" if saver == "microtorch" else "microtorch"]
    src_fw.manual_seed(0)
    src = src_fw.nn.Sequential(src_fw.nn.Linear(5, 4), src_fw.nn.Tanh(), src_fw.nn.Linear(4, 2))
    src_opt = _OPTIMIZERS[name](src_fw, src.parameters())
    for _ in range(3):
        _step(src_fw, src, src_opt, x, y)
    path = tmp_path / "ckpt.pt"
    src_fw.save({"model": src.state_dict(), "opt": src_opt.state_dict()}, path)
    _step(src_fw, src, src_opt, x, y)  # the reference next step

    ckpt = dst_fw.load(path, weights_only=True)
    dst = dst_fw.nn.Sequential(dst_fw.nn.Linear(5, 4), dst_fw.nn.Tanh(), dst_fw.nn.Linear(4, 2))
    dst.load_state_dict(ckpt["model"])
    dst_opt = _OPTIMIZERS[name](dst_fw, dst.parameters())
    dst_opt.load_state_dict(ckpt["opt"])
    _step(dst_fw, dst, dst_opt, x, y)
    for (k, a), b in zip(src.state_dict().items(), dst.state_dict().values()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


# ---------------------------------------------------------------------------- safetensors


def test_safetensors_both_ways(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    from microtorch.utils import safetensors as st

    mine = {"w": microtorch.randn(3, 4), "i": microtorch.arange(5), "b": microtorch.tensor([True]),
            "h": microtorch.ones(2, dtype=microtorch.float16)}
    st.save_file(mine, tmp_path / "mt.safetensors", metadata={"format": "pt"})
    theirs = safetensors_torch.load_file(tmp_path / "mt.safetensors")
    for k, v in mine.items():
        assert theirs[k].numpy().tolist() == v.tolist() and str(theirs[k].dtype)[6:] == \
            v.dtype.name, k
    assert st.load_metadata(tmp_path / "mt.safetensors") == {"format": "pt"}

    tensors = {"a": torch.randn(2, 3), "n": torch.arange(4, dtype=torch.int32)}
    safetensors_torch.save_file(tensors, tmp_path / "t.safetensors")
    back = st.load_file(tmp_path / "t.safetensors")
    assert back["a"].tolist() == tensors["a"].tolist() and back["n"].dtype == microtorch.int32
    again = microtorch.load(tmp_path / "t.safetensors")  # load() recognises the format
    assert again["a"].tolist() == tensors["a"].tolist()
    assert st.load(safetensors_torch.save(tensors))["n"].tolist() == [0, 1, 2, 3]
    assert safetensors_torch.load(st.save(mine))["i"].tolist() == [0, 1, 2, 3, 4]


def test_safetensors_load_copies_each_tensor_once(tmp_path):
    """Loading a 48 MiB file allocates about 48 MiB (each tensor read straight into its
    array), where reading the file, deserializing and copying held ~2.9 times the file."""
    import tracemalloc

    from microtorch.utils import safetensors as st

    tensors = {f"w{i}": microtorch.full((1 << 20,), float(i)) for i in range(12)}
    path = tmp_path / "big.safetensors"
    st.save_file(tensors, path)
    size = path.stat().st_size
    for load in (st.load_file, microtorch.load):
        tracemalloc.start()
        try:
            out = load(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < size * 1.05 + (1 << 20), f"{load.__name__}: peak {peak} for {size}"
        assert all(out[k][7].item() == v[7].item() for k, v in tensors.items())
        assert out["w3"]._data.flags.writeable  # own, writable arrays


def test_safetensors_bfloat16_and_device_argument(tmp_path, device):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    from microtorch.utils import safetensors as st

    path = tmp_path / "bf.safetensors"
    safetensors_torch.save_file({"b": torch.arange(4, dtype=torch.bfloat16)}, path)
    if device == "cpu":
        assert st.load_file(path)["b"].dtype == microtorch.bfloat16
        assert st.load_file(path)["b"].tolist() == [0.0, 1.0, 2.0, 3.0]
    safetensors_torch.save_file({"a": torch.arange(3.0)}, path)
    on = st.load_file(path, device=device)["a"]
    assert on.device.type == device and on.tolist() == [0.0, 1.0, 2.0]
    if device == "cuda":
        assert st.load_file(path, device=0)["a"].device == microtorch.device("cuda:0")
    assert microtorch.load(path, map_location=device)["a"].device.type == device


@pytest.mark.parametrize("edit,match", [
    (lambda h: h.replace(b'"data_offsets":[0,12]', b'"data_offsets":[4,16]'), "gap or overlap"),
    (lambda h: h.replace(b'"shape":[3]', b'"shape":[4]'), "cannot hold"),
    (lambda h: h.replace(b'"F32"', b'"C64"'), "dtype C64"),
    (lambda h: h.replace(b'"shape":[3]', b'"shape":[-3]'), "invalid shape"),
    (lambda h: h[:-4] + b'}}}}', "JSON|Expecting|Extra data"),
])
def test_safetensors_bad_headers_refused(tmp_path, edit, match):
    from microtorch.utils import safetensors as st

    good = st.save({"a": microtorch.arange(3.0)})
    n = int.from_bytes(good[:8], "little")
    header = edit(good[8:8 + n].replace(b" ", b""))
    bad = len(header).to_bytes(8, "little") + header + good[8 + n:]
    with pytest.raises(ValueError, match=match):
        st.load(bad)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(bad)
    with pytest.raises(RuntimeError, match="bad.safetensors: corrupt safetensors"):
        microtorch.load(path)


def test_safetensors_shared_and_non_contiguous_refused_like_safetensors_torch(tmp_path):
    from microtorch.utils import safetensors as st

    flat = microtorch.zeros(6)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save_file({"a": flat, "b": flat[:3]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save_file({"t": microtorch.zeros(2, 3).t()}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="Key `a` is invalid"):
        st.save_file({"a": [1.0]}, tmp_path / "x.safetensors")
    # Disjoint slices of one buffer do not overlap: allowed, as in safetensors.torch.
    st.save_file({"a": flat[:3], "b": flat[3:]}, tmp_path / "ok.safetensors")
    tflat = torch.zeros(6)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        pytest.importorskip("safetensors.torch").save_file({"a": tflat, "b": tflat[:3]},
                                                           tmp_path / "y.safetensors")


def test_safetensors_save_model_dedupes_tied_weights(tmp_path):
    from microtorch.utils import safetensors as st

    model = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight  # tied
    st.save_model(model, tmp_path / "tied.safetensors")
    meta = st.load_metadata(tmp_path / "tied.safetensors")
    assert meta == {"1.weight": "0.weight"}
    fresh = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
    fresh[1].weight = fresh[0].weight
    missing, unexpected = st.load_model(fresh, tmp_path / "tied.safetensors")
    assert missing == [] and unexpected == []
    assert fresh[0].weight.tolist() == model[0].weight.tolist()


def test_torch_mmaps_microtorch_checkpoint(tmp_path):
    path = tmp_path / "aligned.pt"
    microtorch.save({"w": microtorch.arange(100.0), "h": microtorch.ones(3,
                                                                         dtype=microtorch.float16)},
                    path)
    out = torch.load(path, mmap=True, weights_only=True)  # needs 64-byte aligned records
    assert out["w"].tolist() == list(range(100)) and out["h"].dtype == torch.float16


def test_whole_torch_module_loads_with_weights_only_false(tmp_path):
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    path = tmp_path / "module.pt"
    torch.save(tmodel, path)
    with pytest.raises(pickle_error(), match=r"GLOBAL torch\.nn\.modules\.container\.Sequential"):
        microtorch.load(path)
    model = microtorch.load(path, weights_only=False)  # torch.nn names map to microtorch.nn
    assert type(model) is nn.Sequential and type(model[0].weight) is nn.Parameter
    x = np.ones((1, 2), np.float32)
    assert model(microtorch.tensor(x)).tolist() == tmodel(torch.from_numpy(x)).tolist()


def test_tensor_attributes_survive_both_ways(tmp_path):
    t = microtorch.ones(3)
    t.tag = "hello"
    p = nn.Parameter(microtorch.ones(2))
    p.note = 5
    microtorch.save({"t": t, "p": p}, tmp_path / "attrs.pt")
    theirs = torch.load(tmp_path / "attrs.pt", weights_only=True)
    assert theirs["t"].tag == "hello" and theirs["p"].note == 5
    assert isinstance(theirs["p"], torch.nn.Parameter)
    torch.save(theirs, tmp_path / "back.pt")
    ours = microtorch.load(tmp_path / "back.pt")
    assert ours["t"].tag == "hello" and ours["p"].note == 5 and type(ours["p"]) is nn.Parameter


@pytest.mark.parametrize("seed", range(6))
def test_random_views_roundtrip_through_both_frameworks(tmp_path, seed):
    rng = np.random.default_rng(seed)
    dtype = _DTYPES[seed % len(_DTYPES)]
    base = microtorch.tensor(_values(dtype).reshape(-1).repeat(4)[:24]).view(2, 3, 4)
    views = {"base": base, "t": base.transpose(0, 2), "s": base[:, 1:, ::2],
             "flat": base.view(-1)[int(rng.integers(0, 12)):], "row": base[1, 2]}
    microtorch.save(views, tmp_path / "v.pt")
    theirs = torch.load(tmp_path / "v.pt")
    for k, v in views.items():
        assert theirs[k].tolist() == v.tolist(), k
        assert theirs[k].untyped_storage().data_ptr() == \
            theirs["base"].untyped_storage().data_ptr(), k
    torch.save(theirs, tmp_path / "back.pt")
    ours = microtorch.load(tmp_path / "back.pt")
    for k, v in views.items():
        assert ours[k].tolist() == v.tolist() and ours[k].dtype == v.dtype, k
