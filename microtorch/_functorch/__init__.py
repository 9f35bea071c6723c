"""The machinery behind ``microtorch.func`` (PyTorch's ``torch._functorch``): vmap's batched
arrays and their batching rules, and the function transforms."""
