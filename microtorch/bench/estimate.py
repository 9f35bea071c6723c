"""How long a benchmark will take, derived from a short calibration on this machine, now.

Nothing here is a constant measured elsewhere: each estimate counts the work a configuration
does (calls, steps, worker processes) and multiplies it by unit costs timed a moment before on
this machine (a zero_grad call per parameter and per byte, a training step of the MLP at K = 1
and 2, an op of the chain, a worker process's start, a garbage collection). Load that comes
or goes after the calibration is the estimate's error; the run prints it first and the report
sets it beside the time it took.

- ``study_spread``, ``estimate_study``: ``microtorch bench --model`` (its calibration steps
  are run by ``model_study``).
- ``calibrate_bench``, ``estimate_bench``: ``microtorch bench`` (full, quick, tiny).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import microtorch as mt

from .isolated import chain, run_worker, worker_command
from .measure import (
    SET_TO_NONE,
    STORAGES,
    _make_optimizer,
    _sync,
    _to_lib,
    _torch_on,
    median_seconds,
)

__all__ = ["study_spread", "estimate_study", "calibrate_bench", "estimate_bench",
           "format_seconds"]

# The bootstrap interval of a median spans about 1.96 standard errors either side (95 %),
# and the median's standard error is about 1.2533 times the mean's: sigma / sqrt(n).
_MEDIAN_Z = 1.96 * 1.2533
# A memory step runs with buffer counting on and samples memory after every phase: allow it
# twice the time of a timed step.
MEMORY_STEP_FACTOR = 2.0


def format_seconds(seconds: float) -> str:
    """``45 s``, ``3.2 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


# ------------------------------------------------------------------------ bench --model

def study_spread(samples: Sequence[float]) -> float:
    """The relative spread of step times (a robust sigma over the median: 1.4826 times the
    median absolute deviation), 0 with fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    med = _median(samples)
    mad = _median([abs(s - med) for s in samples])
    return 1.4826 * mad / med if med else 0.0


def _steps_for(spread: float, precision: float, lo: int, hi: int) -> int:
    """Timed steps until a median's interval is ``precision`` either side, from the spread."""
    wanted = math.ceil((_MEDIAN_Z * spread / precision) ** 2) if spread > 0 else lo
    return max(lo, min(hi, wanted))


def estimate_study(calibration: dict[str, Any], settings: float, plan: Any) -> dict[str, Any]:
    """Seconds a model study will take: per window size K, ``settings`` × (warm-up + the
    timed steps the calibrated spread asks for + the gradient check) default steps of K, the
    same again for the memory steps (three per setting, at ``MEMORY_STEP_FACTOR``), plus each
    round's batches and interval computation. ``settings`` counts a setting by its
    calibrated cost in default steps (a checkpointed step recomputes its forward).
    ``max_seconds``: with every window running ``max_steps``."""
    step_s = calibration["step_seconds"]
    window_s = calibration.get("window_seconds", {})
    round_overhead = calibration.get("interval_seconds", 0.0) * settings
    steps = _steps_for(calibration["spread"], plan.precision, plan.min_steps, plan.max_steps)

    def total(n: int) -> float:
        seconds = 0.0
        for k in plan.accum_steps:
            per_round = settings * step_s[k] + window_s.get(k, 0.0)
            timed = (2 + n) * per_round + max(0, n - plan.min_steps + 1) * round_overhead
            memory = settings * 3 * (MEMORY_STEP_FACTOR * step_s[k] + window_s.get(k, 0.0))
            seconds += timed + memory
        return seconds

    seconds, most = total(steps), total(plan.max_steps)
    steps_text = ", ".join(f"K={k} {step_s[k] * 1e3:.3g} ms" for k in plan.accum_steps)
    if plan.min_steps == plan.max_steps:
        why = f"{steps} timed steps per setting"
    else:
        why = (f"its spread of ±{calibration['spread']:.1%} asks for about {steps} timed steps "
               f"per setting to know each median to ±{plan.precision:.1%}")
    text = (f"expected about {format_seconds(seconds)} on this machine now (calibrated: a "
            f"default step takes {steps_text}; {why})")
    if most > seconds:
        text += (f"; at most {format_seconds(most)} ({plan.max_steps} steps per setting) if the "
                 "timings stay noisier")
    return {"seconds": seconds, "max_seconds": most, "steps": steps, "text": text,
            "calibration": {"step_seconds": {str(k): v for k, v in step_s.items()},
                            "spread": calibration["spread"]}}


