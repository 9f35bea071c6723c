"""utils.data: datasets, samplers, DataLoader (PyTorch's shuffle order), collate, random_split,
the digits dataset and the IDX (MNIST) reader."""

from __future__ import annotations

import collections
import gzip
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import microtorch
from microtorch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    default_convert,
    random_split,
)
from microtorch.utils.data.datasets import (
    MNIST,
    Digits,
    FashionMNIST,
    load_digits,
    read_idx,
)


def _dataset(n: int = 10, device: str = "cpu") -> TensorDataset:
    x = microtorch.arange(n * 2, dtype=microtorch.float32, device=device).reshape(n, 2)
    y = microtorch.arange(n, device=device)
    return TensorDataset(x, y)


class Squares(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple:
        return i, float(i * i)


class Stream(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


# ------------------------------------------------------------------------- datasets


def test_tensor_dataset_rows_and_length():
    ds = _dataset(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and int(y) == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(microtorch.zeros(3), microtorch.zeros(4))


def test_subset_and_concat():
    ds = Squares(5)
    sub = Subset(ds, [4, 0, 2])
    assert len(sub) == 3 and sub[0] == (4, 16.0) and sub[2] == (2, 4.0)
    cat = ds + Squares(3)
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert cat[5] == (0, 0.0) and cat[-1] == (2, 4.0) and cat[4] == (4, 16.0)
    with pytest.raises(IndexError):
        cat[8]
    with pytest.raises(ValueError):
        ConcatDataset([])


# ----------------------------------------------------------------------- DataLoader


def test_dataloader_batches_in_order(device):
    loader = DataLoader(_dataset(10, device), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    x, y = batches[0]
    assert x.shape == (4, 2) and x.dtype == microtorch.float32 and y.dtype == microtorch.int64
    assert x.device.type == microtorch.device(device).type  # cuda:0 for "cuda", as in PyTorch


def test_dataloader_drop_last():
    loader = DataLoader(_dataset(10), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_dataloader_generic_dataset_collates_numbers():
    x, y = next(iter(DataLoader(Squares(6), batch_size=3)))
    assert x.dtype == microtorch.int64 and x.tolist() == [0, 1, 2]
    assert y.dtype == microtorch.float64 and y.tolist() == [0.0, 1.0, 4.0]


def test_fast_tensor_path_matches_default_collate():
    ds = _dataset(7)
    fast = list(DataLoader(ds, batch_size=3))
    slow = list(DataLoader(ds, batch_size=3, collate_fn=lambda b: default_collate(b)))
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert fx.tolist() == sx.tolist() and fy.tolist() == sy.tolist()
        assert fx.dtype == sx.dtype and fy.dtype == sy.dtype


def test_dataloader_shuffle_is_a_seeded_permutation():
    ds = _dataset(20)

    def order(seed: int) -> list[int]:
        g = microtorch.Generator().manual_seed(seed)
        return [i for b in DataLoader(ds, batch_size=6, shuffle=True, generator=g)
                for i in b[1].tolist()]

    a, b = order(3), order(3)
    assert a == b and sorted(a) == list(range(20)) and a != list(range(20))


def test_dataloader_batch_size_none_and_custom_collate():
    items = list(DataLoader(Squares(3), batch_size=None))
    assert items == [[0, 0.0], [1, 1.0], [2, 4.0]]  # default_convert turns tuples into lists
    sums = list(DataLoader(Squares(4), batch_size=2, collate_fn=lambda b: sum(i for i, _ in b)))
    assert sums == [1, 5]


def test_sampler_and_batch_sampler_arguments():
    ds = Squares(6)
    loader = DataLoader(ds, batch_size=2, sampler=[5, 4, 3, 2, 1, 0])
    assert [b[0].tolist() for b in loader] == [[5, 4], [3, 2], [1, 0]]
    loader = DataLoader(ds, batch_sampler=[[0, 5], [1]])
    assert [b[0].tolist() for b in loader] == [[0, 5], [1]]
    assert len(DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(ds), 4, False))) == 2
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)


def test_worker_arguments_validated():
    with pytest.raises(ValueError, match="non-negative"):
        DataLoader(Squares(3), num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(Squares(3), prefetch_factor=2)
    with pytest.raises(ValueError, match="prefetch_factor should be a positive integer"):
        DataLoader(Squares(3), num_workers=1, prefetch_factor=0)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(3), persistent_workers=True)
    assert DataLoader(Squares(3), num_workers=2).prefetch_factor == 2


def test_iterable_dataset():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                          [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(3), shuffle=True)


def test_batch_sampler_lengths():
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(range(5), 2, drop_last=True)) == [[0, 1], [2, 3]]
    assert len(BatchSampler(range(5), 2, False)) == 3 and len(BatchSampler(range(5), 2, True)) == 2
    with pytest.raises(ValueError):
        BatchSampler(range(5), 0, False)


# ------------------------------------------------------------------------- collate


def test_default_collate_tuples_dicts_arrays():
    batch = [(np.array([1.0, 2.0], np.float32), 1, {"a": 0.5, "s": "x"}),
             (np.array([3.0, 4.0], np.float32), 2, {"a": 1.5, "s": "y"})]
    arrays, ints, d = default_collate(batch)
    assert arrays.dtype == microtorch.float32 and arrays.tolist() == [[1, 2], [3, 4]]
    assert ints.dtype == microtorch.int64 and ints.tolist() == [1, 2]
    assert d["a"].dtype == microtorch.float64 and d["s"] == ["x", "y"]
    assert default_collate([True, False]).dtype == microtorch.bool
    assert default_collate([np.int32(1), np.int32(2)]).dtype == microtorch.int32
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    assert [t.tolist() for t in default_collate([[1, 2], [3, 4]])] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError):
        default_collate([object(), object()])


