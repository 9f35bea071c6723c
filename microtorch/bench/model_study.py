"""The set_to_none study on a user's own model: ``microtorch bench --model FILE.py``.

A *model spec* is a Python file (or an importable module) that defines

- ``model()`` -> an ``nn.Module`` (built fresh on every call),
- ``batch()`` -> ``(inputs, targets)`` (one micro-batch; called again for every micro-batch),
- optionally ``loss(output, target)`` (default: cross-entropy) and ``optimizer(params)``
  (default: ``SGD(params, lr=0.01)``).

``study_model`` trains that model for a few steps under every combination of
``zero_grad(set_to_none=True/False)`` and gradient storage (default, ``foreach=True``,
``flat_grads=True``), for each gradient-accumulation window (1, 4 and 8 micro-batches by
default), from the same initial weights on the same batches. It measures the time of the
forward pass, of backward (where assigning a fresh gradient instead of adding into zeros saves
a pass), of ``optimizer.step`` and of ``zero_grad``; the bytes held between steps; the peak of
a step; and memory after each forward, backward, step and zero_grad of two steps. Every
setting must give bit-identical losses: a mismatch is reported as a defect.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import microtorch as mt

from .measure import SET_TO_NONE, STORAGES, Progress, machine_info, summarize

__all__ = ["ModelSpec", "ModelStudy", "ModelStudyError", "load_model_spec", "study_model"]

# The points of a step where memory is sampled (one forward/backward pair per micro-batch).
PHASES = ("forward", "backward", "step", "zero_grad")


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


class _Setting:
    """One model + optimizer under one (set_to_none, storage) setting, stepping on batches."""

    def __init__(self, spec: ModelSpec, device: str, storage: str, set_to_none: bool) -> None:
        mt.manual_seed(0)  # the same initial weights in every setting
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

    def step(self, batches: Sequence[tuple[Any, Any]], times: dict[str, list[float]] | None,
             sample: Callable[[str], None] | None = None) -> float:
        """One optimizer step over ``batches`` (loss / K each); returns the summed loss."""
        k, total = len(batches), 0.0
        clock = time.perf_counter
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
            if times is not None:
                times["forward"].append(t1 - t0)
                times["backward"].append(t2 - t1)
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
            times["step"].append(t1 - t0)
            times["zero_grad"].append(t2 - t1)
        return total


# ------------------------------------------------------------------------------- the study

def _settings() -> list[tuple[bool, str]]:
    return [(stn, storage) for stn in SET_TO_NONE for storage in STORAGES]


def _time_window(spec: ModelSpec, device: str, batches: list[list[tuple[Any, Any]]],
                 progress: Progress) -> list[dict[str, Any]]:
    """Time every setting on one accumulation window size.

    All settings live at once and take turns step by step (the order reversed every round),
    after a warm-up step each, so drift of the machine hits them alike; every setting sees
    the same batches in the same order.
    """
    settings = []
    for stn, storage in _settings():
        progress.section(f"time: K={len(batches[0])} set_to_none={stn} {storage}")
        settings.append(_Setting(spec, device, storage, stn))
    times = [{p: [] for p in PHASES} for _ in settings]
    totals: list[list[float]] = [[] for _ in settings]
    losses = [[s.step(batches[0], None)] for s in settings]  # warm-up: optimizer state
    order = list(range(len(settings)))
    for r, window in enumerate(batches[1:]):
        for i in order if r % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            losses[i].append(settings[i].step(window, times[i]))
            totals[i].append(time.perf_counter() - t0)
    progress.update(len(settings))
    # forward/backward are per micro-batch; "total" covers the whole step of K of them.
    return [{"set_to_none": s.set_to_none, "storage": s.storage, "accum_steps": len(batches[0]),
             "times": {**{p: summarize(v) for p, v in t.items()}, "total": summarize(total)},
             "losses": loss}
            for s, t, total, loss in zip(settings, times, totals, losses)]


def _warm_up(spec: ModelSpec, device: str, window: list[tuple[Any, Any]]) -> None:
    """A few untimed steps first: the process's first convolutions, allocations and page
    faults would otherwise land on whichever setting happens to be timed first."""
    setting = _Setting(spec, device, "default", True)
    for _ in range(2):
        setting.step(window, None)


def _memory_setting(spec: ModelSpec, device: str, storage: str, stn: bool,
                    batches: list[list[tuple[Any, Any]]]) -> dict[str, Any]:
    from ..utils.memory import memory_report

    mem = mt.cpu if device == "cpu" else mt.cuda
    gc.collect()  # what the previous setting left in reference cycles must not land here
    base = mem.memory_allocated()
    setting = _Setting(spec, device, storage, stn)
    setting.step(batches[0], None)  # warm-up
    timeline: list[dict[str, Any]] = []
    peak = 0
    for s, window in enumerate(batches[1:3]):
        mem.reset_peak_memory_stats()
        setting.step(window, None, lambda phase, s=s: timeline.append(
            {"step": s, "phase": phase, "bytes": mem.memory_allocated() - base}))
        peak = max(peak, mem.max_memory_allocated() - base)
    report = memory_report(setting.model, setting.optimizer).get(str(mt.device(device)), {})
    return {"set_to_none": stn, "storage": storage, "accum_steps": len(batches[0]),
            "held_between_steps": report, "allocated_between_steps": timeline[-1]["bytes"],
            "peak_of_step": peak, "timeline": timeline}


def _defects(rows: list[dict[str, Any]]) -> list[str]:
    """Settings whose losses differ from the first setting of the same window, bit for bit."""
    found = []
    for k in sorted({r["accum_steps"] for r in rows}):
        same_k = [r for r in rows if r["accum_steps"] == k]
        ref = same_k[0]
        for r in same_k[1:]:
            if r["losses"] != ref["losses"]:
                step = next(i for i, (a, b) in enumerate(zip(r["losses"], ref["losses"]))
                            if a != b)
                found.append(f"K={k}: set_to_none={r['set_to_none']}, {r['storage']} gives loss "
                             f"{r['losses'][step]!r} at step {step}, set_to_none="
                             f"{ref['set_to_none']}, {ref['storage']} gives "
                             f"{ref['losses'][step]!r}")
    return found


def study_model(spec: str | ModelSpec | Any, device: str = "cpu", steps: int = 5,
                accum_steps: Sequence[int] = (1, 4, 8), show_progress: bool | None = None
                ) -> ModelStudy:
    """Measure every (set_to_none, storage) setting on the user's model; see the module doc.

    ``steps`` timed steps follow one warm-up step per setting and window. Progress goes to
    stderr (a bar on a terminal, a line per setting otherwise; ``show_progress=False``: none).
    """
    spec = load_model_spec(spec)
    if steps < 2:
        raise ModelStudyError(f"steps must be at least 2 (two steps are sampled for memory), "
                              f"got {steps}")
    if not accum_steps or any(int(k) < 1 for k in accum_steps):
        raise ModelStudyError(f"accumulation windows must be positive integers, got "
                              f"{list(accum_steps)}")
    if device != "cpu" and not mt.cuda.is_available():
        raise ModelStudyError(f"--device {device}: CUDA is not available (needs CuPy and a GPU)")
    mt.manual_seed(1)
    windows = {}
    for k in accum_steps:
        windows[k] = []
        for _ in range(steps + 1):
            window = []
            for _ in range(k):
                try:
                    made = spec.batch()
                except Exception as exc:  # noqa: BLE001
                    raise ModelStudyError(f"--model {spec.name}: batch() failed: "
                                          f"{type(exc).__name__}: {exc}") from exc
                window.append(_check_batch(spec, made, device))
            windows[k].append(window)
    started = time.perf_counter()
    # Timings first: the first memory statistic switches on buffer counting for the rest of
    # the process, which the timed steps must not pay for.
    timing, memory = [], []
    plan = [(k, stn, storage) for k in accum_steps for stn, storage in _settings()]
    # The warm-up also surfaces a failing model(), forward or optimizer before any progress.
    _warm_up(spec, device, windows[accum_steps[0]][0])
    with Progress(2 * len(plan), "bench --model", show_progress) as progress:
        for k in accum_steps:
            timing += _time_window(spec, device, windows[k], progress)
        for k, stn, storage in plan:
            progress.section(f"memory: K={k} set_to_none={stn} {storage}")
            memory.append(_memory_setting(spec, device, storage, stn, windows[k]))
            progress.update()
    results = {"model": spec.name, "device": device, "steps": steps,
               "accum_steps": list(accum_steps), "machine": machine_info(),
               "seconds": time.perf_counter() - started, "timing": timing, "memory": memory,
               "defects": _defects(timing)}
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
        """The plain-language advice with its evidence, one sentence per item."""
        return self.results["recommendation"]

    @property
    def defects(self) -> list[str]:
        """Settings whose losses differed (they must all be bit-identical)."""
        return self.results["defects"]

    def to_json(self) -> str:
        """Every measured number as JSON."""
        return json.dumps(self.results, indent=1) + "\n"

    def to_markdown(self) -> str:
        """report.md: the recommendation and the machine first, then the tables."""
        from .model_report import render_model_markdown

        return render_model_markdown(self.results)

    def plot(self, out_dir: str | Path = ".") -> list[Path]:
        """Write the time and memory figures as PNGs into ``out_dir``; returns their paths."""
        from .plots import plot_model_study

        return plot_model_study(self.results, Path(out_dir))

    def save(self, out_dir: str | Path) -> list[Path]:
        """results.json, report.md and the figures, written atomically into ``out_dir``."""
        from .model_report import render_model_markdown
        from .plots import plot_model_study
        from .report import write_report

        return write_report(self.results, out_dir, render_model_markdown, plot_model_study)

    def __repr__(self) -> str:
        return f"ModelStudy({self.results['model']!r}, {len(self.results['timing'])} settings)"

