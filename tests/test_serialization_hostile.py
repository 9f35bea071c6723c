"""Hostile and damaged checkpoints: each is refused with an error naming the file, nothing in
it is executed, and nothing bigger than the file can honestly hold is allocated."""

from __future__ import annotations

import collections
import io
import pickle
import random
import warnings
import zipfile

import numpy as np
import pytest

import microtorch
from microtorch.serialization import _pickler

_REBUILD = _pickler.TorchGlobal("torch._utils", "_rebuild_tensor_v2")


class _Record:
    """A storage record as a hand-written checkpoint claims it."""

    def __init__(self, key: str, numel: int, kind: str = "FloatStorage") -> None:
        self.key, self.numel, self.kind = key, numel, kind


class _HandPickler(_pickler.TorchPickler):
    """Pickles whatever records and calls a test writes, true or not."""

    def __init__(self, fh) -> None:
        super().__init__(fh, _pickler.StoragePlan([]))

    def persistent_id(self, obj):
        if isinstance(obj, _Record):
            return ("storage", _pickler.TorchGlobal("torch", obj.kind), obj.key, "cpu",
                    obj.numel)
        return None


def _tensor(record, offset, size, stride, requires_grad=False):
    return _pickler._Call(_REBUILD, (record, offset, size, stride, requires_grad,
                                     collections.OrderedDict()))


def _pickled(obj) -> bytes:
    buf = io.BytesIO()
    _HandPickler(buf).dump(obj)
    return buf.getvalue()


