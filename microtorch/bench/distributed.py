"""``microtorch bench --distributed``: what data-parallel communication costs, and how much
of it DDP hides behind backward.

``run_distributed_bench`` (called in an ordinary process) launches this module under
``mpiexec -n 1`` and ``mpiexec -n 2``; each run trains an MLP with DDP for every bucket size
and rank 0 reports, per step:

- ``step``: the whole training step (forward, backward with its reductions, optimizer step);
- ``comm``: the same buckets all-reduced alone, one after the other (the communication cost
  if nothing overlapped);
- ``exposed``: the time backward's final callback waited for reductions after the last
  gradient was ready (the part of ``comm`` that was *not* hidden);
- ``hidden_fraction``: ``1 - exposed / comm`` (medians), clamped to [0, 1].

Results use ``microtorch.bench.measure``'s format: ``summarize`` statistics in microseconds, the
machine description, ``results.json`` and ``report.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DistributedBenchConfig", "run_distributed_bench", "render_markdown",
           "write_outputs"]


@dataclass
class DistributedBenchConfig:
    """Model, batch, bucket sizes and repetitions of one run."""

    name: str = "full"
    dims: tuple[int, ...] = (64, 1024, 1024, 1024, 10)  # ~2.2M parameters, 8.5 MB of grads
    batch_size: int = 64  # per rank
    bucket_caps_mb: tuple[float, ...] = (1.0, 4.0, 25.0)
    world_sizes: tuple[int, ...] = (1, 2)
    steps: int = 30
    warmup: int = 3
    notes: list[str] = field(default_factory=list)

    @classmethod
    def quick(cls) -> DistributedBenchConfig:
        """Fewer repetitions (well under a minute on a 2-core CPU)."""
        return cls(name="quick", steps=10, warmup=2)

    @classmethod
    def tiny(cls) -> DistributedBenchConfig:
        """Toy sizes for tests; the numbers mean nothing."""
        return cls(name="tiny", dims=(8, 16, 4), batch_size=4, bucket_caps_mb=(1e-4, 25.0),
                   steps=3, warmup=1)


# ------------------------------------------------------------------------------ the worker

def _worker(cfg: DistributedBenchConfig, out_path: str) -> None:
    """Runs on every rank under mpiexec; rank 0 writes the measurements as JSON."""
    import numpy as np

    import microtorch as mt
    import microtorch.distributed as dist
    from microtorch import nn
    from microtorch.nn.parallel import DistributedDataParallel as DDP

    from .measure import summarize

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    x = mt.tensor(rng.standard_normal((cfg.batch_size, cfg.dims[0])).astype(np.float32))
    y = mt.tensor(rng.integers(0, cfg.dims[-1], cfg.batch_size))
    rows = []
    for cap in cfg.bucket_caps_mb:
        mt.manual_seed(0)
        layers: list = []
        for a, b in zip(cfg.dims[:-1], cfg.dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        model = DDP(nn.Sequential(*layers[:-1]), bucket_cap_mb=cap)
        opt = mt.optim.SGD(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        step_s, exposed_s, early = [], [], []
        for i in range(cfg.warmup + cfg.steps):
            dist.barrier()  # ranks start each step together: waits measure communication
            start = time.perf_counter()
            loss_fn(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            if i >= cfg.warmup:
                step_s.append(time.perf_counter() - start)
                exposed_s.append(model.comm_stats["exposed_s"])
                early.append(model.comm_stats["launched_early"])
        comm_s = []
        flats = [b.flat for b in model._buckets]
        group = model._group
        for i in range(cfg.warmup + cfg.steps):
            dist.barrier()
            start = time.perf_counter()
            for flat in flats:
                group.allreduce(flat).wait()
            if i >= cfg.warmup:
                comm_s.append(time.perf_counter() - start)
        comm, exposed = summarize(comm_s), summarize(exposed_s)
        hidden = None
        if world > 1 and comm["median_us"] > 0:
            hidden = min(1.0, max(0.0, 1.0 - exposed["median_us"] / comm["median_us"]))
        rows.append({"world_size": world, "bucket_cap_mb": cap,
                     "buckets": len(flats), "bucket_numels": model.bucket_sizes(),
                     "grad_bytes": int(sum(f.nbytes for f in flats)),
                     "step": summarize(step_s), "comm": comm, "exposed": exposed,
                     "hidden_fraction": hidden,
                     "buckets_launched_during_backward": float(np.median(early))})
    if rank == 0:
        Path(out_path).write_text(json.dumps(rows), encoding="utf-8")
    dist.destroy_process_group()


# ------------------------------------------------------------------------------ the driver

def _mpiexec() -> str:
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    from shutil import which

    found = which("mpiexec")
    if found is None:
        raise RuntimeError("microtorch bench --distributed needs mpiexec (pip install mpich "
                           "mpi4py, or 'microtorch[distributed]')")
    return found


def run_distributed_bench(cfg: DistributedBenchConfig | None = None,
                          timeout: float = 600) -> dict[str, Any]:
    """Run the worker on each world size (mpiexec -n k); returns the JSON-able results."""
    from .measure import machine_info

    cfg = cfg or DistributedBenchConfig()
    launcher = _mpiexec()
    root = str(Path(__file__).resolve().parents[2])
    # One BLAS thread per rank: 1 and 2 ranks then use the cores alike, and 2 ranks on a
    # 2-core machine do not fight over them.
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for world in cfg.world_sizes:
            out = Path(tmp, f"world{world}.json")
            cmd = [launcher, "-n", str(world), sys.executable, "-m",
                   "microtorch.bench.distributed", "--worker", str(out),
                   "--config", json.dumps(asdict(cfg))]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            if proc.returncode != 0 or not out.exists():
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
                raise RuntimeError(f"mpiexec -n {world} failed: " + " | ".join(tail))
            rows += json.loads(out.read_text(encoding="utf-8"))
    return {"config": asdict(cfg), "machine": machine_info(), "distributed": rows,
            "seconds": time.perf_counter() - started}


# ------------------------------------------------------------------------------ the report

def _us(stats: dict) -> str:
    from .report import format_us

    return format_us(stats["median_us"])


def render_markdown(results: dict[str, Any]) -> str:
    """report.md for ``microtorch bench --distributed``."""
    cfg = results["config"]
    lines = ["# microtorch bench --distributed", "",
             f"Configuration `{cfg['name']}`: MLP {'-'.join(map(str, cfg['dims']))}, batch "
             f"{cfg['batch_size']} per rank, SGD, MPI backend; {results.get('seconds', 0):.0f} s "
             "in all. Medians over the steps. *comm*: the buckets all-reduced alone; *exposed*: "
             "what backward still waited for after its last gradient; *hidden* = 1 - "
             "exposed / comm.", "",
             "| ranks | bucket cap | buckets | step | comm | exposed | hidden | launched "
             "during backward |", "|---|---|---|---|---|---|---|---|"]
    for r in results["distributed"]:
        hidden = "-" if r["hidden_fraction"] is None else f"{100 * r['hidden_fraction']:.0f} %"
        lines.append(f"| {r['world_size']} | {r['bucket_cap_mb']:g} MB | {r['buckets']} | "
                     f"{_us(r['step'])} | {_us(r['comm'])} | {_us(r['exposed'])} | {hidden} | "
                     f"{r['buckets_launched_during_backward']:g} |")
    m = results.get("machine", {})
    if m:
        lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in m.items()
                                              if isinstance(v, (str, int, float)))]
    return "\n".join(lines) + "\n"


def write_outputs(results: dict[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """Write results.json and report.md into ``out_dir``; returns the paths."""
    from .report import write_report

    return write_report(results, out_dir, render_markdown)


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", metavar="OUT_JSON", required=True)
    parser.add_argument("--config", required=True, help="DistributedBenchConfig as JSON")
    args = parser.parse_args(argv)
    fields = json.loads(args.config)
    for key in ("dims", "bucket_caps_mb", "world_sizes"):
        fields[key] = tuple(fields[key])
    _worker(DistributedBenchConfig(**fields), args.worker)


if __name__ == "__main__":
    _main()
