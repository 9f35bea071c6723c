"""The set_to_none study on a user's own model: ``microtorch bench --model FILE.py``.

A *model spec* is a Python file (or an importable module) that defines

- ``model()`` -> an ``nn.Module`` (built fresh on every call),
- ``batch()`` -> ``(inputs, targets)`` (one micro-batch; called again for every micro-batch),
- optionally ``loss(output, target)`` (default: cross-entropy) and ``optimizer(params)``
  (default: ``SGD(params, lr=0.01)``).

``study_model`` trains that model under every combination of
``zero_grad(set_to_none=True/False)`` and gradient storage (default, ``foreach=True``,
``flat_grads=True``), for each gradient-accumulation window (1, 4 and 8 micro-batches by
default). Every setting starts from the same initial weights and, before every step, from the
same random state (so dropout draws the same masks), on the same batches; the settings take
turns step by step (the order reversed every round), so drift of the machine hits them alike.
Timing-based kernel choice (``measure.TIMING_CHOICE_FLAGS``) is off throughout.

It times, per step, the forward passes, backward (where assigning a fresh gradient instead of
adding into zeros saves a pass), ``optimizer.step``, ``zero_grad`` and the whole step (the
rest, "other", is ``loss.item()`` and the Python between the phases), and keeps stepping
until the median whole step of every setting is known to ``precision`` either side (a
bootstrap interval) or ``max_steps`` is reached. It measures the bytes held between steps, the
peak of a step and memory after each forward, backward, step and zero_grad of two steps.
Every setting must give bit-identical losses and final weights: a mismatch is a defect.
``model_report.recommend`` turns the numbers into advice.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import microtorch as mt

from .estimate import estimate_study, study_spread
from .measure import (
    SET_TO_NONE,
    STORAGES,
    Progress,
    check_no_timing_choice,
    load_average,
    machine_busy,
    machine_info,
    no_timing_choice,
    summarize,
)
from .verdict import precise_enough, relative_half_width

__all__ = ["ModelSpec", "ModelStudy", "ModelStudyError", "StudyPlan", "load_model_spec",
           "study_model"]

# The points of a step where memory is sampled (one forward/backward pair per micro-batch).
PHASES = ("forward", "backward", "step", "zero_grad")
# What is timed per step: the phases summed over the step's micro-batches, the whole step, and
# the rest of it (whole step minus the phases).
TIMED = (*PHASES, "total", "other")
# Seeds: model() runs after manual_seed(INIT_SEED); the batches of window (K, step) and the
# step's own random draws (dropout) come from seeds derived from (purpose, K, step).
INIT_SEED, BATCH_SEEDS, STEP_SEEDS = 0, 1, 2
# The clock of every timing here (tests replace it with a deterministic one).
_clock = time.perf_counter
DEFAULT_PRECISION = 0.02
DEFAULT_MIN_STEPS = 10
DEFAULT_MAX_STEPS = 50


class ModelStudyError(ValueError):
    """A model spec that cannot be studied (missing function, failing forward, ...)."""


@dataclass
class ModelSpec:
    """What ``study_model`` needs of a user's model: how to build it and feed it."""

    name: str
    model: Callable[[], Any]
    batch: Callable[[], tuple[Any, Any]]
    loss: Callable[[Any, Any], Any] | None = None
    optimizer: Callable[[list], Any] | None = None


