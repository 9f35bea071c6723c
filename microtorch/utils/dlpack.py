"""``torch.utils.dlpack``: tensors to and from DLPack capsules and DLPack-capable arrays."""

from ..ops.dlpack import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
