"""microtorch.save / microtorch.load: round trips, sharing, atomic writes, rejection of
foreign or corrupt files, map_location, file objects."""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import stat
import zipfile

import numpy as np
import pytest

import microtorch
from microtorch import serialization


def _bits(t: microtorch.Tensor) -> bytes:
    return np.ascontiguousarray(t.detach().cpu().numpy()).tobytes()


def _tensors_of_every_dtype(device: str = "cpu") -> dict:
    raw = {
        "f16": np.array([0.0, -0.0, 6e-8, 65504.0, np.inf, np.nan], np.float16),
        "f32": np.array([1.0, -0.0, 1e-45, 3.4e38, -np.inf, np.nan], np.float32),
        "f64": np.array([np.pi, -0.0, 5e-324, 1.7e308, np.inf], np.float64),
        "i32": np.array([-(2**31), 2**31 - 1, 0], np.int32),
        "i64": np.array([-(2**63), 2**63 - 1, 7], np.int64),
        "bool": np.array([[True, False], [False, True]]),
        "u8": np.arange(5, dtype=np.uint8),
        "scalar": np.array(2.5, np.float32),
    }
    # A NaN with a payload: bit-for-bit means its payload survives too.
    raw["f32"][5:] = np.array([0x7FC01234], np.uint32).view(np.float32)
    return {k: microtorch.tensor(v, device=device) for k, v in raw.items()}


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    microtorch.save(obj, buf)
    buf.seek(0)
    return microtorch.load(buf, **load_kwargs)


# -------------------------------------------------------------------------- round trips


def test_every_dtype_roundtrips_bit_for_bit(device):
    tensors = _tensors_of_every_dtype(device)
    out = _roundtrip(tensors)
    assert list(out) == list(tensors)
    for key, t in tensors.items():
        assert out[key].dtype == t.dtype and out[key].shape == t.shape, key
        assert out[key].device == t.device, key
        assert _bits(out[key]) == _bits(t), key


def test_nested_state_dict_roundtrip(tmp_path):
    state = {
        "model": collections.OrderedDict(weight=microtorch.randn(3, 4), bias=microtorch.zeros(3)),
        "optimizer": {
            "state": {0: {"step": 10, "exp_avg": microtorch.ones(3, 4)}, 1: {}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                              "weight_decay": 0, "amsgrad": False, "foreach": None,
                              "params": [0, 1]}],
        },
        "epoch": 3, "loss": 0.1 + 0.2, "name": "run-α", "big": 2**80, "inf": float("-inf"),
        "mixed": [1, "two", (3.0, None), [True]], (1, "tuple"): "key", 2.5: "float key",
        "dtype": microtorch.float16, "device": microtorch.device("cpu"),
        "rng": np.arange(6, dtype=np.uint8).reshape(2, 3), "np_scalar": np.int64(7),
    }
    path = tmp_path / "ckpt.mt"
    microtorch.save(state, path)
    out = microtorch.load(path)
    assert isinstance(out["model"], collections.OrderedDict)
    assert list(out["model"]) == ["weight", "bias"]
    assert _bits(out["model"]["weight"]) == _bits(state["model"]["weight"])
    opt = out["optimizer"]
    assert opt["state"][0]["step"] == 10 and opt["state"][1] == {} and 0 in opt["state"]
    assert opt["param_groups"] == [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                                    "weight_decay": 0, "amsgrad": False, "foreach": None,
                                    "params": [0, 1]}]
    assert out["loss"] == 0.1 + 0.2 and out["big"] == 2**80 and out["inf"] == float("-inf")
    assert out["mixed"] == [1, "two", (3.0, None), [True]] and out["name"] == "run-α"
    assert out[(1, "tuple")] == "key" and out[2.5] == "float key"
    assert out["dtype"] is microtorch.float16 and out["device"] == microtorch.device("cpu")
    assert np.array_equal(out["rng"], state["rng"]) and out["rng"].dtype == np.uint8
    assert out["np_scalar"] == 7 and isinstance(out["np_scalar"], np.int64)
    assert isinstance(out["epoch"], int) and isinstance(out["mixed"][2], tuple)


