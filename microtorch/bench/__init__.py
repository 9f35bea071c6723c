"""Benchmarks behind ``microtorch bench``: the set_to_none study and the speed comparisons.

Modules, with imports running one way (``measure`` <- ``isolated``, ``report`` <- ``study``,
``distributed``):

- ``measure``: timing statistics, machine description, contenders, alternating-block scheduling;
- ``study``: the sections (zero_grad, training step, memory, op chain) and ``run_benchmarks``;
- ``isolated``: each framework alone in its own worker processes, rounds alternating (the
  training step, the CPU op chain; ``benchmarks/models.py``);
- ``verdict``: differences and targets judged on bootstrap intervals, not on medians alone;
- ``estimate``: how long a run will take, from a short calibration on this machine;
- ``model_study`` / ``model_report``: the set_to_none study of a user's model (``--model``);
- ``plots``: every figure;
- ``report``: ``report.md`` tables of a full run; ``outputs``: ``write_outputs`` for any kind
  of results (re-rendering a saved ``results.json``);
- ``distributed``: ``microtorch bench --distributed`` (data-parallel communication over MPI).
"""

from .measure import STORAGES, interleave, load_torch, machine_info, summarize
from .model_study import ModelSpec, ModelStudy, ModelStudyError, study_model
from .outputs import write_outputs
from .report import write_report
from .study import BenchConfig, run_benchmarks

__all__ = ["study_model", "ModelStudy", "ModelSpec", "ModelStudyError", "BenchConfig",
           "run_benchmarks", "write_outputs", "write_report", "machine_info",
           "summarize", "interleave", "load_torch", "STORAGES"]