def test_default_convert():
    out = default_convert((np.zeros(2), 3, "s"))
    assert isinstance(out, list) and isinstance(out[0], microtorch.Tensor) and out[1:] == [3, "s"]


@pytest.mark.torch
def test_collate_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    batch = [(1, 2.5, True, np.float32(1.5), np.arange(3, dtype=np.int32)),
             (2, 3.5, False, np.float32(2.5), np.arange(3, 6, dtype=np.int32))]
    ours, theirs = default_collate(batch), torch_collate(batch)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.tolist() == b.tolist()
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


# ----------------------------------------------------------- PyTorch's random order


@pytest.mark.torch
@pytest.mark.parametrize("seed", [0, 1, 1234])
def test_shuffle_order_equals_torch_global_generator(seed):
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    n, bs = 37, 8
    ours = DataLoader(_dataset(n), batch_size=bs, shuffle=True)
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.arange(n)), batch_size=bs, shuffle=True)
    microtorch.manual_seed(seed)
    torch.manual_seed(seed)
    for _epoch in range(3):
        assert [b[1].tolist() for b in ours] == [b[0].tolist() for b in theirs]
    # The global stream has advanced exactly as in PyTorch (seed draws included).
    assert microtorch.rand(4).tolist() == torch.rand(4).tolist()


@pytest.mark.torch
def test_shuffle_order_equals_torch_with_generator_and_drop_last():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    n, bs = 23, 5
    ours = DataLoader(_dataset(n), batch_size=bs, shuffle=True, drop_last=True,
                      generator=microtorch.Generator().manual_seed(7))
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.arange(n)), batch_size=bs,
                              shuffle=True, drop_last=True,
                              generator=torch.Generator().manual_seed(7))
    for _epoch in range(3):
        assert [b[1].tolist() for b in ours] == [b[0].tolist() for b in theirs]


@pytest.mark.torch
def test_random_sampler_variants_equal_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    data = list(range(50))
    for kwargs in ({}, {"num_samples": 120}, {"num_samples": 7}, {"replacement": True},
                   {"replacement": True, "num_samples": 70}):
        ours = RandomSampler(data, generator=microtorch.Generator().manual_seed(5), **kwargs)
        theirs = tdata.RandomSampler(data, generator=torch.Generator().manual_seed(5), **kwargs)
        assert list(ours) == list(theirs) and list(ours) == list(theirs), kwargs
        assert len(ours) == len(theirs)
    microtorch.manual_seed(9)
    torch.manual_seed(9)
    assert list(SubsetRandomSampler([3, 5, 7, 9])) == list(tdata.SubsetRandomSampler([3, 5, 7, 9]))


@pytest.mark.torch
@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [10, 0]])
def test_random_split_equals_torch(lengths):
    torch = pytest.importorskip("torch")
    import torch.utils.data as tdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a split of length 0 warns, in both libraries
        ours = random_split(Squares(10), lengths, generator=microtorch.Generator().manual_seed(42))
        theirs = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(42))
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]
    microtorch.manual_seed(3)
    torch.manual_seed(3)
    ours = random_split(Squares(10), [4, 6])  # default: the global generator
    theirs = tdata.random_split(range(10), [4, 6])
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]


def test_random_split_validates_lengths():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(Squares(10), [3, 3])
    parts = random_split(Squares(11), [0.5, 0.5], generator=microtorch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [6, 5]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(11))


# --------------------------------------------------------------------------- digits


def test_digits_shapes_dtypes_range_and_split():
    pytest.importorskip("sklearn")
    x, y = load_digits("train")
    xt, yt = load_digits("test")
    xa, ya = load_digits("all", flatten=False)
    assert x.shape == (1438, 64) and xt.shape == (359, 64) and xa.shape == (1797, 1, 8, 8)
    assert x.dtype == microtorch.float32 and y.dtype == microtorch.int64
    assert float(xa.min()) == 0.0 and float(xa.max()) == 1.0
    assert sorted(set(y.tolist())) == list(range(10))
    # Deterministic, disjoint, and together exactly the whole set.
    x2, _ = load_digits("train")
    assert np.array_equal(x.numpy(), x2.numpy())
    rows = {r.tobytes() for r in np.concatenate([x.numpy(), xt.numpy()])}
    all_rows = {r.tobytes() for r in xa.numpy().reshape(-1, 64)}
    assert rows == all_rows
    ds = Digits("test")
    img, label = ds[0]
    assert len(ds) == 359 and img.shape == (64,) and label.dtype == microtorch.int64
    with pytest.raises(ValueError, match="split"):
        load_digits("validation")


