"""microtorch.save / microtorch.load: round trips, sharing, weights_only, map_location, mmap,
file objects, atomic writes (including killed saves), pickling and deepcopy."""

from __future__ import annotations

import collections
import copy
import io
import multiprocessing
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import microtorch
from microtorch import nn, optim, serialization
from microtorch.ops.creation import wrap_numpy
from microtorch.serialization import _archive


def _bits(t: microtorch.Tensor) -> bytes:
    return np.ascontiguousarray(t.detach().cpu().numpy()).tobytes()


def _tensors_of_every_dtype(device: str = "cpu") -> dict:
    raw = {
        "f16": np.array([0.0, -0.0, 6e-8, 65504.0, np.inf, np.nan], np.float16),
        "f32": np.array([1.0, -0.0, 1e-45, 3.4e38, -np.inf, np.nan], np.float32),
        "f64": np.array([np.pi, -0.0, 5e-324, 1.7e308, np.inf], np.float64),
        "i8": np.array([-128, 127, 0], np.int8),
        "i16": np.array([-(2**15), 2**15 - 1], np.int16),
        "i32": np.array([-(2**31), 2**31 - 1, 0], np.int32),
        "i64": np.array([-(2**63), 2**63 - 1, 7], np.int64),
        "bool": np.array([[True, False], [False, True]]),
        "u8": np.arange(5, dtype=np.uint8),
        "scalar": np.array(2.5, np.float32),
        "empty": np.zeros((0, 3), np.float32),
    }
    # A NaN with a payload: bit-for-bit means its payload survives too.
    raw["f32"][5:] = np.array([0x7FC01234], np.uint32).view(np.float32)
    out = {k: microtorch.tensor(v, device=device) for k, v in raw.items()}
    if hasattr(microtorch, "bfloat16") and device == "cpu":  # CuPy has no bfloat16
        out["bf16"] = microtorch.tensor([1.0, -2.5, 3e38], dtype=microtorch.bfloat16,
                                        device=device)
    return out


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
        "bytes": b"\x00\xff", "set": {1, 2}, "complex": 1 + 2j,
        "counter": collections.Counter("aab"), "size": microtorch.Size([2, 3]),
    }
    path = tmp_path / "ckpt.pt"
    microtorch.save(state, path)
    out = microtorch.load(path)
    assert isinstance(out["model"], collections.OrderedDict)
    assert list(out["model"]) == ["weight", "bias"]
    assert _bits(out["model"]["weight"]) == _bits(state["model"]["weight"])
    opt = out["optimizer"]
    assert opt["state"][0]["step"] == 10 and opt["state"][1] == {} and 0 in opt["state"]
    assert opt["param_groups"] == state["optimizer"]["param_groups"]
    assert out["loss"] == 0.1 + 0.2 and out["big"] == 2**80 and out["inf"] == float("-inf")
    assert out["mixed"] == [1, "two", (3.0, None), [True]] and out["name"] == "run-α"
    assert out[(1, "tuple")] == "key" and out[2.5] == "float key"
    assert out["dtype"] is microtorch.float16 and out["device"] == microtorch.device("cpu")
    assert out["bytes"] == b"\x00\xff" and out["set"] == {1, 2} and out["complex"] == 1 + 2j
    assert out["counter"] == collections.Counter("aab") and out["size"] == (2, 3)
    assert isinstance(out["size"], microtorch.Size)


def test_numeric_numpy_values_load_object_arrays_do_not():
    state = {"rng": np.arange(6, dtype=np.uint8).reshape(2, 3), "np_scalar": np.int64(7),
             "half": np.float16(1.5), "empty": np.zeros((0, 2)), "fortran": np.asfortranarray(
                 np.arange(6.0).reshape(2, 3)), "gen": microtorch.Generator().get_state()}
    out = _roundtrip(state)
    for key, value in state.items():
        assert type(out[key]) is type(value) and out[key].dtype == value.dtype, key
        assert np.array_equal(out[key], value), key
    assert out["np_scalar"] == 7 and isinstance(out["np_scalar"], np.int64)
    with pytest.raises(pickle.UnpicklingError, match="only numeric NumPy dtypes"):
        _roundtrip({"objects": np.array([1, "x"], dtype=object)})
    with pytest.raises(pickle.UnpicklingError, match="non-native byte order"):
        _roundtrip({"big_endian": np.arange(3, dtype=">i4")})
    out = _roundtrip({"objects": np.array([1, "x"], dtype=object)}, weights_only=False)
    assert out["objects"].tolist() == [1, "x"]