def _import_spec_module(spec: str) -> Any:
    if spec.endswith(".py"):
        path = Path(spec)
        if not path.is_file():
            raise ModelStudyError(f"--model {spec}: no such file")
        module_spec = importlib.util.spec_from_file_location(f"_microtorch_model_{path.stem}",
                                                             path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's file: report, do not crash
            raise ModelStudyError(f"--model {spec}: importing it failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise ModelStudyError(f"--model {spec}: cannot import it ({exc})") from exc


def load_model_spec(spec: str | ModelSpec | Any) -> ModelSpec:
    """A ``ModelSpec`` from a file path (``net.py``), a module (``pkg.net``), a
    ``module:factory`` whose factory returns an object or mapping with the spec's functions,
    or an object (module, namespace, mapping) that has them."""
    if isinstance(spec, ModelSpec):
        return spec
    name = spec if isinstance(spec, str) else getattr(spec, "__name__", type(spec).__name__)
    source = spec
    if isinstance(spec, str):
        module_name, _, factory = spec.partition(":") if not spec.endswith(".py") else (
            spec, "", "")
        source = _import_spec_module(module_name)
        if factory:
            if not callable(getattr(source, factory, None)):
                raise ModelStudyError(f"--model {spec}: {module_name} has no function {factory}")
            source = getattr(source, factory)()

    def get(key: str) -> Any:
        value = source.get(key) if isinstance(source, dict) else getattr(source, key, None)
        if value is not None and not callable(value):
            raise ModelStudyError(f"--model {name}: {key} must be a function, got "
                                  f"{type(value).__name__}")
        return value

    missing = [key for key in ("model", "batch") if get(key) is None]
    if missing:
        absent = " and no ".join(f"{k}()" for k in missing)
        raise ModelStudyError(f"--model {name}: defines no {absent} "
                              "(it needs model() -> nn.Module and batch() -> (inputs, targets))")
    return ModelSpec(name, get("model"), get("batch"), get("loss"), get("optimizer"))


# ----------------------------------------------------------------------------- one setting

def _tensors(obj: Any) -> list[Any]:
    if isinstance(obj, mt.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _tensors(item)]
    return []


def _check_batch(spec: ModelSpec, batch: Any, device: str) -> tuple[Any, Any]:
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise ModelStudyError(f"--model {spec.name}: batch() must return (inputs, targets), got "
                              f"{type(batch).__name__}")
    want = mt.device(device)
    for t in _tensors(batch):
        if t.device != want:
            raise ModelStudyError(f"--model {spec.name}: batch() returned a tensor on "
                                  f"{t.device}, but the study runs on {want} (--device)")
    return batch[0], batch[1]


def _call_model(model: Any, inputs: Any) -> Any:
    return model(*inputs) if isinstance(inputs, (tuple, list)) else model(inputs)


def _seed(purpose: int, k: int, step: int) -> None:
    """Seed every generator for (purpose, K, step): the same state in every setting."""
    mt.manual_seed(1_000_003 * purpose + 1_009 * k + step)


def _window(spec: ModelSpec, device: str, k: int, step: int) -> list[tuple[Any, Any]]:
    """The K micro-batches of step ``step`` (the same in every setting and every run)."""
    _seed(BATCH_SEEDS, k, step)
    window = []
    for _ in range(k):
        try:
            made = spec.batch()
        except Exception as exc:  # noqa: BLE001
            raise ModelStudyError(f"--model {spec.name}: batch() failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        window.append(_check_batch(spec, made, device))
    return window


class _Setting:
    """One model + optimizer under one (set_to_none, storage) setting, stepping on batches."""

    def __init__(self, spec: ModelSpec, device: str, storage: str, set_to_none: bool) -> None:
        mt.manual_seed(INIT_SEED)  # the same initial weights in every setting
        try:
            self.model = spec.model()
        except Exception as exc:  # noqa: BLE001
            raise ModelStudyError(f"--model {spec.name}: model() failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(self.model, mt.nn.Module):
            raise ModelStudyError(f"--model {spec.name}: model() must return an nn.Module, got "
                                  f"{type(self.model).__name__}")
        self.model.to(device)
        self.spec, self.storage, self.set_to_none = spec, storage, set_to_none
        self.optimizer = self._optimizer(list(self.model.parameters()))
        self.loss_fn = spec.loss or mt.nn.functional.cross_entropy
        self.sync = mt.cuda.synchronize if device != "cpu" else (lambda: None)

    def _optimizer(self, params: list) -> Any:
        made = (self.spec.optimizer(params) if self.spec.optimizer
                else mt.optim.SGD(params, lr=0.01))
        if not isinstance(made, mt.optim.Optimizer):
            raise ModelStudyError(f"--model {self.spec.name}: optimizer(params) must return a "
                                  f"microtorch optimizer, got {type(made).__name__}")
        # The same optimizer, rebuilt with this setting's gradient storage.
        groups = [{k: v for k, v in g.items() if k != "foreach"} for g in made.param_groups]
        return type(made)(groups, foreach=self.storage == "foreach",
                          flat_grads=self.storage == "flat")

    def step(self, k: int, step: int, batches: Sequence[tuple[Any, Any]],
             times: dict[str, list[float]] | None = None,
             sample: Callable[[str], None] | None = None) -> float:
        """Step ``step`` of window size ``k`` over ``batches`` (loss / K each), from the random
        state of (K, step); returns the summed loss. ``times`` gets the step's phases."""
        _seed(STEP_SEEDS, k, step)
        total, forward, backward = 0.0, 0.0, 0.0
        clock = _clock
        begin = clock()
        for inputs, target in batches:
            t0 = clock()
            try:
                loss = self.loss_fn(_call_model(self.model, inputs), target) / k
            except ModelStudyError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise ModelStudyError(f"--model {self.spec.name}: the forward pass failed: "
                                      f"{type(exc).__name__}: {exc}") from exc
            self.sync()
            t1 = clock()
            if sample:
                sample("forward")
            loss.backward()
            self.sync()
            t2 = clock()
            if sample:
                sample("backward")
            total += loss.item()
            del loss
            forward += t1 - t0
            backward += t2 - t1
        t0 = clock()
        self.optimizer.step()
        self.sync()
        t1 = clock()
        if sample:
            sample("step")
        self.optimizer.zero_grad(set_to_none=self.set_to_none)
        self.sync()
        t2 = clock()
        if sample:
            sample("zero_grad")
        if times is not None:
            whole = t2 - begin
            for name, value in (("forward", forward), ("backward", backward), ("step", t1 - t0),
                                ("zero_grad", t2 - t1), ("total", whole)):
                times[name].append(value)
            times["other"].append(whole - forward - backward - (t2 - t0))
        return total

    def weights(self) -> list[np.ndarray]:
        """The parameters now, as NumPy arrays on the host."""
        return [p.detach().cpu().numpy() for p in self.model.parameters()]


# ------------------------------------------------------------------------------- the study

@dataclass(frozen=True)
class StudyPlan:
    """How long the timing runs: at least ``min_steps`` timed steps per setting, then until
    every setting's median whole step is known to ``precision`` (a fraction, either side, at
    the bootstrap interval's level), at most ``max_steps``."""

    accum_steps: tuple[int, ...] = (1, 4, 8)
    precision: float = DEFAULT_PRECISION
    min_steps: int = DEFAULT_MIN_STEPS
    max_steps: int = DEFAULT_MAX_STEPS

    def check(self) -> None:
        """Raise ModelStudyError for a plan that cannot run."""
        if not self.accum_steps or any(int(k) != k or k < 1 for k in self.accum_steps):
            raise ModelStudyError(f"accumulation windows must be positive integers, got "
                                  f"{list(self.accum_steps)}")
        if len(set(self.accum_steps)) != len(self.accum_steps):
            raise ModelStudyError(f"accumulation windows must differ, got "
                                  f"{list(self.accum_steps)}")
        if not 0 < self.precision < 1:
            raise ModelStudyError(f"precision must be a fraction between 0 and 1 (0.02: ±2 %), "
                                  f"got {self.precision}")
        if not 2 <= self.min_steps <= self.max_steps:
            raise ModelStudyError(f"steps: need 2 <= min_steps <= max_steps, got min_steps="
                                  f"{self.min_steps}, max_steps={self.max_steps}")


def _settings() -> list[tuple[bool, str]]:
    return [(stn, storage) for stn in SET_TO_NONE for storage in STORAGES]


def _time_window(spec: ModelSpec, device: str, k: int, plan: StudyPlan,
                 progress: Progress) -> tuple[list[dict[str, Any]], list[str]]:
    """Time every setting on window size ``k``; the rows and the defects found.

    All settings live at once and take turns step by step (the order reversed every round),
    after an untimed warm-up step each; every setting sees the same batches in the same
    order from the same random state. After ``min_steps`` rounds the study stops as soon as
    every median whole step is known to ``plan.precision``, or at ``max_steps``.
    """
    settings = [_Setting(spec, device, storage, stn) for stn, storage in _settings()]
    times = [{p: [] for p in TIMED} for _ in settings]
    losses: list[list[float]] = [[] for _ in settings]
    order = list(range(len(settings)))
    step = 0
    while True:
        window = _window(spec, device, k, step)
        for i in order if step % 2 == 0 else order[::-1]:
            losses[i].append(settings[i].step(k, step, window, times[i] if step else None))
            _check_flags(spec, f"during step {step} of the study (K={k})")
        if step >= plan.min_steps:
            totals = [summarize(t["total"]) for t in times]
            worst = max(relative_half_width(s) for s in totals)
            progress.section(f"time K={k}: {step} steps per setting, medians known to "
                             f"±{worst:.1%} (target ±{plan.precision:.1%}, at most "
                             f"{plan.max_steps} steps)", min_interval_s=2.0)
            if step >= plan.max_steps or precise_enough(totals, plan.precision):
                break
        step += 1
    rows = [{"set_to_none": s.set_to_none, "storage": s.storage, "accum_steps": k,
             "steps": step, "times": {p: summarize(v) for p, v in t.items()}, "losses": loss}
            for s, t, loss in zip(settings, times, losses)]
    return rows, _defects(rows, [s.weights() for s in settings])


def _check_flags(spec: ModelSpec, where: str) -> None:
    """The study's promise: timing-based kernel choice stays off (the model's code may not
    switch it on)."""
    try:
        check_no_timing_choice(where)
    except RuntimeError as exc:
        raise ModelStudyError(f"--model {spec.name}: {exc}") from None


def _memory_setting(spec: ModelSpec, device: str, storage: str, stn: bool,
                    k: int) -> dict[str, Any]:
    from ..utils.memory import memory_report

    mem = mt.cpu if device == "cpu" else mt.cuda
    gc.collect()  # what the previous setting left in reference cycles must not land here
    base = mem.memory_allocated()
    setting = _Setting(spec, device, storage, stn)
    setting.step(k, 0, _window(spec, device, k, 0))  # warm-up
    timeline: list[dict[str, Any]] = []
    peak = 0
    for s in range(2):
        window = _window(spec, device, k, s + 1)
        mem.reset_peak_memory_stats()
        setting.step(k, s + 1, window, None, lambda phase, s=s: timeline.append(
            {"step": s, "phase": phase, "bytes": mem.memory_allocated() - base}))
        del window
        peak = max(peak, mem.max_memory_allocated() - base)
    report = memory_report(setting.model, setting.optimizer).get(str(mt.device(device)), {})
    return {"set_to_none": stn, "storage": storage, "accum_steps": k,
            "held_between_steps": report, "allocated_between_steps": timeline[-1]["bytes"],
            "peak_of_step": peak, "timeline": timeline}


def _defects(rows: list[dict[str, Any]], weights: list[list[np.ndarray]]) -> list[str]:
    """Settings of one window whose losses or final weights differ, bit for bit, from the
    first setting's (set_to_none=True, default)."""
    found = []
    ref = rows[0]
    for r, w in zip(rows[1:], weights[1:]):
        name = f"set_to_none={r['set_to_none']}, {r['storage']}"
        ref_name = f"set_to_none={ref['set_to_none']}, {ref['storage']}"
        if r["losses"] != ref["losses"]:
            step = next(i for i, (a, b) in enumerate(zip(r["losses"], ref["losses"])) if a != b)
            found.append(f"K={r['accum_steps']}: {name} gives loss {r['losses'][step]!r} at "
                         f"step {step}, {ref_name} gives {ref['losses'][step]!r}")
        elif not all(np.array_equal(a, b) for a, b in zip(w, weights[0])):
            index = next(i for i, (a, b) in enumerate(zip(w, weights[0]))
                         if not np.array_equal(a, b))
            found.append(f"K={r['accum_steps']}: {name} ends with other weights than "
                         f"{ref_name} (parameter {index}), on the same losses")
    return found


def _calibrate(spec: ModelSpec, device: str, plan: StudyPlan) -> dict[str, Any]:
    """A few steps of the default setting per window size, before anything is timed: they
    surface a failing model(), forward or optimizer at once, pay the process's first calls
    (first convolutions, allocations, page faults), and give the step times and spread that
    the time estimate is derived from."""
    setting = _Setting(spec, device, "default", True)
    step_s: dict[int, float] = {}
    window_s: dict[int, float] = {}
    spread_samples: list[float] = []
    for index, k in enumerate(plan.accum_steps):
        times: dict[str, list[float]] = {p: [] for p in TIMED}
        made: list[float] = []
        repeats = 4 if index == 0 else 1
        for step in range(1 + repeats):  # the first of each: a warm-up
            t0 = time.perf_counter()
            window = _window(spec, device, k, step)
            made.append(time.perf_counter() - t0)
            setting.step(k, step, window, times if step else None)
            _check_flags(spec, "while the study calibrated")
        step_s[k] = float(np.median(times["total"]))
        window_s[k] = float(np.median(made[1:]))
        if index == 0:
            spread_samples = times["total"]
    t0 = time.perf_counter()
    summarize(np.linspace(1.0, 2.0, max(2, plan.max_steps // 2)))
    return {"step_seconds": step_s, "window_seconds": window_s,
            "interval_seconds": time.perf_counter() - t0, "spread": study_spread(spread_samples)}


def study_model(spec: str | ModelSpec | Any, device: str = "cpu",
                accum_steps: Sequence[int] = (1, 4, 8), *,
                precision: float = DEFAULT_PRECISION, min_steps: int = DEFAULT_MIN_STEPS,
                max_steps: int = DEFAULT_MAX_STEPS, show_progress: bool | None = None
                ) -> ModelStudy:
    """Measure every (set_to_none, storage) setting on the user's model; see the module doc.

    Each setting runs an untimed warm-up step, then at least ``min_steps`` timed steps per
    window size, and more until every median whole step is known to ``precision`` (0.02:
    ±2 %), at most ``max_steps``. An estimate of the time it takes (from a few calibration
    steps) and progress go to stderr (a bar on a terminal, lines otherwise;
    ``show_progress=False``: none).
    """
    spec = load_model_spec(spec)
    plan = StudyPlan(tuple(int(k) for k in accum_steps), float(precision), int(min_steps),
                     int(max_steps))
    plan.check()
    if device != "cpu" and not mt.cuda.is_available():
        raise ModelStudyError(f"--device {device}: CUDA is not available (needs CuPy and a GPU)")
    device = str(mt.empty(0, device=device).device)  # "cuda" -> "cuda:0", as tensors name it
    cores = machine_info()["cores"]
    with no_timing_choice() as flags_at_start:
        load_start = load_average()
        busy = machine_busy([load_start], cores)
        # A busy machine gets no speed verdict whatever the precision: the minimum of steps.
        timing_plan = replace(plan, max_steps=plan.min_steps) if busy else plan
        started = time.perf_counter()
        calibration = _calibrate(spec, device, plan)
        estimate = estimate_study(calibration, len(_settings()), timing_plan)
        timing: list[dict[str, Any]] = []
        defects: list[str] = []
        memory: list[dict[str, Any]] = []
        mem_plan = [(k, stn, storage) for k in plan.accum_steps for stn, storage in _settings()]
        with Progress(len(plan.accum_steps) + len(mem_plan), "bench --model", show_progress,
                      expected_s=estimate["seconds"]) as progress:
            progress.note(estimate["text"])
            if busy:
                progress.note(f"the load average is {busy:.1f} on {cores} cores: the machine "
                              "is busy, so speed verdicts will be withheld and each setting "
                              f"is timed for the minimum of {plan.min_steps} steps only")
            # Timings first: the first memory statistic switches on buffer counting for the
            # rest of the process, which the timed steps must not pay for.
            for k in plan.accum_steps:
                progress.section(f"time K={k}: every setting, taking turns step by step")
                rows, found = _time_window(spec, device, k, timing_plan, progress)
                timing += rows
                defects += found
                progress.update()
            for k, stn, storage in mem_plan:
                progress.section(f"memory: K={k} set_to_none={stn} {storage}")
                memory.append(_memory_setting(spec, device, storage, stn, k))
                progress.update()
        load_end = load_average()
        seconds = time.perf_counter() - started
    results = {"kind": "model_study", "model": spec.name, "device": device, **asdict(plan),
               "accum_steps": list(plan.accum_steps), "machine": machine_info(),
               "load_average_start": load_start, "load_average_end": load_end,
               "timing_choice": {"flags": [f"microtorch.{f}" for f in flags_at_start],
                                 "switched_off": [f"microtorch.{f}" for f, on in
                                                  flags_at_start.items() if on]},
               "estimate": {k: v for k, v in estimate.items() if k != "text"},
               "estimate_text": estimate["text"], "seconds": seconds, "timing": timing,
               "memory": memory, "defects": defects}
    from .model_report import recommend

    results["recommendation"] = recommend(results)
    return ModelStudy(results)


class ModelStudy:
    """The results of ``study_model``: ``to_json()``, ``to_markdown()``, ``plot()``,
    ``save(out_dir)``; ``results`` holds every number, ``recommendation`` the advice."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    @property
    def recommendation(self) -> list[str]:
        """The advice: the actionable line first, then its evidence, one sentence each."""
        advice = self.results["recommendation"]
        return [advice["headline"], *advice["evidence"]]

    @property
    def recommended(self) -> dict[str, Any] | None:
        """The recommended setting as ``{"set_to_none": ..., "storage": ...}`` (None when a
        defect leaves nothing to recommend)."""
        return self.results["recommendation"]["setting"]

    @property
    def defects(self) -> list[str]:
        """Settings whose losses or final weights differed (they must be bit-identical)."""
        return self.results["defects"]

    def to_json(self) -> str:
        """Every measured number as JSON."""
        return json.dumps(self.results, indent=1) + "\n"

    def to_markdown(self) -> str:
        """report.md: the recommendation first, then the evidence, the machine, the tables."""
        from .model_report import render_model_markdown

        return render_model_markdown(self.results)

    def plot(self, out_dir: str | Path = ".") -> list[Path]:
        """Write the time and memory figures as PNGs into ``out_dir`` (created if missing);
        returns their paths."""
        from .plots import plot_model_study

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        return plot_model_study(self.results, out)

    def save(self, out_dir: str | Path) -> list[Path]:
        """results.json, report.md and the figures, written atomically into ``out_dir``."""
        from .model_report import render_model_markdown
        from .plots import plot_model_study
        from .report import write_report

        return write_report(self.results, out_dir, render_model_markdown, plot_model_study)

    def __repr__(self) -> str:
        return f"ModelStudy({self.results['model']!r}, {len(self.results['timing'])} settings)"