def test_loaded_tensors_are_independent_writable_leaves():
    src = {"w": microtorch.ones(3, requires_grad=True), "b": microtorch.zeros(2)}
    out = _roundtrip(src)
    assert out["w"].requires_grad and out["w"].is_leaf and not out["b"].requires_grad
    out["b"].add_(1)  # writable
    assert src["b"].tolist() == [0.0, 0.0]


def test_same_tensor_twice_is_one_tensor():
    t = microtorch.arange(4.0)
    out = _roundtrip({"a": t, "b": t, "nested": [t]})
    assert out["a"] is out["b"] is out["nested"][0]


def test_views_of_one_buffer_share_storage_after_load():
    flat = microtorch.zeros(10)
    w, b = flat[:6].view(2, 3), flat[6:]
    out = _roundtrip({"flat": flat, "w": w, "b": b, "wt": w.t()})
    assert out["w"].shape == (2, 3) and out["wt"].shape == (3, 2)
    out["w"][1, 2] = 5.0
    out["b"][0] = 7.0
    assert out["flat"].tolist()[5:7] == [5.0, 7.0] and out["wt"][2, 1].item() == 5.0


def test_single_slice_stores_only_its_own_data():
    big = microtorch.zeros(100_000)
    buf = io.BytesIO()
    microtorch.save({"slice": big[:10]}, buf)
    assert len(buf.getvalue()) < 4096
    buf.seek(0)
    assert microtorch.load(buf)["slice"].shape == (10,)


def test_same_bytes_for_same_object():
    state = {"w": microtorch.arange(6.0)}
    a, b = io.BytesIO(), io.BytesIO()
    microtorch.save(state, a)
    microtorch.save(state, b)
    assert a.getvalue() == b.getvalue()


def test_module_and_optimizer_state_dicts(tmp_path):
    nn = pytest.importorskip("microtorch.nn")
    optim = pytest.importorskip("microtorch.optim")
    if not hasattr(nn, "Linear") or not hasattr(optim, "Adam"):
        pytest.skip("microtorch.nn.Linear / microtorch.optim.Adam not available yet")
    model = nn.Linear(4, 3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(microtorch.randn(5, 4)).sum().backward()
    opt.step()
    path = tmp_path / "train.mt"
    microtorch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    ckpt = microtorch.load(path)
    model2 = nn.Linear(4, 3)
    model2.load_state_dict(ckpt["model"])
    for k, v in model.state_dict().items():
        assert _bits(model2.state_dict()[k]) == _bits(v)
    opt2 = optim.Adam(model2.parameters(), lr=0.5)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01


def test_unsupported_objects_raise_type_error_naming_where(tmp_path):
    path = tmp_path / "x.mt"
    with pytest.raises(TypeError, match=r"object\['bad'\]\[1\].*set"):
        microtorch.save({"bad": [1, {2}]}, path)
    with pytest.raises(TypeError, match="dict key"):
        microtorch.save({object(): 1}, path)
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="contains itself"):
        microtorch.save(cyclic, path)
    assert not path.exists() and os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- atomicity


def _fail_on_second_array(monkeypatch):
    real = serialization._write_array
    calls = []

    def flaky(fh, arr):
        calls.append(1)
        if len(calls) == 2:
            fh.write(b"partial garbage")
            raise OSError("disk full (simulated)")
        real(fh, arr)

    monkeypatch.setattr(serialization, "_write_array", flaky)