def test_loaded_tensors_are_independent_writable_leaves():
    src = {"w": microtorch.ones(3, requires_grad=True), "b": microtorch.zeros(2)}
    out = _roundtrip(src)
    assert out["w"].requires_grad and out["w"].is_leaf and not out["b"].requires_grad
    out["b"].add_(1)  # writable
    assert src["b"].tolist() == [0.0, 0.0]


def test_parameters_stay_parameters():
    p = nn.Parameter(microtorch.randn(2, 3))
    frozen = nn.Parameter(microtorch.randn(2), requires_grad=False)
    out = _roundtrip({"p": p, "frozen": frozen})
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is nn.Parameter and not out["frozen"].requires_grad
    assert _bits(out["p"]) == _bits(p)


def test_same_tensor_twice_is_one_tensor():
    t = microtorch.arange(4.0)
    out = _roundtrip({"a": t, "b": t, "nested": [t]})
    assert out["a"] is out["b"] is out["nested"][0]


def test_views_of_one_buffer_share_storage_after_load():
    flat = microtorch.zeros(10)
    w, b = flat[:6].view(2, 3), flat[6:]
    out = _roundtrip({"flat": flat, "w": w, "b": b, "wt": w.t(), "step": flat[1::3]})
    assert out["w"].shape == (2, 3) and out["wt"].shape == (3, 2)
    out["w"][1, 2] = 5.0
    out["b"][0] = 7.0
    out["b"][1] = 8.0
    assert out["flat"].tolist()[5:8] == [5.0, 7.0, 8.0] and out["wt"][2, 1].item() == 5.0
    assert out["step"].tolist() == [0.0, 0.0, 8.0]  # elements 1, 4, 7


@pytest.mark.parametrize("mmap", [False, True])
def test_loaded_views_still_share_one_storage_when_saved_again(tmp_path, mmap):
    # A loaded storage is raw bytes viewed as float32: saving again must keep one storage.
    flat = microtorch.arange(12.0)
    microtorch.save({"flat": flat, "w": flat[2:8].view(2, 3)}, tmp_path / "a.pt")
    loaded = microtorch.load(tmp_path / "a.pt", mmap=mmap)
    microtorch.save(loaded, tmp_path / "b.pt")
    import zipfile

    with zipfile.ZipFile(tmp_path / "b.pt") as zf:
        assert [n for n in zf.namelist() if "/data/" in n] == ["b/data/0"]
    again = microtorch.load(tmp_path / "b.pt")
    again["flat"][3] = 100.0
    assert again["w"][0, 1].item() == 100.0


def test_single_slice_stores_only_its_own_data():
    big = microtorch.zeros(100_000)
    buf = io.BytesIO()
    microtorch.save({"slice": big[:10]}, buf)
    assert len(buf.getvalue()) < 4096
    buf.seek(0)
    assert microtorch.load(buf)["slice"].shape == (10,)


def test_flipped_and_reinterpreting_views_are_copied():
    base = microtorch.arange(6.0)
    # (the public from_numpy refuses negative strides, as PyTorch's; microtorch's own path
    # still makes such views of arrays, which must be saved as copies)
    flipped = wrap_numpy(base.numpy()[::-1])
    out = _roundtrip({"base": base, "flipped": flipped})
    assert out["flipped"].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]


def test_same_bytes_for_same_object():
    state = {"w": microtorch.arange(6.0)}
    a, b = io.BytesIO(), io.BytesIO()
    microtorch.save(state, a)
    microtorch.save(state, b)
    assert a.getvalue() == b.getvalue()


