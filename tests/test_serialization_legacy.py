"""Checkpoints in microtorch's old format (ZIP of .npy members plus a JSON header) still load,
and tampered ones are still refused.  The files come from the old writer, kept as a test
helper (tests/_legacy_checkpoint.py)."""

from __future__ import annotations

import collections
import io
import json
import zipfile

import numpy as np
import pytest
from _legacy_checkpoint import HEADER, write_legacy_checkpoint

import microtorch
from microtorch import nn


def _legacy_bytes(obj) -> bytes:
    buf = io.BytesIO()
    write_legacy_checkpoint(obj, buf)
    return buf.getvalue()


def _load_bytes(tmp_path, data: bytes, **kwargs):
    path = tmp_path / "old.mt"
    path.write_bytes(data)
    return microtorch.load(path, **kwargs)


def test_old_checkpoint_loads(tmp_path):
    flat = microtorch.arange(10.0)
    state = {
        "model": collections.OrderedDict(w=nn.Parameter(microtorch.ones(2, 3)), flat=flat,
                                         view=flat[2:8].view(2, 3)),
        "epoch": 3, "name": "run", "pair": (1, 2.5), "dtype": microtorch.float16,
        "half": microtorch.ones(2, dtype=microtorch.float16),
        "array": np.arange(4, dtype=np.int16),
    }
    out = _load_bytes(tmp_path, _legacy_bytes(state))
    model = out["model"]
    assert isinstance(model, collections.OrderedDict) and list(model) == ["w", "flat", "view"]
    assert type(model["w"]) is nn.Parameter and model["w"].requires_grad
    assert model["view"].tolist() == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    model["flat"][2] = -1.0  # views still share their buffer
    assert model["view"][0, 0].item() == -1.0
    assert out["epoch"] == 3 and out["pair"] == (1, 2.5) and out["dtype"] is microtorch.float16
    assert out["half"].dtype == microtorch.float16
    assert out["array"].dtype == np.int16 and out["array"].tolist() == [0, 1, 2, 3]


def test_old_checkpoint_map_location(tmp_path):
    out = _load_bytes(tmp_path, _legacy_bytes({"w": microtorch.arange(3.0)}),
                      map_location=lambda t, loc: t * 2)
    assert out["w"].tolist() == [0.0, 2.0, 4.0]


def _rewrite_header(data: bytes, edit) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            payload = src.read(item.filename)
            if item.filename == HEADER:
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
def test_tampered_old_header_rejected(tmp_path, edit, message):
    data = _legacy_bytes({"w": microtorch.arange(64.0), "step": 1})
    with pytest.raises(RuntimeError, match=message) as info:
        _load_bytes(tmp_path, _rewrite_header(data, edit))
    assert "old.mt" in str(info.value)


def test_flipped_old_data_byte_detected(tmp_path):
    data = bytearray(_legacy_bytes({"w": microtorch.arange(64.0)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("storage/0.npy")
    data[info.header_offset + 30 + len(info.filename) + 200] ^= 0x40
    with pytest.raises(RuntimeError, match="corrupt"):
        _load_bytes(tmp_path, bytes(data))


@pytest.mark.parametrize("cut", [10, 100, 0.5, -100, -22, -1])
def test_truncated_old_checkpoint_rejected(tmp_path, cut):
    data = _legacy_bytes({"w": microtorch.arange(64.0), "step": 1})
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    with pytest.raises(RuntimeError, match="corrupt|not a checkpoint"):
        _load_bytes(tmp_path, data[:end])


# ------------------------------------------------- hostile files routed to the old reader


def test_zip_bomb_named_like_the_old_header_is_refused_before_inflating(tmp_path):
    """A 1 GiB member called microtorch.json deflates to about 1 MB; the old writer never
    compressed, so the old reader refuses it without inflating anything."""
    import tracemalloc

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open(HEADER, "w", force_zip64=True) as member:
            block = b" " * (1 << 24)
            for _ in range(64):
                member.write(block)
    data = buf.getvalue()
    assert len(data) < 4 << 20
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="old.mt.*(inflate|compressed)") as info:
            _load_bytes(tmp_path, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(data) + (8 << 20), f"{peak} bytes allocated refusing it"
    assert "old.mt" in str(info.value)


def test_old_format_refuses_compressed_members(tmp_path):
    data = _legacy_bytes({"w": microtorch.arange(8.0)})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, src.read(item.filename))
    with pytest.raises(RuntimeError, match="compressed"):
        _load_bytes(tmp_path, out.getvalue())


def test_old_format_refuses_a_duplicated_header(tmp_path):
    data = _legacy_bytes({"w": microtorch.arange(8.0)})
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a") as zf, pytest.warns(UserWarning, match="Duplicate"):
        zf.writestr(HEADER, json.dumps({"format": "microtorch.checkpoint", "version": 1,
                                        "root": "evil", "storages": [], "tensors": [],
                                        "arrays": []}))
    with pytest.raises(RuntimeError, match="duplicate member 'microtorch.json'"):
        _load_bytes(tmp_path, out.getvalue())


@pytest.mark.parametrize("ref", [b"-1", b"true", b"1.5"])
def test_old_format_refuses_references_out_of_range(tmp_path, ref):
    data = _legacy_bytes({"w": microtorch.arange(8.0)})
    edited = _rewrite_header(data, lambda h: h.replace(b'"$":"tensor","ref":0',
                                                       b'"$":"tensor","ref":' + ref))
    with pytest.raises(RuntimeError, match="reference .* out of range"):
        _load_bytes(tmp_path, edited)


def test_a_pytorch_checkpoint_with_an_old_header_member_is_read_as_pytorch_reads_it(tmp_path):
    """Routed by structure, not by one member's name: a PyTorch archive that also carries a
    root-level microtorch.json is refused as PyTorch refuses it (a member outside the
    archive folder), not loaded as an old microtorch checkpoint."""
    buf = io.BytesIO()
    microtorch.save({"w": microtorch.arange(3.0)}, buf)
    with zipfile.ZipFile(buf, "a") as zf:
        zf.writestr(HEADER, json.dumps({"format": "microtorch.checkpoint", "version": 1,
                                        "root": "not what torch.load gives", "storages": [],
                                        "tensors": [], "arrays": []}))
    with pytest.raises(RuntimeError, match="not in a subdirectory: 'microtorch.json'"):
        _load_bytes(tmp_path, buf.getvalue())
    torch = pytest.importorskip("torch")
    path = tmp_path / "both.pt"
    path.write_bytes(buf.getvalue())
    with pytest.raises(RuntimeError, match="not in a subdirectory"):
        torch.load(path)
