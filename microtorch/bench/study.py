"""The set_to_none study and the speed comparisons behind ``microtorch bench``.

Everything here measures microtorch and, when it is installed, PyTorch side by side in one run,
in one of two ways. The training step, and the op chain on the CPU, time each framework alone
in its own worker processes (``isolated.run_isolated``: rounds alternating which framework runs
first, the same thread count for both, the same initial weights and batches), since in one
process OpenBLAS's and PyTorch's spinning threads and the two allocators disturb each other.
zero_grad (and the op chain on CUDA) time the contenders in this process in alternation
(interleaved blocks of repetitions, same inputs), so drift of the machine (frequency scaling,
other load) hits both alike. Either way the *ratio* is what to read.

Sections (each a function returning plain JSON-able data):

- ``bench_zero_grad``: ``optimizer.zero_grad(set_to_none)`` time for each gradient storage
  (default, foreach, flat) against the number and the size of parameters, fresh gradients
  (from a real backward) before every call.
- ``bench_train_step``: one training step of an MLP (64-256-256-10, batch 128, Adam,
  cross-entropy) with 1, 4 and 8 accumulation micro-batches, each framework in its own worker
  processes; losses checked against PyTorch's.
- ``bench_memory``: bytes held between steps, the peak of a step, and memory sampled through
  forward/backward/step/zero_grad (microtorch's exact per-device byte counts).
- ``bench_op_chain``: a chain of 1,000 small elementwise ops, forward and backward: the per-op
  overhead of the framework itself.

``run_benchmarks`` runs them all on every requested device, with timing-based kernel choice
off; ``write_outputs`` writes ``results.json``, ``report.md`` and PNG plots. Timings are
wall-clock medians with the bootstrap interval of the median; on CUDA each timed region ends
with a device synchronize.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

import microtorch as mt

from .isolated import (
    FRAMEWORKS,
    chain,
    import_framework,
    report_progress,
    run_isolated,
    worker_command,
)
from .measure import (
    SET_TO_NONE,
    STORAGES,
    Progress,
    _make_optimizer,
    _ratio,
    _sync,
    _timed,
    _to_lib,
    _torch_on,
    available_devices,
    check_no_timing_choice,
    interleave,
    load_average,
    load_torch,
    machine_info,
    no_timing_choice,
    summarize,
)

__all__ = ["BenchConfig", "run_benchmarks", "bench_zero_grad", "bench_train_step", "bench_memory",
           "bench_op_chain", "train_step"]


# ------------------------------------------------------------------------------ configs

# What --quick promises (its help): at most this share of the full run's time.
QUICK_SHARE = 0.5

@dataclass
class BenchConfig:
    """Sizes and repetition counts of one benchmark run."""

    name: str
    # zero_grad: (number of parameters, shape of each); both sweeps are drawn from this list.
    zero_grad_cases: list[tuple[int, tuple[int, ...]]]
    zero_grad_repeats: int
    big_case_repeats: int  # cases of >= 1M elements per parameter are slow to refresh
    # Added on GPUs only: 1 GiB of float32 gradients, the flat-buffer bandwidth case.
    gpu_extra_cases: list[tuple[int, tuple[int, ...]]] = field(
        default_factory=lambda: [(256, (1024, 1024))])
    mlp_dims: tuple[int, ...] = (64, 256, 256, 10)
    batch_size: int = 128
    accum_steps: tuple[int, ...] = (1, 4, 8)
    step_repeats: int = 30
    step_warmup: int = 10  # (the first steps of a worker include its first calls' costs)
    chain_length: int = 1000
    chain_numel: int = 16
    chain_repeats: int = 20
    memory_steps: int = 2
    block: int = 6  # calls per turn in interleaved timing (see ``interleave``)
    # Rounds of worker processes (one per framework each, alternating which runs first) for
    # the sections timed with each framework alone (``isolated.run_isolated``).
    isolated_rounds: int = 2

    @classmethod
    def full(cls) -> BenchConfig:
        """Every case with enough repetitions for stable medians (``estimate.estimate_bench``
        says how long on this machine)."""
        return cls("full",
                   [(10, (64,)), (100, (64,)), (1000, (64,)), (3000, (64,)),
                    (100, (128, 128)), (100, (512, 512)), (100, (1024, 1024))],
                   zero_grad_repeats=50, big_case_repeats=10, step_repeats=60,
                   chain_repeats=30)

    @classmethod
    def quick(cls) -> BenchConfig:
        """The reference cases with half the repetitions or fewer, one round of worker
        processes instead of two, and 20 rather than 100 parameters of (1024, 1024), so that
        five contenders' gradients fit in 1 GB. Every section but memory (the same two sampled
        steps per setting) does at most half the full run's work: at most ``QUICK_SHARE`` of
        its time (``tests/test_bench.py`` checks that on calibrated unit costs)."""
        return cls("quick",
                   [(10, (64,)), (100, (64,)), (1000, (64,)), (100, (128, 128)),
                    (20, (1024, 1024))],
                   zero_grad_repeats=25, big_case_repeats=5, step_repeats=20,
                   chain_repeats=10, isolated_rounds=1)

    @classmethod
    def tiny(cls) -> BenchConfig:
        """Toy sizes for tests: exercises every code path in seconds; numbers mean nothing."""
        return cls("tiny", [(4, (8,)), (16, (8,)), (4, (16, 16))], zero_grad_repeats=3,
                   big_case_repeats=2, gpu_extra_cases=[], mlp_dims=(8, 16, 4), batch_size=8,
                   step_repeats=3, step_warmup=1, block=2, chain_length=20, chain_numel=4,
                   chain_repeats=2, memory_steps=2)



# ---------------------------------------------------------------------------- zero_grad

@dataclass
class _ZeroGradContender:
    lib: str  # "microtorch" or "torch"
    storage: str
    params: list
    optimizer: Any
    sync: Callable[[], None]
    samples: list[float] = field(default_factory=list)

    def refresh(self) -> None:
        """Fresh gradients through a real backward (grads are what training leaves behind)."""
        loss = self.params[0].sum()
        for p in self.params[1:]:
            loss = loss + p.sum()
        loss.backward()
        self.sync()


def _zero_grad_case(n: int, shape: tuple[int, ...], dev: str, torch: Any, repeats: int,
                    block: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Time zero_grad for every storage and both set_to_none values on one parameter set."""
    values = [rng.standard_normal(shape, dtype=np.float32) for _ in range(min(n, 4))]
    # Parameters only feed the refreshing backward: on the CPU they share these few arrays
    # (every contender holds just its own gradients, which is what zero_grad works on).
    rows = []
    for set_to_none in SET_TO_NONE:
        contenders: list[_ZeroGradContender] = []
        for storage in STORAGES:
            params = [_to_lib(mt, values[i % len(values)], dev, True, copy=False)
                      for i in range(n)]
            contenders.append(_ZeroGradContender(
                "microtorch", storage, params, _make_optimizer(mt, params, storage),
                _sync(mt, dev)))
        if _torch_on(torch, dev):
            for storage in ("default", "foreach"):
                params = [_to_lib(torch, values[i % len(values)], dev, True, copy=False)
                          for i in range(n)]
                contenders.append(_ZeroGradContender(
                    "torch", storage, params, _make_optimizer(torch, params, storage),
                    _sync(torch, dev)))
        def runner(c: _ZeroGradContender, stn: bool = set_to_none) -> Callable[[bool], None]:
            def run(record: bool) -> None:
                c.refresh()
                seconds = _timed(lambda: c.optimizer.zero_grad(set_to_none=stn), c.sync)
                if record:
                    c.samples.append(seconds)
            return run

        interleave([runner(c) for c in contenders], repeats, block)
        numel = n * int(np.prod(shape))
        for c in contenders:
            stats = summarize(c.samples)
            # Zeroing moves 4 bytes per float32 element; freeing (set_to_none) moves none.
            bandwidth = None if set_to_none else numel * 4 / (stats["median_us"] * 1e-6) / 1e9
            rows.append({"device": dev, "n_params": n, "shape": list(shape), "numel": numel,
                         "lib": c.lib, "storage": c.storage, "set_to_none": set_to_none,
                         "bandwidth_gbs": bandwidth, **stats})
        del contenders
    return rows


