"""Benchmarks behind ``microtorch bench``: the set_to_none study and the speed comparisons.

Modules, with imports running one way (``measure`` <- ``isolated``, ``report`` <- ``study``,
``distributed``):

- ``measure``: timing statistics, machine description, contenders, alternating-block scheduling;
- ``study``: the sections (zero_grad, training step, memory, op chain) and ``run_benchmarks``;
- ``isolated``: each framework alone in its own worker processes, rounds alternating (the
  training step, the CPU op chain; ``benchmarks/models.py``);
- ``model_study`` / ``model_report``: the set_to_none study of a user's model (``--model``);
- ``plots``: every figure;
- ``report``: ``report.md`` tables, PNG plots, ``write_outputs``;
- ``distributed``: ``microtorch bench --distributed`` (data-parallel communication over MPI).
"""

from .measure import STORAGES, interleave, load_torch, machine_info, summarize
from .model_study import ModelSpec, ModelStudy, ModelStudyError, study_model
from .report import write_outputs, write_report
from .study import BenchConfig, run_benchmarks

__all__ = ["study_model", "ModelStudy", "ModelSpec", "ModelStudyError", "BenchConfig",
           "run_benchmarks", "write_outputs", "write_report", "machine_info",
           "summarize", "interleave", "load_torch", "STORAGES"]