def test_archive_layout_is_pytorchs(tmp_path):
    path = tmp_path / "model.pt"
    microtorch.save({"w": microtorch.arange(3.0), "b": microtorch.ones(2)}, path)
    import zipfile

    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names == ["model/data.pkl", "model/.format_version", "model/.storage_alignment",
                         "model/byteorder", "model/data/0", "model/data/1", "model/version",
                         "model/.data/serialization_id"]
        assert zf.read("model/byteorder") == b"little" and zf.read("model/version") == b"3\n"
        assert len(zf.read("model/.data/serialization_id")) == 40
        raw = path.read_bytes()
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            n, e = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30], "<u2")
            assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename
        assert np.frombuffer(zf.read("model/data/0"), "<f4").tolist() == [0.0, 1.0, 2.0]


def test_module_and_optimizer_state_dicts(tmp_path):
    model = nn.Linear(4, 3)
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(microtorch.randn(5, 4)).sum().backward()
    opt.step()
    path = tmp_path / "train.pt"
    microtorch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    ckpt = microtorch.load(path)
    model2 = nn.Linear(4, 3)
    model2.load_state_dict(ckpt["model"])
    for k, v in model.state_dict().items():
        assert _bits(model2.state_dict()[k]) == _bits(v)
    opt2 = optim.Adam(model2.parameters(), lr=0.5)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01