def bench_zero_grad(cfg: BenchConfig, dev: str, torch: Any, progress: Any = None
                    ) -> list[dict[str, Any]]:
    """zero_grad time against the number and size of parameters, on one device."""
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    cases = cfg.zero_grad_cases + (cfg.gpu_extra_cases if dev != "cpu" else [])
    for n, shape in cases:
        if progress is not None:
            progress.section(f"{dev} zero_grad: {n} params of {tuple(shape)}")
        # Cases of 16M+ elements spend most of their time refreshing gradients: fewer reps
        # (their spread is small anyway: each call is long).
        big = n * int(np.prod(shape)) >= 1 << 24
        started = time.perf_counter()
        case_rows = _zero_grad_case(n, tuple(shape), dev, torch,
                                    cfg.big_case_repeats if big else cfg.zero_grad_repeats,
                                    cfg.block, rng)
        for row in case_rows:
            row["case_seconds"] = time.perf_counter() - started
        rows += case_rows
        if progress is not None:
            progress.update(1)
    return rows


# --------------------------------------------------------------------------- training step

def _build_mlp(lib: Any, dims: tuple[int, ...]) -> Any:
    layers: list[Any] = []
    for i in range(len(dims) - 1):
        layers.append(lib.nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(lib.nn.ReLU())
    return lib.nn.Sequential(*layers)


def _initial_mlp(cfg: BenchConfig, dev: str, seed: int = 0) -> Any:
    """The microtorch MLP every setting starts from (``manual_seed(seed)``)."""
    mt.manual_seed(seed)
    return _build_mlp(mt, cfg.mlp_dims).to(dev)


def _batches(cfg: BenchConfig, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((cfg.batch_size, cfg.mlp_dims[0]), dtype=np.float32),
             rng.integers(0, cfg.mlp_dims[-1], cfg.batch_size).astype(np.int64))
            for _ in range(k)]


