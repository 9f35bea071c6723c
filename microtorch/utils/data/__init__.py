"""Datasets, samplers and the DataLoader, as in ``torch.utils.data``.

Offline datasets (the scikit-learn digits, MNIST-format IDX files) live in
``microtorch.utils.data.datasets``.
"""

from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "DataLoader", "default_collate", "default_convert", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "get_worker_info", "WorkerInfo"]

from .dataset import ChainDataset, StackDataset  # noqa: E402
from .distributed import DistributedSampler  # noqa: E402

__all__ += ["ChainDataset", "StackDataset", "DistributedSampler"]
