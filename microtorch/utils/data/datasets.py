"""Datasets that need no download: scikit-learn's 8x8 digits and MNIST-format IDX files.

``load_digits`` / ``Digits`` are the default data of ``microtorch train``.  ``MNIST`` and
``FashionMNIST`` read the four IDX files of those datasets from a directory the user points
at (we never download anything); ``read_idx`` parses one IDX file, raw or gzip-compressed.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..._tensor import Tensor
from ...backend.rng import Generator
from ...ops.creation import from_numpy
from .dataset import TensorDataset

__all__ = ["load_digits", "Digits", "read_idx", "MNIST", "FashionMNIST"]

PathLike = str | os.PathLike

# ------------------------------------------------------------------------------- digits

DIGITS_SEED = 0
DIGITS_TEST_FRACTION = 0.2


def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError:
        raise ImportError("the digits dataset ships with scikit-learn, which is not installed: "
                          "pip install 'microtorch[cli]' (or scikit-learn)") from None
    bunch = sk_load_digits()
    # Pixels are integers 0..16; dividing by 16 in float32 maps them exactly onto [0, 1].
    images = (bunch.images.astype(np.float32) / np.float32(16.0)).astype(np.float32)
    return images, bunch.target.astype(np.int64)


def load_digits(split: str = "train", *, flatten: bool = True,
                test_fraction: float = DIGITS_TEST_FRACTION, seed: int = DIGITS_SEED,
                device=None) -> tuple[Tensor, Tensor]:
    """The 1797 handwritten 8x8 digits of scikit-learn as ``(images, labels)`` tensors.

    ``split`` is ``"train"``, ``"test"`` or ``"all"``.  Images are float32 in [0, 1], shaped
    (N, 64) with ``flatten`` else (N, 1, 8, 8); labels are int64 in 0..9.  The split is a
    fixed permutation (``randperm`` of a generator seeded with ``seed``): the last
    ``round(N * test_fraction)`` samples of it form the test set (359 of 1797 by default),
    so train and test are disjoint and identical on every machine.
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    images, labels = _digits_arrays()
    if split != "all":
        n = len(labels)
        order = Generator(seed).randperm(n)
        n_test = round(n * test_fraction)
        keep = order[n - n_test:] if split == "test" else order[:n - n_test]
        images, labels = images[keep], labels[keep]
    images = images.reshape(len(images), 64) if flatten else images[:, None, :, :]
    x = from_numpy(np.ascontiguousarray(images))
    y = from_numpy(labels)
    if device is not None:
        x, y = x.to(device), y.to(device)
    return x, y


class Digits(TensorDataset):
    """scikit-learn's 8x8 digits as a dataset of ``(image, label)`` pairs (see
    ``load_digits`` for the split, shapes and dtypes)."""

    classes = [str(d) for d in range(10)]

    def __init__(self, split: str = "train", *, flatten: bool = True, device=None,
                 test_fraction: float = DIGITS_TEST_FRACTION, seed: int = DIGITS_SEED) -> None:
        x, y = load_digits(split, flatten=flatten, test_fraction=test_fraction, seed=seed,
                           device=device)
        super().__init__(x, y)
        self.data, self.targets = x, y


# ---------------------------------------------------------------------------------- IDX

# The third byte of an IDX file names the element type; data is big-endian.
_IDX_DTYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
               0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # the gzip magic: decompress whatever the file is called
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt or truncated gzip data ({exc})") from None
    return raw


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file (the MNIST format), raw or gzip-compressed, as a NumPy array in
    native byte order.

    Raises FileNotFoundError if the file is missing and ValueError, naming the file, if it is
    malformed: a bad magic number, an unknown type code, a truncated header or data, or
    trailing bytes beyond the data the header announces.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise ValueError(f"{path}: not an IDX file (only {len(raw)} bytes, the header alone "
                         f"needs 4)")
    zero, code, ndim = raw[:2], raw[2], raw[3]
    if zero != b"\x00\x00" or code not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number 0x{raw[:4].hex()}; "
                         f"expected 0x0000 then a type code in "
                         f"{sorted(hex(c) for c in _IDX_DTYPES)} and the number of dimensions)")
    if ndim == 0:
        raise ValueError(f"{path}: malformed IDX header (0 dimensions)")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes, {ndim} dimensions "
                         f"need {header})")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    dtype = _IDX_DTYPES[code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    got = len(raw) - header
    if got < expected:
        raise ValueError(f"{path}: truncated IDX data (shape {shape} of {dtype.name} needs "
                         f"{expected} bytes after the header, the file has {got})")
    if got > expected:
        raise ValueError(f"{path}: IDX size mismatch ({got - expected} bytes beyond the "
                         f"{expected} that shape {shape} of {dtype.name} needs)")
    data = np.frombuffer(raw, dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))  # a writable native-order copy


def _find_idx(root: Path, stem: str) -> Path:
    """``root/stem`` or ``root/stem.gz``; also the ``<root>/<Name>/raw`` layout of
    torchvision downloads."""
    folders = [root, root / "raw"]
    tried = []
    for folder in folders:
        for name in (stem, stem + ".gz"):
            candidate = folder / name
            tried.append(str(candidate))
            if candidate.is_file():
                return candidate
    raise FileNotFoundError(f"{stem}[.gz] not found; looked for: {', '.join(tried)}")


class MNIST(TensorDataset):
    """MNIST from its four IDX files (raw or ``.gz``) in ``root``; nothing is downloaded.

    ``train=True`` reads ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte``, else the
    ``t10k-`` pair.  ``data`` holds the uint8 images (N, H, W) and ``targets`` the int64
    labels.  A sample is ``(image, label)``: the image a float32 tensor (1, H, W) in [0, 1]
    passed through ``transform`` if given, the label an int passed through
    ``target_transform``.  Also reads Fashion-MNIST, which uses the same files.
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root: PathLike, train: bool = True,
                 transform: Callable[[Tensor], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None,
                 download: bool = False) -> None:
        if download:
            raise ValueError("microtorch never downloads datasets: put the IDX files in "
                             f"{root} yourself and use download=False")
        root = Path(root)
        prefix = "train" if train else "t10k"
        images_path = _find_idx(root, f"{prefix}-images-idx3-ubyte")
        labels_path = _find_idx(root, f"{prefix}-labels-idx1-ubyte")
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise ValueError(f"{images_path}: expected uint8 images of 3 dimensions (N, H, W), "
                             f"got {images.dtype} of shape {images.shape}")
        if labels.ndim != 1 or labels.dtype != np.uint8:
            raise ValueError(f"{labels_path}: expected uint8 labels of 1 dimension (N,), got "
                             f"{labels.dtype} of shape {labels.shape}")
        if len(images) != len(labels):
            raise ValueError(f"{images_path} holds {len(images)} images but {labels_path} "
                             f"holds {len(labels)} labels")
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        self.data = from_numpy(images)
        self.targets = from_numpy(labels.astype(np.int64))
        # Scaled once here so that indexing and batching are plain tensor reads.
        scaled = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
        super().__init__(from_numpy(np.ascontiguousarray(scaled)), self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, label = self.tensors[0][index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label


class FashionMNIST(MNIST):
    """Fashion-MNIST: the same IDX files and layout as ``MNIST``, with clothing classes."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]