def train_step(model: Any, optimizer: Any, loss_fn: Callable, batches: list,
               set_to_none: bool) -> list[Any]:
    """One optimizer step over ``len(batches)`` micro-batches (each loss scaled by 1/K), then
    ``zero_grad`` at the end, so that what a step leaves behind is what sits between steps.
    Returns the detached per-micro-batch losses (scaled)."""
    k = len(batches)
    losses = []
    for x, y in batches:
        loss = loss_fn(model(x), y) / k
        loss.backward()
        losses.append(loss.detach())
    optimizer.step()
    optimizer.zero_grad(set_to_none=set_to_none)
    return losses


class _StepContender:
    def __init__(self, lib: Any, model: Any, storage: str, set_to_none: bool, dev: str,
                 batches: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.model, self.set_to_none = model, set_to_none
        self.optimizer = _make_optimizer(lib, list(model.parameters()), storage, "adam")
        self.loss_fn = lib.nn.functional.cross_entropy
        self.batches = [(_to_lib(lib, x, dev), _to_lib(lib, y, dev)) for x, y in batches]
        self.sync = _sync(lib, dev)
        self.samples: list[float] = []
        self.losses: list[float] = []

    def run(self, record: bool) -> None:
        out: list[Any] = []

        def step() -> None:
            out.extend(train_step(self.model, self.optimizer, self.loss_fn, self.batches,
                                  self.set_to_none))

        seconds = _timed(step, self.sync)
        self.losses.append(sum(float(loss.item()) for loss in out))
        if record:
            self.samples.append(seconds)


def _setting_key(k: int, storage: str, set_to_none: bool) -> str:
    """The phase name of one training-step setting in a worker's result."""
    return f"K={k}, {storage}, set_to_none={set_to_none}"


def _torch_storage(storage: str) -> str:
    """PyTorch's counterpart of a microtorch gradient storage (flat's is its default)."""
    return "foreach" if storage == "foreach" else "default"


def train_step_worker(lib_name: str, device: str, weights: str, config: dict[str, Any],
                      settings: list[list[Any]], repeats: int) -> dict[str, Any]:
    """Time the training step of every ``[K, storage, set_to_none]`` setting with one framework
    (the body of a ``bench_train_step`` worker process).

    Each setting starts from the initial weights saved in ``weights`` (an ``.npz`` of the
    parameters in order), trains on the batches of ``_batches(cfg, K, seed=K)``, runs
    ``step_warmup`` untimed steps, then ``repeats`` timed ones (synchronised on CUDA).
    Returns ``{"phases": {setting: [seconds, ...]}, "losses": {setting: [loss, ...]}}`` with
    the loss of every step, warm-up included.
    """
    lib = import_framework(lib_name)
    check_no_timing_choice("in a training-step worker")
    cfg = BenchConfig(**config)
    with np.load(weights) as saved:
        initial = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    phases: dict[str, list[float]] = {}
    losses: dict[str, list[float]] = {}
    for k, storage, set_to_none in settings:
        report_progress(f"K={k} {storage} set_to_none={set_to_none}")
        model = _build_mlp(lib, tuple(cfg.mlp_dims)).to(device)
        params = list(model.parameters())
        if len(params) != len(initial):
            raise ValueError(f"{weights}: {len(initial)} arrays for {len(params)} parameters")
        with lib.no_grad():
            for param, value in zip(params, initial):
                param.copy_(_to_lib(lib, value, device))
        contender = _StepContender(lib, model, storage if lib_name == "microtorch"
                                   else _torch_storage(storage), bool(set_to_none), device,
                                   _batches(cfg, int(k), seed=int(k)))
        for i in range(cfg.step_warmup + repeats):
            contender.run(record=i >= cfg.step_warmup)
        key = _setting_key(int(k), storage, bool(set_to_none))
        phases[key], losses[key] = contender.samples, contender.losses
        del contender, model, params
    return {"phases": phases, "losses": losses}


def _train_step_workers(cfg: BenchConfig, dev: str, torch: Any) -> int:
    """How many worker processes ``bench_train_step`` starts (its progress units)."""
    return cfg.isolated_rounds * (2 if _torch_on(torch, dev) else 1)


def bench_train_step(cfg: BenchConfig, dev: str, torch: Any, progress: Any = None
                     ) -> list[dict[str, Any]]:
    """Training-step time of the MLP with Adam for every setting and accumulation count.

    Each framework runs alone in its own worker processes (``isolated.run_isolated``): per
    round one microtorch worker and one PyTorch worker each time every setting, rounds
    alternating which goes first, both with PyTorch's thread count. PyTorch runs each
    microtorch setting under the same set_to_none and foreach (flat's counterpart is its
    default). Every worker starts each setting from the same saved weights on the same
    batches, and the loss of every step is compared between the frameworks.
    """
    settings = [[k, storage, set_to_none] for k in cfg.accum_steps for storage in STORAGES
                for set_to_none in SET_TO_NONE]
    frameworks = FRAMEWORKS if _torch_on(torch, dev) else FRAMEWORKS[:1]
    rounds = cfg.isolated_rounds
    threads = torch.get_num_threads() if torch is not None else None
    initial = [p.detach().numpy().copy() for p in _initial_mlp(cfg, "cpu").parameters()]
    with tempfile.TemporaryDirectory(prefix="microtorch-bench-") as tmp:
        weights = os.path.join(tmp, "initial_weights.npz")
        np.savez(weights, *initial)

        def command(fw: str, r: int) -> list[str]:
            return worker_command("microtorch.bench.study:train_step_worker", lib_name=fw,
                                  device=dev, weights=weights, config=asdict(cfg),
                                  settings=settings, repeats=-(-cfg.step_repeats // rounds))

        result = run_isolated(command, rounds, threads, frameworks, progress,
                              label=f"{dev} train_step")
    rows: list[dict[str, Any]] = []
    for k, storage, set_to_none in settings:
        key = _setting_key(k, storage, set_to_none)
        stats = result["phases"][key]
        row: dict[str, Any] = {"device": dev, "storage": storage, "set_to_none": set_to_none,
                               "accum_steps": k, "batch_size": cfg.batch_size,
                               "microtorch": stats["microtorch"], "torch": None, "ratio": None,
                               "max_loss_rel_diff": None, "isolated": True, "rounds": rounds,
                               "threads": threads, "worker_pids": result["pids"]}
        mine = [losses[key] for losses in result["losses"]["microtorch"]]
        if "torch" in stats:
            row["torch"] = stats["torch"]
            row["ratio"] = stats["ratio"]
            theirs = [losses[key] for losses in result["losses"]["torch"]]
            a, b = np.concatenate(mine), np.concatenate(theirs)
            row["max_loss_rel_diff"] = float(np.max(np.abs(a - b) / np.abs(b)))
            row["losses_torch"] = theirs[0][:5]
        row["losses_microtorch"] = mine[0][:5]
        rows.append(row)
    return rows


# -------------------------------------------------------------------------------- memory

def _memory_api(dev: str) -> Any:
    return mt.cpu if dev == "cpu" else mt.cuda


def bench_memory(cfg: BenchConfig, dev: str, progress: Any = None) -> list[dict[str, Any]]:
    """Bytes held between steps, peak bytes of a step, and memory through a step.

    Per setting: one warm-up step (creates the optimizer state), then ``memory_steps`` steps
    sampled after every forward, backward, step and zero_grad. All byte counts are relative
    to what was allocated before the setting's model was built, so they hold exactly its
    parameters, optimizer state, gradients, batches and activations:
    ``allocated_between_steps`` after the last zero_grad, ``peak_of_step`` the highest
    allocation during a step. ``held_between_steps`` breaks the former down by
    ``memory_report``.
    """
    from ..utils.memory import memory_report

    mem = _memory_api(dev)
    rows: list[dict[str, Any]] = []
    for k in cfg.accum_steps:
        np_batches = _batches(cfg, k, seed=100 + k)
        for storage in STORAGES:
            for set_to_none in SET_TO_NONE:
                if progress is not None:
                    progress.section(f"{dev} memory: K={k} {storage} set_to_none={set_to_none}")
                # Objects of the previous setting caught in reference cycles would otherwise be
                # freed in the middle of this one and shift every reading.
                gc.collect()
                base = mem.memory_allocated()
                model = _initial_mlp(cfg, dev)
                optimizer = _make_optimizer(mt, list(model.parameters()), storage, "adam")
                loss_fn = mt.nn.functional.cross_entropy
                batches = [(_to_lib(mt, x, dev), _to_lib(mt, y, dev)) for x, y in np_batches]
                train_step(model, optimizer, loss_fn, batches, set_to_none)  # warm-up
                timeline: list[tuple[str, int]] = [("start", mem.memory_allocated() - base)]
                peak = 0
                for s in range(cfg.memory_steps):
                    mem.reset_peak_memory_stats()
                    for j, (x, y) in enumerate(batches):
                        loss = loss_fn(model(x), y) / k
                        timeline.append((f"s{s}.fwd{j}", mem.memory_allocated() - base))
                        loss.backward()
                        del loss
                        timeline.append((f"s{s}.bwd{j}", mem.memory_allocated() - base))
                    optimizer.step()
                    timeline.append((f"s{s}.step", mem.memory_allocated() - base))
                    optimizer.zero_grad(set_to_none=set_to_none)
                    timeline.append((f"s{s}.zero_grad", mem.memory_allocated() - base))
                    peak = max(peak, mem.max_memory_allocated() - base)
                report = memory_report(model, optimizer).get(
                    str(next(model.parameters()).device), {})
                rows.append({"device": dev, "storage": storage, "set_to_none": set_to_none,
                             "accum_steps": k, "held_between_steps": report,
                             "allocated_between_steps": timeline[-1][1],
                             "peak_of_step": peak,
                             "timeline": [{"point": p, "bytes": b} for p, b in timeline]})
                del model, optimizer, batches
                if progress is not None:
                    progress.update(1)
    return rows


# ------------------------------------------------------------------------------ op chain

def _op_chain_isolated(cfg: BenchConfig, torch: Any) -> list[dict[str, Any]]:
    """The CPU op chain with each framework alone in its own process (``bench.isolated``):
    ``isolated_rounds`` alternating rounds of one worker per framework, same thread count."""
    def command(fw: str, r: int) -> list[str]:
        return worker_command("microtorch.bench.isolated:op_chain_worker", lib_name=fw,
                              length=cfg.chain_length, numel=cfg.chain_numel,
                              repeats=max(1, cfg.chain_repeats))

    result = run_isolated(command, cfg.isolated_rounds, torch.get_num_threads())
    rows = []
    for phase in ("forward", "backward"):
        stats = result["phases"][phase]
        row: dict[str, Any] = {"device": "cpu", "phase": phase, "length": cfg.chain_length,
                               "numel": cfg.chain_numel, "isolated": True,
                               "microtorch": stats["microtorch"], "torch": stats["torch"],
                               "ratio": stats["ratio"]}
        row["microtorch_per_op_us"] = row["microtorch"]["median_us"] / cfg.chain_length
        row["torch_per_op_us"] = row["torch"]["median_us"] / cfg.chain_length
        rows.append(row)
    return rows


def bench_op_chain(cfg: BenchConfig, dev: str, torch: Any, progress: Any = None
                   ) -> list[dict[str, Any]]:
    """A chain of small elementwise ops (mul, add, tanh, sub), forward and backward.

    On the CPU with PyTorch each framework runs alone in its own process (in one process,
    one framework's spinning threads slow the other); otherwise both in this one, in blocks.
    """
    if dev == "cpu" and torch is not None:
        rows = _op_chain_isolated(cfg, torch)
        if progress is not None:
            progress.update(1)
        return rows
    x0 = np.random.default_rng(1).standard_normal(cfg.chain_numel, dtype=np.float32)
    libs = [mt] + ([torch] if _torch_on(torch, dev) else [])
    xs = {lib: _to_lib(lib, x0, dev, True) for lib in libs}
    samples: dict[tuple[str, Any], list[float]] = {(p, lib): [] for p in ("forward", "backward")
                                                    for lib in libs}
    def runner(lib: Any) -> Callable[[bool], None]:
        sync = _sync(lib, dev)

        def run(record: bool) -> None:
            out: list[Any] = []
            fwd = _timed(lambda: out.append(chain(xs[lib], cfg.chain_length).sum()), sync)
            bwd = _timed(lambda: out[0].backward(), sync)
            xs[lib].grad = None
            if record:
                samples[("forward", lib)].append(fwd)
                samples[("backward", lib)].append(bwd)
        return run

    interleave([runner(lib) for lib in libs], cfg.chain_repeats, cfg.block)
    rows = []
    for phase in ("forward", "backward"):
        row: dict[str, Any] = {"device": dev, "phase": phase, "length": cfg.chain_length,
                               "numel": cfg.chain_numel,
                               "microtorch": summarize(samples[(phase, mt)]),
                               "torch": None, "ratio": None}
        if torch in libs:
            row["torch"] = summarize(samples[(phase, torch)])
            row["ratio"] = _ratio(row["microtorch"], row["torch"])
        row["microtorch_per_op_us"] = row["microtorch"]["median_us"] / cfg.chain_length
        if row["torch"]:
            row["torch_per_op_us"] = row["torch"]["median_us"] / cfg.chain_length
        rows.append(row)
    if progress is not None:
        progress.update(1)
    return rows


# ---------------------------------------------------------------------------------- driver

def run_benchmarks(cfg: BenchConfig, device: str = "auto", use_torch: bool = True,
                   show_progress: bool | None = None, torch_threads: int | None = None,
                   estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every section on every requested device; returns the JSON-able results.

    Timing-based kernel choice is off throughout (``measure.no_timing_choice``).
    ``estimate`` (``estimate.estimate_bench``'s) goes into the progress lines and the results.
    """
    torch = load_torch() if use_torch else None
    if torch is not None and torch_threads is not None:
        torch.set_num_threads(torch_threads)
    devices = available_devices(device)
    # Progress units: a zero_grad case, the op chain, a train_step worker, a memory setting.
    per_device = len(cfg.zero_grad_cases) + 1 + len(cfg.accum_steps) * len(STORAGES) * len(
        SET_TO_NONE)
    total = (per_device * len(devices) + len(cfg.gpu_extra_cases) * ("cuda" in devices)
             + sum(_train_step_workers(cfg, dev, torch) for dev in devices))
    results: dict[str, Any] = {"kind": "bench", "config": asdict(cfg),
                               "machine": machine_info(torch), "devices": devices,
                               "zero_grad": [], "train_step": [], "memory": [], "op_chain": []}
    if estimate is not None:
        results["estimate"] = {"seconds": estimate["seconds"],
                               "sections": estimate["sections"]}
    started = time.perf_counter()
    results["load_average_start"] = load_average()
    # Timings first, on every device, then memory: the first memory statistic switches on
    # buffer counting for the rest of the process (a weak reference per buffer), which the
    # timed sections must not pay for.
    timed: list[tuple[str, Callable[..., list]]] = [
        ("zero_grad", lambda dev, bar: bench_zero_grad(cfg, dev, torch, bar)),
        ("op_chain", lambda dev, bar: bench_op_chain(cfg, dev, torch, bar)),
        ("train_step", lambda dev, bar: bench_train_step(cfg, dev, torch, bar))]
    plan = [(dev, name, fn) for dev in devices for name, fn in timed]
    plan += [(dev, "memory", lambda dev, bar: bench_memory(cfg, dev, bar)) for dev in devices]
    results["section_seconds"] = {}
    with no_timing_choice() as flags, Progress(
            total, "bench", show_progress,
            expected_s=None if estimate is None else estimate["seconds"]) as bar:
        results["timing_choice"] = {"flags": [f"microtorch.{f}" for f in flags],
                                    "switched_off": [f"microtorch.{f}" for f, on in flags.items()
                                                     if on]}
        for dev, name, section in plan:
            bar.section(f"{dev} {name}")
            t0 = time.perf_counter()
            results[name] += section(dev, bar)
            results["section_seconds"][f"{dev}/{name}"] = time.perf_counter() - t0
    results["load_average_end"] = load_average()
    results["seconds"] = time.perf_counter() - started
    return results