def test_failed_save_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.mt"
    microtorch.save({"w": microtorch.ones(3)}, path)
    before = path.read_bytes()
    _fail_on_second_array(monkeypatch)
    with pytest.raises(OSError, match="simulated"):
        microtorch.save({"w": microtorch.zeros(3), "b": microtorch.zeros(2)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.mt"]
    assert microtorch.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_failed_first_save_creates_nothing(tmp_path, monkeypatch):
    _fail_on_second_array(monkeypatch)
    with pytest.raises(OSError):
        microtorch.save([microtorch.zeros(1), microtorch.zeros(2)], tmp_path / "new.mt")
    assert os.listdir(tmp_path) == []


def test_interrupt_during_save_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.mt"
    microtorch.save({"w": microtorch.ones(1)}, path)
    before = path.read_bytes()

    def interrupted(fh, arr):
        raise KeyboardInterrupt

    monkeypatch.setattr(serialization, "_write_array", interrupted)
    with pytest.raises(KeyboardInterrupt):
        microtorch.save({"w": microtorch.zeros(1)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.mt"]


def test_save_is_fsynced_before_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(serialization.os, "fsync",
                        lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(serialization.os, "replace",
                        lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    microtorch.save({"w": microtorch.ones(2)}, tmp_path / "c.mt")
    assert events[:2] == ["fsync", "replace"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_overwrite_keeps_permissions_and_new_file_follows_umask(tmp_path):
    path = tmp_path / "c.mt"
    microtorch.save({"w": microtorch.ones(1)}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o600)
    microtorch.save({"w": microtorch.zeros(1)}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_save_into_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        microtorch.save({}, tmp_path / "nope" / "c.mt")


# ---------------------------------------------------------------- foreign / corrupt files


def _checkpoint_bytes() -> bytes:
    buf = io.BytesIO()
    microtorch.save({"w": microtorch.arange(64.0), "step": 1}, buf)
    return buf.getvalue()


def _load_bytes(tmp_path, data: bytes):
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    return microtorch.load(path)


@pytest.mark.parametrize("data,message", [
    (pickle.dumps({"w": [1.0, 2.0]}), "not a microtorch checkpoint.*pickle"),
    (bytes(range(256)) * 4, "not a microtorch checkpoint"),
    (b"", "not a microtorch checkpoint"),
    (b'{"format": "microtorch.checkpoint"}', "not a microtorch checkpoint"),
])
def test_foreign_files_rejected(tmp_path, data, message):
    with pytest.raises(RuntimeError, match=message) as info:
        _load_bytes(tmp_path, data)
    assert "file.bin" in str(info.value)


def test_plain_npz_and_other_zip_rejected(tmp_path):
    np.savez(tmp_path / "arrays.npz", a=np.arange(3))
    with pytest.raises(RuntimeError, match="not a microtorch checkpoint.*without"):
        microtorch.load(tmp_path / "arrays.npz")


@pytest.mark.torch
def test_torch_checkpoint_rejected_without_unpickling(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)

    def no_unpickling(*args, **kwargs):
        raise AssertionError("microtorch.load must never unpickle")

    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)
    with pytest.raises(RuntimeError, match="not a microtorch checkpoint.*PyTorch"):
        microtorch.load(path)


@pytest.mark.parametrize("cut", [10, 100, 0.5, -100, -22, -1])
def test_truncated_checkpoint_rejected(tmp_path, cut):
    data = _checkpoint_bytes()
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    with pytest.raises(RuntimeError, match="corrupt"):
        _load_bytes(tmp_path, data[:end])


def test_flipped_data_byte_detected(tmp_path):
    data = bytearray(_checkpoint_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("storage/0.npy")
    # Past the local header and the .npy header: inside the float data.
    pos = info.header_offset + 30 + len(info.filename) + 200
    data[pos] ^= 0x40
    with pytest.raises(RuntimeError, match="corrupt"):
        _load_bytes(tmp_path, bytes(data))


def _rewrite_header(data: bytes, edit) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            payload = src.read(item.filename)
            if item.filename == serialization.HEADER:
                payload = edit(payload)
            dst.writestr(item, payload)
    return out.getvalue()


@pytest.mark.parametrize("edit,message", [
    (lambda h: h[:-5], "corrupt"),
    (lambda h: h.replace(b'"version":1', b'"version":99'), "version 99"),
    (lambda h: h.replace(b'"$":"tensor","ref":0', b'"$":"tensor","ref":9'), "corrupt"),
    (lambda h: h.replace(b'"$":"tensor"', b'"$":"evil"'), "corrupt.*unknown node"),
    (lambda h: h.replace(b'"<f4"', b'"<f8"', 1), "corrupt"),
    (lambda h: json.dumps([1]).encode(), "not a microtorch checkpoint"),
])
def test_tampered_header_rejected(tmp_path, edit, message):
    with pytest.raises(RuntimeError, match=message):
        _load_bytes(tmp_path, _rewrite_header(_checkpoint_bytes(), edit))


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        microtorch.load("/nonexistent/dir/ckpt.mt")


# ----------------------------------------------------------------- map_location, files


def test_map_location_variants():
    state = {"w": microtorch.arange(3.0), "v": microtorch.ones(2)}
    for loc in (None, "cpu", microtorch.device("cpu"), {"cuda:0": "cpu"}):
        out = _roundtrip(state, map_location=loc)
        assert out["w"].device == microtorch.device("cpu") and out["w"].tolist() == [0, 1, 2]
    seen = []

    def keep(tensor, location):
        seen.append(location)
        return tensor * 2

    out = _roundtrip(state, map_location=keep)
    assert seen == ["cpu", "cpu"] and out["w"].tolist() == [0.0, 2.0, 4.0]
    out = _roundtrip(state, map_location=lambda t, loc: None)  # None: the default placement
    assert out["v"].tolist() == [1.0, 1.0]

    def broken(tensor, location):
        raise ValueError("caller's own error")

    with pytest.raises(ValueError, match="caller's own error"):
        _roundtrip(state, map_location=broken)
    with pytest.raises(TypeError, match="map_location"):
        _roundtrip(state, map_location=3)


@pytest.mark.skipif(microtorch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_map_location_without_cuda_explains():
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        _roundtrip({"w": microtorch.ones(1)}, map_location="cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not microtorch.cuda.is_available(), reason="needs CUDA (CuPy and a GPU)")
def test_cuda_tensors_roundtrip_and_map_to_cpu():
    flat = microtorch.arange(8.0, device="cuda")
    state = {"w": flat, "again": flat, "h": microtorch.ones(3, dtype=microtorch.float16,
                                                              device="cuda")}
    out = _roundtrip(state)
    assert out["w"].device == flat.device and out["w"] is out["again"]
    cpu = _roundtrip(state, map_location="cpu")
    assert cpu["w"].device == microtorch.device("cpu") and cpu["w"].tolist() == flat.tolist()
    back = _roundtrip({"w": microtorch.arange(4.0)}, map_location="cuda")
    assert back["w"].is_cuda and back["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


class _Unseekable(io.RawIOBase):
    def __init__(self, data: bytes = b"") -> None:
        self._src = io.BytesIO(data)
        self.written = bytearray()

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, b) -> int:
        chunk = self._src.read(len(b))
        b[:len(chunk)] = chunk
        return len(chunk)

    def write(self, b) -> int:
        self.written += bytes(b)
        return len(b)


def test_file_objects():
    state = {"w": microtorch.arange(5.0)}
    buf = io.BytesIO()
    microtorch.save(state, buf)
    buf.seek(0)
    assert microtorch.load(buf)["w"].tolist() == [0, 1, 2, 3, 4]
    stream = _Unseekable()
    microtorch.save(state, stream)  # ZIP streaming mode: no seeking needed to write
    assert microtorch.load(_Unseekable(bytes(stream.written)))["w"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="file object.*not a microtorch checkpoint"):
        microtorch.load(io.BytesIO(b"junk"))
