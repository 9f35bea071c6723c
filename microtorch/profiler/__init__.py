"""``torch.profiler``: record which ops a program runs, for how long, with which shapes and
how much memory they allocate; print PyTorch's tables, write Chrome traces.

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
"""

from ..autograd.profiler import record_function
from ..autograd.profiler_util import DeviceType
from . import itt
from .profiler import (
    ProfilerAction,
    ProfilerActivity,
    _KinetoProfile,
    kineto_available,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function", "itt"]
_ = _KinetoProfile  # (PyTorch exposes it here too)