def test_whole_module_and_optimizer_with_weights_only_false(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = microtorch.randn(5, 4)
    model(x).sum().backward()
    opt.step()
    path = tmp_path / "whole.pt"
    microtorch.save({"model": model, "opt": opt}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL microtorch\.nn.*add_safe_globals"):
        microtorch.load(path)
    out = microtorch.load(path, weights_only=False)
    assert type(out["model"]) is nn.Sequential
    assert _bits(out["model"](x)) == _bits(model(x))
    assert out["opt"].param_groups[0]["params"][0] is out["model"][0].weight
    assert type(out["model"][0].weight) is nn.Parameter


# --------------------------------------------------------------------------- weights_only


class _Config:
    def __init__(self, lr: float) -> None:
        self.lr = lr


def test_unknown_global_refused_naming_it_and_how_to_allow(tmp_path):
    path = tmp_path / "cfg.pt"
    microtorch.save({"cfg": _Config(0.5)}, path)
    with pytest.raises(pickle.UnpicklingError) as info:
        microtorch.load(path)
    message = str(info.value)
    assert "cfg.pt" in message and "test_serialization._Config" in message
    assert "add_safe_globals" in message and "weights_only=False" in message
    with serialization.safe_globals([_Config]):
        assert serialization.get_safe_globals() == [_Config]
        assert microtorch.load(path)["cfg"].lr == 0.5
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([(_Config, "test_serialization._Config")])
    try:
        assert microtorch.load(path)["cfg"].lr == 0.5
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def test_malicious_pickle_never_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    microtorch.save({"x": _Evil()}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|os|nt)\.system"):
        microtorch.load(tmp_path / "evil.pt")
    assert not (tmp_path / "pwned.txt").exists()


# ---------------------------------------------------------------- map_location, files, mmap


def test_map_location_variants():
    state = {"w": microtorch.arange(3.0), "v": microtorch.ones(2)}
    for loc in (None, "cpu", microtorch.device("cpu"), {"cuda:0": "cpu"}):
        out = _roundtrip(state, map_location=loc)
        assert out["w"].device == microtorch.device("cpu") and out["w"].tolist() == [0, 1, 2]
    seen = []

    def keep(storage, location):
        seen.append(location)
        return storage * 2

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
    state = {"w": flat, "again": flat, "view": flat[2:6],
             "h": microtorch.ones(3, dtype=microtorch.float16, device="cuda")}
    out = _roundtrip(state)
    assert out["w"].device == flat.device and out["w"] is out["again"]
    assert out["view"].tolist() == [2.0, 3.0, 4.0, 5.0]
    cpu = _roundtrip(state, map_location="cpu")
    assert cpu["w"].device == microtorch.device("cpu") and cpu["w"].tolist() == flat.tolist()
    back = _roundtrip({"w": microtorch.arange(4.0)}, map_location="cuda")
    assert back["w"].is_cuda and back["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_mmap_maps_storages_copy_on_write(tmp_path):
    path = tmp_path / "big.pt"
    flat = microtorch.arange(1000.0)
    microtorch.save({"flat": flat, "view": flat[10:20]}, path)
    before = path.read_bytes()
    out = microtorch.load(path, mmap=True)
    assert out["flat"].tolist() == flat.tolist() and out["view"].tolist() == flat[10:20].tolist()
    root = out["flat"]._data
    while not isinstance(root, np.memmap) and root.base is not None:
        root = root.base
    assert isinstance(root, np.memmap)
    out["view"][0] = -1.0  # shared with "flat", never written back to the file
    assert out["flat"][10].item() == -1.0 and path.read_bytes() == before
    with pytest.raises(ValueError, match="mmap=True needs a file path"):
        microtorch.load(io.BytesIO(before), mmap=True)


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
    with pytest.raises(RuntimeError, match="file object.*not a checkpoint"):
        microtorch.load(io.BytesIO(b"junk"))


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        microtorch.load("/nonexistent/dir/ckpt.pt")


def test_unpicklable_object_fails_before_touching_the_file(tmp_path):
    path = tmp_path / "x.pt"
    with pytest.raises((TypeError, pickle.PicklingError, AttributeError)):
        microtorch.save({"bad": lambda: 1}, path)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="zip format"):
        microtorch.save({}, path, _use_new_zipfile_serialization=False)


# ----------------------------------------------------------------------------- atomicity


def _fail_on_second_storage(monkeypatch):
    real = _archive.ArchiveWriter.write
    calls = []

    def flaky(self, name, data):
        if name.startswith("data/"):
            calls.append(1)
            if len(calls) == 2:
                raise OSError("disk full (simulated)")
        real(self, name, data)

    monkeypatch.setattr(_archive.ArchiveWriter, "write", flaky)


def test_failed_save_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    microtorch.save({"w": microtorch.ones(3)}, path)
    before = path.read_bytes()
    _fail_on_second_storage(monkeypatch)
    with pytest.raises(OSError, match="simulated"):
        microtorch.save({"w": microtorch.zeros(3), "b": microtorch.zeros(2)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    assert microtorch.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_failed_first_save_creates_nothing(tmp_path, monkeypatch):
    _fail_on_second_storage(monkeypatch)
    with pytest.raises(OSError):
        microtorch.save([microtorch.zeros(1), microtorch.zeros(2)], tmp_path / "new.pt")
    assert os.listdir(tmp_path) == []


def test_interrupt_during_save_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    microtorch.save({"w": microtorch.ones(1)}, path)
    before = path.read_bytes()

    def interrupted(self, name, data):
        raise KeyboardInterrupt

    monkeypatch.setattr(_archive.ArchiveWriter, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        microtorch.save({"w": microtorch.zeros(1)}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]


def test_save_is_fsynced_before_rename(tmp_path, monkeypatch):
    from microtorch.serialization import _atomic

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(_atomic.os, "fsync",
                        lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(_atomic.os, "replace",
                        lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    microtorch.save({"w": microtorch.ones(2)}, tmp_path / "c.pt")
    assert events[:2] == ["fsync", "replace"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_overwrite_keeps_permissions_and_new_file_follows_umask(tmp_path):
    path = tmp_path / "c.pt"
    microtorch.save({"w": microtorch.ones(1)}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o600)
    microtorch.save({"w": microtorch.zeros(1)}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_save_into_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        microtorch.save({}, tmp_path / "nope" / "c.pt")


_KILLED_SAVER = textwrap.dedent("""
    import sys, time
    import microtorch
    from microtorch.serialization import _archive

    real = _archive.ArchiveWriter.write

    def slow(self, name, data):
        real(self, name, data)
        if name == "data/0":
            print("writing", flush=True)
            time.sleep(60)

    _archive.ArchiveWriter.write = slow
    microtorch.save({"w": microtorch.zeros(100_000)}, sys.argv[1])
""")


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_killed_save_leaves_no_stray_temp_after_next_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    for _ in range(3):  # three killed saves: each removes the one before it left
        proc = subprocess.Popen([sys.executable, "-c", _KILLED_SAVER, str(path)],
                                stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".mttmp")]
    assert len(leftovers) == 1 and not path.exists()
    # A temporary of a live process (another save in progress) is left alone.
    live = tmp_path / f".ckpt.pt.{os.getppid()}.{'ab' * 6}.mttmp"
    live.write_bytes(b"in progress")
    os.utime(live, (time.time() + 5, time.time() + 5))
    microtorch.save({"w": microtorch.ones(2)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.pt", live.name])
    assert microtorch.load(path)["w"].tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- pickle, deepcopy, queues


def test_tensors_pickle_with_requires_grad_grad_and_class():
    t = microtorch.ones(3, requires_grad=True)
    (t * 2).sum().backward()
    out = pickle.loads(pickle.dumps(t))
    assert out.requires_grad and out.is_leaf and out.grad.tolist() == [2.0, 2.0, 2.0]
    p = pickle.loads(pickle.dumps(nn.Parameter(microtorch.randn(2))))
    assert type(p) is nn.Parameter and p.requires_grad
    h = pickle.loads(pickle.dumps(microtorch.arange(4, dtype=microtorch.int16)[1:3]))
    assert h.dtype == microtorch.int16 and h.tolist() == [1, 2]
    nonleaf = pickle.loads(pickle.dumps(t * 3))  # like PyTorch: arrives as a leaf
    assert nonleaf.is_leaf and nonleaf.requires_grad


def test_deepcopy_of_tensors_modules_and_optimizers():
    t = microtorch.ones(2, requires_grad=True)
    t.sum().backward()
    c = copy.deepcopy(t)
    assert c.requires_grad and c.grad.tolist() == [1.0, 1.0] and c.grad is not t.grad
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(microtorch.randn(4, 3)).sum().backward()
    opt.step()
    model2 = copy.deepcopy(model)
    assert model2.weight is not model.weight and _bits(model2.weight) == _bits(model.weight)
    opt2 = copy.deepcopy(opt)
    assert len(opt2.state) == 2
    restored = pickle.loads(pickle.dumps(opt))
    assert restored.param_groups[0]["lr"] == 0.1


def _echo_through_queue(inq, outq) -> None:
    outq.put(inq.get() * 2)


def test_tensors_pass_through_multiprocessing_queues():
    ctx = multiprocessing.get_context("spawn" if os.name != "posix" else "fork")
    inq, outq = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_echo_through_queue, args=(inq, outq))
    proc.start()
    inq.put(microtorch.arange(4.0))
    got = outq.get(timeout=60)
    proc.join(timeout=60)
    assert proc.exitcode == 0 and got.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_load_arguments_validated():
    buf = io.BytesIO()
    microtorch.save({"w": microtorch.ones(1)}, buf)
    buf.seek(0)
    assert microtorch.load(buf, weights_only=None)["w"].tolist() == [1.0]  # None: True
    with pytest.raises(ValueError, match="pickle_module"):
        microtorch.load(buf, pickle_module=object())
    with pytest.raises(TypeError, match="unsupported load arguments"):
        microtorch.load(buf, encoding="latin1")
    with pytest.raises(ValueError, match="protocol"):
        microtorch.save({}, io.BytesIO(), pickle_protocol=1)
    for protocol in (3, 4, 5):
        out = io.BytesIO()
        microtorch.save({"w": microtorch.arange(2.0)}, out, pickle_protocol=protocol)
        out.seek(0)
        assert microtorch.load(out)["w"].tolist() == [0.0, 1.0], protocol


def test_pickle_keeps_user_attributes_not_graph_internals():
    base = microtorch.ones(4, requires_grad=True)
    view = base[1:]
    view.label = "rows"
    out = pickle.loads(pickle.dumps(view))
    assert out.label == "rows" and out._base is None and out.tolist() == [1.0, 1.0, 1.0]