def _zip(members, compress=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        with zipfile.ZipFile(buf, "w", compress) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return buf.getvalue()


def _checkpoint(obj, storages: dict[str, bytes], compress=zipfile.ZIP_STORED) -> bytes:
    members = [("archive/data.pkl", _pickled(obj)), ("archive/byteorder", b"little")]
    members += [(f"archive/data/{k}", v) for k, v in storages.items()]
    return _zip(members + [("archive/version", b"3\n")], compress)


def _load(tmp_path, data: bytes, **kwargs):
    path = tmp_path / "hostile.pt"
    path.write_bytes(data)
    return microtorch.load(path, **kwargs)


def _refused(tmp_path, data: bytes, match: str, exc=RuntimeError, **kwargs):
    with pytest.raises(exc, match=match) as info:
        _load(tmp_path, data, **kwargs)
    assert "hostile.pt" in str(info.value)


FLOATS = np.arange(10, dtype="<f4").tobytes()


def test_hand_written_checkpoint_loads(tmp_path):
    rec = _Record("0", 10)
    out = _load(tmp_path, _checkpoint({"a": _tensor(rec, 2, (2, 2), (1, 2))}, {"0": FLOATS}))
    assert out["a"].tolist() == [[2.0, 4.0], [3.0, 5.0]]


# ----------------------------------------------------------------------- sizes and views


def test_compressed_member_inflating_far_past_the_file_is_refused(tmp_path):
    huge = bytes(64 << 20)  # 64 MiB of zeros: deflates to ~64 KB
    data = _checkpoint({"a": _tensor(_Record("0", 16 << 20), 0, (16 << 20,), (1,))},
                       {"0": huge}, compress=zipfile.ZIP_DEFLATED)
    assert len(data) < 1 << 20
    _refused(tmp_path, data, "claims to inflate")


def test_compressed_members_within_bounds_load(tmp_path):
    data = _checkpoint({"a": _tensor(_Record("0", 10), 0, (10,), (1,))}, {"0": FLOATS},
                       compress=zipfile.ZIP_DEFLATED)
    assert _load(tmp_path, data)["a"].tolist() == list(range(10))


def test_storage_record_shorter_than_claimed(tmp_path):
    # 3 GiB claimed by a record of 40 bytes: refused before anything is allocated.
    rec = _Record("0", 3 << 28)
    _refused(tmp_path, _checkpoint({"a": _tensor(rec, 0, (3 << 28,), (1,))}, {"0": FLOATS}),
             "holds 40 bytes but the checkpoint says it holds 3221225472")


@pytest.mark.parametrize("offset,size,stride,match", [
    (0, (11,), (1,), "reaches element 11"),
    (9, (2,), (1,), "reaches element 11"),
    (0, (4, 4), (3, 1), "reaches element 13"),
    (-1, (2,), (1,), "invalid storage offset"),
    (10**30, (1,), (1,), "reaches element"),
    (0, (2,), (-1,), "negative size or stride"),
    (0, (-2,), (1,), "negative size or stride"),
    (0, (2, 2), (1,), "invalid tensor size"),
    (0, (2.5,), (1,), "invalid tensor size"),
    ("0", (2,), (1,), "invalid storage offset"),
])
def test_out_of_range_or_malformed_views(tmp_path, offset, size, stride, match):
    rec = _Record("0", 10)
    _refused(tmp_path, _checkpoint({"a": _tensor(rec, offset, size, stride)}, {"0": FLOATS}),
             match)


@pytest.mark.parametrize("key,match", [
    ("../../etc/passwd", "invalid storage key"),
    ("1", "has no record 'data/1'"),
    (7, "invalid storage key"),
])
def test_bad_storage_keys(tmp_path, key, match):
    _refused(tmp_path, _checkpoint({"a": _tensor(_Record(key, 10), 0, (1,), (1,))},
                                   {"0": FLOATS}), match)


def test_same_key_claimed_with_two_sizes(tmp_path):
    obj = [_tensor(_Record("0", 10), 0, (1,), (1,)), _tensor(_Record("0", 5), 0, (1,), (1,))]
    _refused(tmp_path, _checkpoint(obj, {"0": FLOATS}), "two different sizes")


# ----------------------------------------------------------------------------- structure


def test_duplicate_members(tmp_path):
    good = _checkpoint({"a": 1}, {})
    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        members = [(n, zf.read(n)) for n in zf.namelist()]
    _refused(tmp_path, _zip(members + [members[0]]), "duplicate member 'archive/data.pkl'")


@pytest.mark.parametrize("name", ["../archive/data.pkl", "/archive/data.pkl",
                                  "archive/../../x/data.pkl", "archive\\..\\data.pkl"])
def test_path_traversal_names(tmp_path, name):
    members = [("archive/data.pkl", _pickled({})), (name, b"x")]
    _refused(tmp_path, _zip(members), "unsafe member name|not in a subdirectory")


def test_members_outside_one_folder(tmp_path):
    _refused(tmp_path, _zip([("data.pkl", _pickled({}))]), "not in a subdirectory")
    _refused(tmp_path, _zip([("a/data.pkl", _pickled({})), ("b/x", b"")]), "2 top-level")
    _refused(tmp_path, _zip([("a/other", b"")]), "without data.pkl")


def _deep_list_pickle(depth: int) -> bytes:
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


def _deep_tuple_key_pickle(depth: int) -> bytes:
    # {((((),),),...): None} -- hashing a key this deep would overflow the C stack.
    return b"\x80\x02}" + b")" + b"\x85" * depth + b"Ns."


@pytest.mark.parametrize("payload", [_deep_list_pickle(100_000), _deep_tuple_key_pickle(200_000)])
def test_deeply_nested_pickles(tmp_path, payload):
    data = _zip([("archive/data.pkl", payload)])
    _refused(tmp_path, data, "nested more than 200 levels", pickle.UnpicklingError)


def test_moderate_nesting_loads(tmp_path):
    out = _load(tmp_path, _zip([("archive/data.pkl", _deep_list_pickle(50))]))
    for _ in range(49):
        out = out[0]
    assert out == []


# ----------------------------------------------------------------------- what never runs


def _raw_pickle(body: bytes) -> bytes:
    return _zip([("archive/data.pkl", b"\x80\x02" + body + b".")])


@pytest.mark.parametrize("body,match", [
    (b"cos\nsystem\nX\x04\x00\x00\x00echo\x85R", r"GLOBAL os\.system"),
    (b"cbuiltins\neval\nX\x01\x00\x00\x001\x85R", r"GLOBAL builtins\.eval"),
    (b"c__builtin__\ngetattr\n", r"GLOBAL builtins\.getattr"),
    (b"ctorch\nTensor\nJ\x00\x10\xa5\xd4\x85R", "constructor of Tensor"),  # Tensor(10**12)
    (b"cbuiltins\nbytearray\nJ\x00\x10\xa5\xd4\x85R", "bytearray may only"),
    (b"ccollections\nOrderedDict\n)R}X\x01\x00\x00\x00aK\x01sb", "OrderedDict"),  # fine
    (b"]K\x01\x82", "extension codes"),
    (b"cbuiltins\nbytes\nJ\x00\x10\xa5\xd4\x85R", "bytes may only"),  # bytes(10**12)
    (b"cnumpy\ndtype\nX\x01\x00\x00\x00O\x85R", "not a numeric type code|numeric NumPy"),
    # an array whose state claims 10**6 float64 elements from 8 bytes of data
    (b"cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R"
     b"(K\x01J@B\x0f\x00\x85cnumpy\ndtype\nX\x02\x00\x00\x00f8\x85R"
     b"(K\x03X\x01\x00\x00\x00<NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
     b"\x89C\x08\x00\x00\x00\x00\x00\x00\x00\x00tb", "bytes do not match"),
])
def test_restricted_opcodes_and_globals(tmp_path, body, match):
    if match == "OrderedDict":  # BUILD filling an OrderedDict's attributes is allowed
        out = _load(tmp_path, _raw_pickle(body))
        assert isinstance(out, collections.OrderedDict) and out.a == 1
        return
    _refused(tmp_path, _raw_pickle(body), match, pickle.UnpicklingError)


def test_build_and_setitem_on_tensors_refused(tmp_path):
    rec = _Record("0", 10)
    good = _pickled(_tensor(rec, 0, (10,), (1,)))[:-1]  # without STOP
    for tail, match in ((b"}X\x05\x00\x00\x00_data" b"Nsb.", "BUILD of a Tensor"),
                        (b"K\x00K\x07s.", "can only set items")):
        data = _zip([("archive/data.pkl", good + tail), ("archive/data/0", FLOATS)])
        _refused(tmp_path, data, match, pickle.UnpicklingError)


def test_pytorch_legacy_format_refused_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "hostile.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="_use_new_zipfile_serialization=False.*save it again"):
        microtorch.load(path)


@pytest.mark.parametrize("data,match", [
    (pickle.dumps({"w": [1.0, 2.0]}), "not a checkpoint.*bare pickle"),
    (bytes(range(256)) * 4, "not a checkpoint"),
    (b"", "not a checkpoint"),
    (b"PK\x03\x04garbage", "corrupt or truncated"),
])
def test_foreign_files(tmp_path, data, match):
    _refused(tmp_path, data, match)


def test_npz_is_not_a_checkpoint(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, a=np.arange(3))
    _refused(tmp_path, buf.getvalue(), "not in a subdirectory")


# ------------------------------------------------------------- truncation and bit flips


def _small_checkpoint() -> bytes:
    buf = io.BytesIO()
    flat = microtorch.arange(8.0)
    microtorch.save({"w": flat, "v": flat[2:6], "n": 3, "s": "text"}, buf)
    return buf.getvalue()


def test_truncation_at_every_byte(tmp_path):
    data = _small_checkpoint()
    for cut in range(len(data)):
        with pytest.raises(RuntimeError) as info:
            _load(tmp_path, data[:cut])
        assert "hostile.pt" in str(info.value), cut


def test_random_bit_flips_never_crash_or_corrupt_silently(tmp_path):
    data = _small_checkpoint()
    rng = random.Random(1234)
    detected = 0
    for _ in range(400):
        flipped = bytearray(data)
        pos = rng.randrange(len(flipped))
        flipped[pos] ^= 1 << rng.randrange(8)
        try:
            out = _load(tmp_path, bytes(flipped))
        except (RuntimeError, pickle.UnpicklingError) as exc:
            assert "hostile.pt" in str(exc), pos
            detected += 1
            continue
        # Undetected flips only hit bytes that carry nothing (timestamps, padding ...).
        assert out["w"].tolist() == list(range(8)) and out["v"].tolist() == [2, 3, 4, 5], pos
        assert out["n"] == 3 and out["s"] == "text", pos
    assert detected > 100


def test_many_members_may_not_add_up_to_a_bomb(tmp_path):
    """Each compressed member stays under the per-member bound; together they inflate far
    past what the file can hold."""
    block = bytes(64 << 10)  # each deflates to ~100 bytes; 300 of them make a ~60 KB file
    members = [(f"archive/data/{i}", block) for i in range(300)]
    data = _zip([("archive/data.pkl", _pickled({}))] + members, zipfile.ZIP_DEFLATED)
    _refused(tmp_path, data, "inflate to .* bytes in all")


def test_overlapping_stored_members_are_refused(tmp_path):
    """Two directory entries pointing at one stored member's bytes (the overlap trick of
    non-recursive zip bombs): the members add up to more than the file."""
    data = bytearray(_checkpoint({"a": _tensor(_Record("0", 10), 0, (10,), (1,))},
                                 {"0": FLOATS}))
    zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    big = zf.getinfo("archive/data/0")
    end = data.rindex(b"PK\x05\x06")
    central = data.index(b"PK\x01\x02")
    entry_end = data.index(b"PK\x01\x02", central + 4)  # the first central entry (data.pkl)
    # a copy of data.pkl's central entry, renamed, pointing where data/0's local header is
    first = bytes(data[central:entry_end])
    name_len = int.from_bytes(first[28:30], "little")
    clone = bytearray(first[:46] + b"archive/data/Z" + first[46 + name_len:])
    clone[28:30] = len(b"archive/data/Z").to_bytes(2, "little")
    clone[42:46] = big.header_offset.to_bytes(4, "little")
    count = int.from_bytes(data[end + 10:end + 12], "little") + 1
    size = int.from_bytes(data[end + 12:end + 16], "little") + len(clone)
    tail = bytearray(data[end:])
    tail[8:10] = tail[10:12] = count.to_bytes(2, "little")
    tail[12:16] = size.to_bytes(4, "little")
    patched = bytes(data[:end]) + bytes(clone) + bytes(tail)
    _refused(tmp_path, patched, "'archive/data/0' and 'archive/data/Z' overlap")


def test_typed_tensor_record_must_rebuild_from_a_storage(tmp_path):
    """``_rebuild_from_type_v2(torch.Tensor, torch.Tensor, (10**9,), None)``: PyTorch's
    weights_only load gives an uninitialised 10**9-element tensor from a few hundred
    bytes; microtorch refuses any rebuild that is not a view of a storage in the file."""
    typed = _pickler.TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
    tensor_class = _pickler.TorchGlobal("torch", "Tensor")
    data = _zip([("archive/data.pkl", _pickled(
        {"a": _pickler._Call(typed, (tensor_class, tensor_class, (10**9,), None))}))])
    assert len(data) < 1000
    _refused(tmp_path, data, "must come from a storage in the file")
    parameter = _pickler.TorchGlobal("torch.nn.parameter", "Parameter")
    rec = _Record("0", 10)
    ok = _checkpoint({"p": _pickler._Call(typed, (_REBUILD, parameter,
                                                  (rec, 0, (10,), (1,), False,
                                                   collections.OrderedDict()), None))},
                     {"0": FLOATS})
    assert type(_load(tmp_path, ok)["p"]) is microtorch.nn.Parameter


def test_shared_and_cyclic_references_round_trip(tmp_path):
    """``d['me'] = d`` loads (pickle's memo), as in PyTorch; shared containers and tensors
    stay shared; a checkpoint PyTorch wrote with a cycle loads too."""
    d: dict = {}
    d["me"] = d
    loop: list = [1]
    loop.append(loop)
    shared = microtorch.arange(3.0)
    d.update(loop=loop, a=shared, b=[shared, {"again": shared}], t=(loop, loop))
    path = tmp_path / "cycle.pt"
    microtorch.save(d, path)
    out = microtorch.load(path)
    assert out["me"] is out and out["loop"][1] is out["loop"]
    assert out["a"] is out["b"][0] is out["b"][1]["again"]
    assert out["t"][0] is out["t"][1] is out["loop"]
    torch = pytest.importorskip("torch")
    theirs = torch.load(path)
    assert theirs["me"] is theirs and theirs["a"] is theirs["b"][0]
    t: dict = {"x": torch.ones(2)}
    t["self"] = [t]
    torch.save(t, path)
    mine = microtorch.load(path)
    assert mine["self"][0] is mine and mine["x"].tolist() == [1.0, 1.0]