# ----------------------------------------------------------------------------- bench

def _zero_grad_call(lib: Any, dev: str, n: int, shape: tuple[int, ...]) -> float:
    """Seconds of one refresh (a backward over ``n`` parameters) plus ``zero_grad(False)``:
    the unit of work of the zero_grad section."""
    value = np.ones(shape, dtype=np.float32)
    params = [_to_lib(lib, value, dev, True, copy=False) for _ in range(n)]
    optimizer = _make_optimizer(lib, params, "default")
    sync = _sync(lib, dev)

    def call() -> None:
        loss = params[0].sum()
        for p in params[1:]:
            loss = loss + p.sum()
        loss.backward()
        optimizer.zero_grad(set_to_none=False)
        sync()

    return median_seconds(call, 2)


def _chain_op(lib: Any, dev: str, numel: int) -> float:
    """Seconds per op of the op chain, forward and backward together."""
    x = _to_lib(lib, np.ones(numel, dtype=np.float32), dev, True)
    sync = _sync(lib, dev)
    length = 100

    def run() -> None:
        chain(x, length).sum().backward()
        x.grad = None
        sync()

    return median_seconds(run, 2) / length


def _mlp_steps(lib: Any, dev: str, cfg: Any) -> tuple[float, float]:
    """Seconds of one training step of the benchmark's MLP with Adam at K = 1 and K = 2."""
    from .study import _batches, _build_mlp, train_step

    model = _build_mlp(lib, tuple(cfg.mlp_dims)).to(dev)
    optimizer = _make_optimizer(lib, list(model.parameters()), "default", "adam")
    sync = _sync(lib, dev)
    out = []
    for k in (1, 2):
        batches = [(_to_lib(lib, x, dev), _to_lib(lib, y, dev)) for x, y in _batches(cfg, k, 0)]

        def step(batches: list = batches) -> None:
            train_step(model, optimizer, lib.nn.functional.cross_entropy, batches, True)
            sync()

        out.append(median_seconds(step, 3, warmup=2))
    return out[0], out[1]


def _worker_start(framework: str, threads: int | None) -> float:
    """Seconds to start a worker process of ``framework`` and import what it needs."""
    command = worker_command("microtorch.bench.isolated:op_chain_worker", lib_name=framework,
                             length=1, numel=1, repeats=1, warmup=0)
    t0 = time.perf_counter()
    run_worker(command, threads, framework=framework)
    return time.perf_counter() - t0


def calibrate_bench(cfg: Any, devices: Sequence[str], torch: Any) -> dict[str, Any]:
    """The unit costs ``estimate_bench`` multiplies, timed now (a few seconds, most of them
    the two worker starts)."""
    started = time.perf_counter()
    threads = torch.get_num_threads() if torch is not None else None
    calib: dict[str, Any] = {"devices": {}, "worker_start": {}}
    for dev in devices:
        libs = {"microtorch": mt, **({"torch": torch} if _torch_on(torch, dev) else {})}
        per: dict[str, Any] = {}
        for name, lib in libs.items():
            small_n, big_n, big = 200, 8, (1024, 1024)
            per_param = _zero_grad_call(lib, dev, small_n, (64,)) / small_n
            per_big = _zero_grad_call(lib, dev, big_n, big) / big_n
            per_element = max(0.0, per_big - per_param) / math.prod(big)
            one, two = _mlp_steps(lib, dev, cfg)
            per[name] = {"zero_grad_per_param": per_param, "zero_grad_per_element": per_element,
                         "chain_op": _chain_op(lib, dev, cfg.chain_numel),
                         "mlp_step_k1": one, "mlp_step_per_extra_k": max(0.0, two - one)}
        calib["devices"][dev] = per
    for fw in (["microtorch", "torch"] if torch is not None else ["microtorch"]):
        calib["worker_start"][fw] = _worker_start(fw, threads)
    t0 = time.perf_counter()
    gc.collect()
    calib["gc"] = time.perf_counter() - t0
    calib["seconds"] = time.perf_counter() - started
    return calib


