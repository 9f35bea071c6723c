"""The modules behind ``microtorch.utils.benchmark``, at PyTorch's paths
(``torch.utils.benchmark.utils.common`` and so on), so imports of those paths carry over."""