# ---------------------------------------------------------------------- IDX / MNIST


def _idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    dtype = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}[code]
    header = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(dtype).tobytes()


def _write(path: Path, data: bytes, compress: bool) -> Path:
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("code,dtype", [(0x08, np.uint8), (0x09, np.int8), (0x0B, np.int16),
                                        (0x0C, np.int32), (0x0D, np.float32),
                                        (0x0E, np.float64)])
def test_read_idx_roundtrip(tmp_path, compress, code, dtype):
    arr = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4)
    if dtype == np.uint8:
        arr = arr + 5
    arr = arr.astype(dtype)
    path = _write(tmp_path / "data-idx", _idx_bytes(arr, code), compress)
    out = read_idx(path)
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    assert np.array_equal(out, arr)
    out[0, 0, 0] = 1  # a writable copy


def _mnist_files(root: Path, n: int = 5, train: bool = True, compress: bool = False,
                 n_labels: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 4, 3), dtype=np.uint8)
    labels = (np.arange(n if n_labels is None else n_labels) % 10).astype(np.uint8)
    prefix = "train" if train else "t10k"
    _write(root / f"{prefix}-images-idx3-ubyte", _idx_bytes(images), compress)
    _write(root / f"{prefix}-labels-idx1-ubyte", _idx_bytes(labels), compress)
    return images


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_dataset(tmp_path, compress):
    images = _mnist_files(tmp_path, n=5, train=False, compress=compress)
    ds = MNIST(tmp_path, train=False)
    assert len(ds) == 5
    assert ds.data.dtype == microtorch.uint8 and ds.targets.dtype == microtorch.int64
    img, label = ds[2]
    assert img.shape == (1, 4, 3) and img.dtype == microtorch.float32 and label == 2
    np.testing.assert_array_equal(img.numpy()[0], images[2].astype(np.float32) / 255)
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 1, 4, 3) and y.tolist() == [0, 1, 2, 3]
    flipped = FashionMNIST(tmp_path, train=False, transform=lambda t: t * 2,
                           target_transform=lambda k: k + 100)
    img2, label2 = flipped[2]
    assert label2 == 102 and np.allclose(img2.numpy(), img.numpy() * 2)
    assert FashionMNIST.classes[9] == "Ankle boot"


def test_mnist_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        MNIST(tmp_path)
    _mnist_files(tmp_path, train=True)
    (tmp_path / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte"):
        MNIST(tmp_path)
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        read_idx(tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="never downloads"):
        MNIST(tmp_path, download=True)


def test_mnist_count_mismatch(tmp_path):
    _mnist_files(tmp_path, n=5, n_labels=4)
    with pytest.raises(ValueError, match="5 images but .*4 labels"):
        MNIST(tmp_path)


def test_mnist_wrong_dimensions(tmp_path):
    _write(tmp_path / "train-images-idx3-ubyte", _idx_bytes(np.zeros((5, 12), np.uint8)), False)
    _write(tmp_path / "train-labels-idx1-ubyte", _idx_bytes(np.zeros(5, np.uint8)), False)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.*3 dimensions"):
        MNIST(tmp_path)
    _write(tmp_path / "train-images-idx3-ubyte", _idx_bytes(np.zeros((5, 2, 2), np.uint8)),
           False)
    _write(tmp_path / "train-labels-idx1-ubyte", _idx_bytes(np.zeros((5, 1), np.uint8)), False)
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte.*1 dimension"):
        MNIST(tmp_path)


GOOD = _idx_bytes(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("data,message", [
    (b"\x00\x00", "only 2 bytes"),
    (b"\x12\x34\x08\x03" + GOOD[4:], "bad magic number 0x12340803"),
    (b"\x00\x00\x07\x03" + GOOD[4:], "bad magic number"),
    (b"\x00\x00\x08\x00", "0 dimensions"),
    (GOOD[:10], "truncated IDX header"),
    (GOOD[:-1], "truncated IDX data"),
    (GOOD[:16], "needs 24 bytes after the header, the file has 0"),
    (GOOD + b"\x00\x00", "2 bytes beyond"),
])
def test_read_idx_malformed(tmp_path, compress, data, message):
    path = _write(tmp_path / "bad-idx3-ubyte", data, compress)
    with pytest.raises(ValueError, match=message) as info:
        read_idx(path)
    assert path.name in str(info.value)


def test_read_idx_corrupt_gzip(tmp_path):
    path = tmp_path / "x-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(GOOD)[:-6])
    with pytest.raises(ValueError, match="x-idx1-ubyte.gz.*gzip"):
        read_idx(path)