def _calls(repeats: int, block: int) -> int:
    """Calls ``measure.interleave`` makes per runner for ``repeats`` recorded ones."""
    per_block = max(1, block - 1)
    return max(1, -(-repeats // per_block)) * (per_block + 1)


def estimate_bench(cfg: Any, devices: Sequence[str], calib: dict[str, Any]) -> dict[str, Any]:
    """Seconds each section of ``run_benchmarks(cfg)`` will take on ``devices`` (PyTorch in
    the comparison wherever ``calib`` timed it), from ``calibrate_bench``'s unit costs."""
    sections: dict[str, float] = {}
    start = calib["worker_start"]
    for dev in devices:
        per = calib["devices"][dev]
        libs = list(per)
        contenders = {"microtorch": len(STORAGES), "torch": 2}  # PyTorch: default, foreach

        def step(lib: str, k: int, dev_costs: dict = per) -> float:
            c = dev_costs[lib]
            return c["mlp_step_k1"] + (k - 1) * c["mlp_step_per_extra_k"]

        cases = cfg.zero_grad_cases + (cfg.gpu_extra_cases if dev != "cpu" else [])
        zero = 0.0
        for n, shape in cases:
            numel = math.prod(shape)
            repeats = cfg.big_case_repeats if n * numel >= 1 << 24 else cfg.zero_grad_repeats
            for lib in libs:
                c = per[lib]
                call = n * (c["zero_grad_per_param"] + numel * c["zero_grad_per_element"])
                zero += len(SET_TO_NONE) * contenders[lib] * _calls(repeats, cfg.block) * call
        sections[f"{dev}/zero_grad"] = zero
        chain_run = {lib: cfg.chain_length * per[lib]["chain_op"] for lib in libs}
        if dev == "cpu" and "torch" in libs:  # each framework alone in its worker processes
            sections[f"{dev}/op_chain"] = cfg.isolated_rounds * sum(
                start[lib] + (cfg.chain_repeats + 3) * chain_run[lib] for lib in libs)
        else:
            sections[f"{dev}/op_chain"] = _calls(cfg.chain_repeats, cfg.block) * sum(
                chain_run.values())
        settings = [(k, storage, stn) for k in cfg.accum_steps for storage in STORAGES
                    for stn in SET_TO_NONE]
        per_worker = cfg.step_warmup + -(-cfg.step_repeats // cfg.isolated_rounds)
        sections[f"{dev}/train_step"] = cfg.isolated_rounds * sum(
            start[lib] + sum(per_worker * step(lib, k) for k, _, _ in settings) for lib in libs)
        sections[f"{dev}/memory"] = sum(
            (1 + cfg.memory_steps) * MEMORY_STEP_FACTOR * step("microtorch", k) + calib["gc"]
            for k, _, _ in settings)
    seconds = sum(sections.values())
    costs = calib["devices"][devices[0]]["microtorch"]
    text = (f"expected about {format_seconds(seconds)} on this machine now (calibrated in "
            f"{calib['seconds']:.1f} s: MLP step {costs['mlp_step_k1'] * 1e3:.2f} ms, a worker "
            "process starts in " + " / ".join(f"{v:.1f} s ({k})" for k, v in start.items())
            + f"; largest section: {max(sections, key=sections.get)})")
    return {"seconds": seconds, "sections": sections, "text": text}
