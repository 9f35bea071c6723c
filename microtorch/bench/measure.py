"""What every microtorch benchmark shares: timing statistics, the machine description, the
contenders (microtorch and, when installed, PyTorch) and the alternating-block scheduler."""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import microtorch as mt

STORAGES = ("default", "foreach", "flat")
SET_TO_NONE = (True, False)


def setting_name(row: dict[str, Any]) -> str:
    """``set_to_none=True, flat`` style name of a setting."""
    return f"set_to_none={row['set_to_none']}, {row['storage']}"


def rows_on(results: dict[str, Any], section: str, dev: str) -> list[dict[str, Any]]:
    """The rows of a results section measured on ``dev`` (none when the section is absent)."""
    return [r for r in results.get(section, []) if r["device"] == dev]


# ---------------------------------------------------------------------------- statistics

def summarize(seconds: Iterable[float]) -> dict[str, float]:
    """Median, quartiles, min and max of timings, in microseconds."""
    us = np.asarray(list(seconds), dtype=np.float64) * 1e6
    q1, med, q3 = np.percentile(us, [25, 50, 75])
    return {"median_us": float(med), "q1_us": float(q1), "q3_us": float(q3),
            "min_us": float(us.min()), "max_us": float(us.max()), "n": int(us.size)}


def _ratio(a: dict | None, b: dict | None) -> float | None:
    if not a or not b or not b["median_us"]:
        return None
    return a["median_us"] / b["median_us"]


# ------------------------------------------------------------------------------ machine

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{deps.get('name', '?')} {deps.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older NumPy has no dict mode; the field is informative
        return "unknown"


def machine_info(torch: Any = None) -> dict[str, Any]:
    """What the numbers were measured on: CPU, cores, library versions, BLAS, GPU."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "microtorch": mt.__version__,
        "torch": None,
        "torch_threads": None,
        "cuda": None,
    }
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    if mt.cuda.is_available():
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        info["cuda"] = {"cupy": cupy.__version__,
                        "gpu": name.decode() if isinstance(name, bytes) else str(name),
                        "memory_bytes": int(props["totalGlobalMem"])}
    return info


def _load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: other work on the machine skews every timing."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


# --------------------------------------------------------------------------- contenders

def load_torch() -> Any:
    """PyTorch if installed, else None (the comparisons are then left out)."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return torch


def available_devices(requested: str) -> list[str]:
    """The devices to measure: ``auto`` means the CPU plus CUDA when present."""
    cuda = mt.cuda.is_available()
    if requested == "cpu":
        return ["cpu"]
    if requested == "cuda":
        if not cuda:
            raise RuntimeError("--device cuda: CUDA is not available (needs CuPy and a GPU)")
        return ["cuda"]
    if requested != "auto":
        raise ValueError(f"unknown device {requested!r}: use auto, cpu or cuda")
    return ["cpu", "cuda"] if cuda else ["cpu"]


def _torch_on(torch: Any, dev: str) -> bool:
    return torch is not None and (dev == "cpu" or torch.cuda.is_available())


def _sync(lib: Any, dev: str) -> Callable[[], None]:
    """A function that waits for queued device work (a no-op on the CPU)."""
    if dev == "cpu":
        return lambda: None
    return lib.cuda.synchronize


def _make_optimizer(lib: Any, params: list, storage: str, kind: str = "sgd") -> Any:
    """An optimizer of ``lib`` (microtorch or torch) with the given gradient storage.

    PyTorch has no flat storage: its counterpart of ``flat`` is its default.
    """
    kwargs: dict[str, Any] = {"foreach": storage == "foreach"}
    if lib is mt:
        kwargs["flat_grads"] = storage == "flat"
    if kind == "adam":
        return lib.optim.Adam(params, lr=1e-3, **kwargs)
    return lib.optim.SGD(params, lr=0.01, **kwargs)


def _to_lib(lib: Any, arr: np.ndarray, dev: str, requires_grad: bool = False,
            copy: bool = True) -> Any:
    """``arr`` as a tensor of ``lib`` on ``dev``; ``copy=False`` shares the CPU memory."""
    t = lib.from_numpy(np.array(arr, copy=True) if copy else arr)
    if dev != "cpu":
        t = t.to(dev)
    if requires_grad:
        t = lib.nn.Parameter(t)
    return t


def interleave(runners: list[Callable[[bool], None]], repeats: int, block: int) -> None:
    """Call each runner until it has recorded ``repeats`` times, in alternating blocks.

    ``runner(record)`` does one measurement and keeps it when ``record`` is true. Runners take
    turns a block at a time (the order reversed every round), and the first call of each
    block is not recorded: it pays for the switch. Why blocks and not strict alternation:
    PyTorch's OpenMP threads and OpenBLAS's threads spin-wait for a while after their work,
    so alternating call by call makes each framework run against the other's spinning
    threads (on 2 cores an MLP step then takes 2-3 times as long for both).
    """
    per_block = max(1, block - 1)
    rounds = max(1, -(-repeats // per_block))
    for r in range(rounds):
        for run in runners if r % 2 == 0 else runners[::-1]:
            for i in range(per_block + 1):
                run(i > 0)


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0




class Progress:
    """Progress of long work on stderr: a tqdm bar on a terminal, and otherwise one line per
    section, so that a run whose output is redirected still shows that it is alive.

    ``enabled=None`` decides by whether stderr is a terminal; ``False`` silences both forms.
    Use as a context manager; ``section(text)`` names the work starting now, ``update(n)``
    counts finished units.
    """

    def __init__(self, total: int, desc: str, enabled: bool | None = None) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self.quiet = enabled is False
        self.bar = None
        if not self.quiet and (enabled or sys.stderr.isatty()):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="case", file=sys.stderr)

    def section(self, text: str) -> None:
        """Announce the next piece of work."""
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        elif not self.quiet:
            print(f"{self.desc} [{self.done}/{self.total}] {text}", file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        """Count ``n`` finished units."""
        self.done += n
        if self.bar is not None:
            self.bar.update(n)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
