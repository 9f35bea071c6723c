"""The ``microtorch`` command: ``microtorch train`` and ``microtorch bench``.

``train`` fits a small MLP or CNN on the digits that ship with scikit-learn (or MNIST /
Fashion-MNIST IDX files), with every knob of the set_to_none study exposed: gradient
accumulation, zero_grad(set_to_none), gradient storage. ``bench`` runs ``microtorch.bench``.

Errors a user can cause (a bad option, a missing file, a corrupt checkpoint) end the program
with one line on stderr and a non-zero exit status, never a traceback; set
``MICROTORCH_DEBUG=1`` to get the traceback anyway.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

import microtorch as mt

__all__ = ["main", "build_parser", "train", "window_weights", "CLIError"]

CHECKPOINT_FORMAT = "microtorch-train-checkpoint"
CHECKPOINT_VERSION = 1
# Options that must match between a checkpoint and the run resuming it: the model's and the
# optimizer's state only load into the same architecture and optimizer.
RESUME_MUST_MATCH = ("model", "data", "optimizer")
DEFAULT_LR = {"sgd": 0.05, "adam": 1e-3, "adamw": 1e-3}
MLP_HIDDEN = 256
NUM_CLASSES = 10


class CLIError(Exception):
    """A user error: reported as one line, exit status 1."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (argparse prints the whole usage block by default)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(kind: Callable[[str], Any], what: str,
            ok: Callable[[Any], bool]) -> Callable[[str], Any]:
    """An argparse ``type``: ``kind(text)`` when ``ok`` accepts it, else "expected ``what``"."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text}")
        return value

    return parse


_positive_int = _number(int, "a positive integer", lambda v: v >= 1)


def _positive_int_list(text: str) -> list[int]:
    """An argparse ``type`` for ``1,4,8``: positive integers, comma-separated."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,4,8, got {text!r}"
                                         ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,4,8, got {text!r}")
    return values
_positive_float = _number(float, "a positive finite number", lambda v: 0 < v < math.inf)
_fraction = _number(float, "a fraction between 0 and 1 (0.02 means ±2 %)", lambda v: 0 < v < 1)
_nonnegative_int = _number(int, "an integer >= 0", lambda v: v >= 0)


# ---------------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``microtorch`` with its ``train`` and ``bench`` commands."""
    parser = _Parser(prog="microtorch",
                     description="microtorch: train small models and measure what "
                                 "zero_grad(set_to_none) costs and saves.")
    # (not required=True: argparse would then call "microtorch --frobnicate" a missing
    # COMMAND; main() says which argument it did not recognise, or that COMMAND is missing)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    tr = commands.add_parser(
        "train", help="train an MLP or a small CNN on digits or MNIST",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Train a classifier and report its test accuracy. The default run (no "
                    "options) trains an MLP 64-256-256-10 with SGD (momentum 0.9) for 20 "
                    "epochs on scikit-learn's 8x8 digits (1438 train / 359 test images) and "
                    "reaches about 0.98 test accuracy in a few seconds on a 2-core CPU.")
    tr.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                    help="mlp: flatten, two hidden layers of 256 with ReLU; cnn: two 3x3 "
                         "convolutions (16 and 32 channels) each with ReLU and 2x2 max-pool, "
                         "then a linear classifier")
    tr.add_argument("--data", choices=("digits", "mnist", "fashion-mnist"), default="digits",
                    help="digits: the 8x8 digits shipped with scikit-learn (no files needed); "
                         "mnist / fashion-mnist: the four IDX files (raw or .gz) in --data-dir")
    tr.add_argument("--data-dir", metavar="DIR", default=None,
                    help="folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                         "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (needed for mnist "
                         "and fashion-mnist; nothing is downloaded)")
    tr.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where to train; auto: CUDA when CuPy and a GPU are present, else CPU")
    tr.add_argument("--optimizer", choices=("sgd", "adam", "adamw"), default="sgd",
                    help="sgd has momentum 0.9; adamw has weight decay 0.01")
    tr.add_argument("--lr", type=_positive_float, default=None,
                    help="learning rate; when not given: 0.05 for sgd, 0.001 for adam and "
                         "adamw (default: %(default)s, i.e. by optimizer)")
    tr.add_argument("--epochs", type=_positive_int, default=20,
                    help="total number of passes over the training set (a resumed run "
                         "continues up to this count)")
    tr.add_argument("--batch-size", type=_positive_int, default=32,
                    help="samples per micro-batch (the last batch of an epoch may be smaller)")
    tr.add_argument("--accum-steps", type=_positive_int, default=1, metavar="K",
                    help="gradient accumulation: one optimizer step per K micro-batches. Each "
                         "micro-batch's mean loss is weighted by its share of the samples in "
                         "its window (1/K when the batches are equal), so a window's gradient "
                         "is that of the mean loss over all its samples; the last window of an "
                         "epoch may hold r < K batches and is then weighted by 1/r")
    tr.add_argument("--set-to-none", action=argparse.BooleanOptionalAction, default=True,
                    help="zero_grad(set_to_none=True) frees the gradients after each step; "
                         "--no-set-to-none fills them with zeros instead")
    tr.add_argument("--grad-storage", choices=("default", "foreach", "flat"), default="default",
                    help="default: one gradient buffer per parameter; foreach: multi-tensor "
                         "zeroing and optimizer steps; flat: all gradients are views of one "
                         "contiguous buffer (zeroing is one fill; the buffer is kept even with "
                         "set_to_none)")
    tr.add_argument("--seed", type=_nonnegative_int, default=0,
                    help="seed of the weight initialisation and of the shuffling")
    tr.add_argument("--save", metavar="PATH", default=None,
                    help="write a checkpoint (model, optimizer, epoch, random state) here after "
                         "every epoch, atomically")
    tr.add_argument("--resume", metavar="PATH", default=None,
                    help="continue from a checkpoint written by --save; the run then ends "
                         "exactly as an uninterrupted one would")
    tr.add_argument("--metrics-json", metavar="PATH", default=None,
                    help="write the final metrics here as JSON: test_accuracy, test_loss, "
                         "epochs, steps, seconds, peak_memory_bytes (and a few more)")
    tr.add_argument("--distributed", action="store_true",  # microtorch.distributed
                    help="data-parallel over the processes of an MPI launcher "
                         "(mpiexec -n 2 microtorch train --distributed); only rank 0 prints "
                         "and writes checkpoints")
    tr.set_defaults(handler=_cmd_train)

    be = commands.add_parser(
        "bench", help="measure zero_grad, memory and training steps against PyTorch",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Measure zero_grad(set_to_none=True/False) for each gradient storage "
                    "(default, foreach, flat) against the number and size of parameters, the "
                    "bytes held between training steps and the peak of a step, training-step "
                    "time with 1, 4 and 8 accumulation steps, and the per-op overhead of a "
                    "chain of 1,000 elementwise ops; side by side with PyTorch when it is "
                    "installed (ratios below 1: microtorch is faster).")
    size = be.add_mutually_exclusive_group()
    size.add_argument("--model", metavar="FILE.py|MODULE[:FUNC]", default=None,
                      help="study YOUR model instead: FILE.py (or an importable module, or "
                           "module:function returning an object with these) defines model() -> "
                           "nn.Module and batch() -> (inputs, targets), optionally loss(output, "
                           "target) (default cross-entropy) and optimizer(params) (default SGD, "
                           "lr 0.01); every set_to_none x storage setting is timed (forward, "
                           "backward, step, zero_grad) and measured (memory), and the study "
                           "recommends one setting (the recommendation is printed first)")
    size.add_argument("--quick", action="store_true",
                      help="the same cases with fewer repetitions and a 20 x (1024, 1024) "
                           "large case (every contender's gradients within 1 GB): at most half "
                           "the full run's time "
                           "(each run prints its own estimate, calibrated on this machine, "
                           "before it starts)")
    size.add_argument("--tiny", action="store_true",
                      help="toy sizes that run in seconds, for tests; the numbers mean nothing")
    be.add_argument("--out", metavar="DIR", default=None,
                    help="write results.json, report.md and PNG plots into DIR (default: a new "
                         "folder microtorch-bench-DATE-TIME, or microtorch-study-DATE-TIME with "
                         "--model, in the current directory; its name is printed)")
    be.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="auto: the CPU and, when available, the GPU (with --model: the GPU "
                         "when available, else the CPU)")
    be.add_argument("--precision", type=_fraction, default=0.02,
                    help="with --model: time each setting until its median step is known to "
                         "this fraction either side (95 %% bootstrap interval)")
    be.add_argument("--min-steps", type=_positive_int, default=10,
                    help="with --model: timed steps per setting at least (after a warm-up)")
    be.add_argument("--max-steps", type=_positive_int, default=50,
                    help="with --model: timed steps per setting at most, precise or not")
    be.add_argument("--accum-steps", type=_positive_int_list, default=[1, 4, 8],
                    metavar="K[,K...]",
                    help="with --model: gradient-accumulation windows to study")
    be.add_argument("--no-torch", action="store_true",
                    help="measure microtorch alone even if PyTorch is installed")
    be.add_argument("--torch-threads", type=_positive_int, default=None, metavar="N",
                    help="PyTorch's intra-op threads (default: PyTorch's own choice, one per "
                         "core); 1 is steadier on a machine that is also busy with other work")
    be.add_argument("--distributed", action="store_true",  # microtorch.distributed
                    help="instead: data-parallel communication per step and the fraction "
                         "hidden behind backward, 1 vs 2 ranks, several bucket sizes")
    be.set_defaults(handler=_cmd_bench)
    return parser


# ------------------------------------------------------------------------------- training

def window_weights(batch_sizes: Sequence[int], accum_steps: int) -> list[float]:
    """Loss weight of each micro-batch under gradient accumulation.

    Batches are grouped into windows of ``accum_steps`` consecutive batches (the last may be
    shorter). A batch's weight is its sample count over its window's: the summed gradients
    of a window then equal the gradient of the mean loss over all the window's samples. With
    equal batches that is 1/K, and 1/r for a last window of r batches.
    """
    weights: list[float] = []
    for start in range(0, len(batch_sizes), accum_steps):
        window = batch_sizes[start:start + accum_steps]
        total = sum(window)
        weights += [n / total for n in window]
    return weights


def check_output_path(path: str, flag: str, *, directory: bool = False) -> None:
    """Fail before any work starts when ``path`` cannot be written (missing folders are
    created later; a parent that is a file, or a folder we may not write in, is refused)."""
    target = Path(path)
    if directory and target.exists() and not target.is_dir():
        raise CLIError(f"{flag} {path}: exists and is not a directory")
    if not directory and target.is_dir():
        raise CLIError(f"{flag} {path}: is a directory; give a file name")
    ancestor = target if directory else target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise CLIError(f"{flag} {path}: {ancestor} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as exc:
        raise CLIError(f"{flag} {path}: cannot write in {ancestor} "
                       f"({exc.strerror or exc})") from None


def _resolve_device(name: str) -> str:
    if name == "auto":
        return "cuda" if mt.cuda.is_available() else "cpu"
    if name == "cuda" and not mt.cuda.is_available():
        raise CLIError("--device cuda: CUDA is not available (needs CuPy and a GPU); "
                       "use --device cpu")
    return name


def _load_data(args: argparse.Namespace) -> tuple[Any, Any]:
    """Train and test sets as TensorDatasets of (image (1, H, W) float32, label int64)."""
    from .utils.data import TensorDataset
    from .utils.data.datasets import MNIST, Digits, FashionMNIST

    if args.data == "digits":
        if args.data_dir is not None:
            raise CLIError("--data-dir is only used with --data mnist or fashion-mnist")
        return Digits("train", flatten=False), Digits("test", flatten=False)
    if args.data_dir is None:
        raise CLIError(f"--data {args.data} needs --data-dir DIR (the folder with the IDX "
                       "files; nothing is downloaded)")
    if not Path(args.data_dir).is_dir():
        raise CLIError(f"--data-dir {args.data_dir}: no such directory")
    cls = MNIST if args.data == "mnist" else FashionMNIST
    # Plain TensorDatasets of the scaled images: batches come straight from the tensors.
    return tuple(TensorDataset(*cls(args.data_dir, train=train).tensors)
                 for train in (True, False))


def _build_model(kind: str, image_shape: tuple[int, ...]) -> Any:
    from . import nn

    channels, height, width = image_shape
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, MLP_HIDDEN),
                             nn.ReLU(), nn.Linear(MLP_HIDDEN, MLP_HIDDEN), nn.ReLU(),
                             nn.Linear(MLP_HIDDEN, NUM_CLASSES))
    if height < 4 or width < 4:
        raise CLIError(f"--model cnn needs images of at least 4x4, got {height}x{width}")
    return nn.Sequential(nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * (height // 4) * (width // 4), NUM_CLASSES))


def _build_optimizer(args: argparse.Namespace, params: list) -> Any:
    from . import optim

    lr = args.lr
    storage = {"foreach": args.grad_storage == "foreach",
               "flat_grads": args.grad_storage == "flat"}
    if args.optimizer == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9, **storage)
    if args.optimizer == "adam":
        return optim.Adam(params, lr=lr, **storage)
    return optim.AdamW(params, lr=lr, **storage)


def _memory_api(device: str) -> Any:
    return mt.cpu if device == "cpu" else mt.cuda


def evaluate(model: Any, dataset: Any, device: str, batch_size: int = 1024) -> tuple[float,
                                                                                       float]:
    """Mean cross-entropy and accuracy of ``model`` over ``dataset``."""
    from .nn import functional as F

    images, labels = dataset.tensors
    total_loss, correct = 0.0, 0
    model.eval()
    with mt.no_grad():
        for start in range(0, len(labels), batch_size):
            x = images[start:start + batch_size].to(device)
            y = labels[start:start + batch_size].to(device)
            out = model(x)
            total_loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += int((out.argmax(1) == y).sum().item())
    model.train()
    return total_loss / len(labels), correct / len(labels)


def _config(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("model", "data", "optimizer", "lr", "epochs", "batch_size", "accum_steps",
            "set_to_none", "grad_storage", "seed")
    return {k: getattr(args, k) for k in keys}


def _save_checkpoint(path: str, args: argparse.Namespace, model: Any, optimizer: Any,
                     epoch: int, steps: int, loader_gen: Any) -> None:
    mt.save({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
             "config": _config(args), "epoch": epoch, "steps": steps,
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             # Both random streams: the global one (init, any future dropout) and the
             # loader's shuffling, so the next epoch draws what it would have drawn.
             "rng": {"cpu": mt.get_rng_state(), "loader": loader_gen.get_state()}}, path)


def _load_checkpoint(path: str, args: argparse.Namespace, model: Any, optimizer: Any,
                     loader_gen: Any, device: str) -> tuple[int, int]:
    if not Path(path).is_file():
        raise CLIError(f"--resume {path}: no such file")
    ckpt = mt.load(path, map_location=device)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise CLIError(f"--resume {path}: not a checkpoint written by microtorch train --save")
    saved = ckpt["config"]
    for key in RESUME_MUST_MATCH:
        if saved.get(key) != getattr(args, key):
            raise CLIError(f"--resume {path}: the checkpoint was trained with "
                           f"--{key.replace('_', '-')} {saved.get(key)}, this run asks for "
                           f"{getattr(args, key)}")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    mt.set_rng_state(ckpt["rng"]["cpu"].cpu())
    loader = ckpt["rng"]["loader"]
    loader_gen.set_state(np.asarray(loader.cpu().numpy() if hasattr(loader, "numpy")
                                    else loader))
    return int(ckpt["epoch"]), int(ckpt["steps"])


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``microtorch train`` with parsed arguments; returns the final metrics."""
    from tqdm.auto import tqdm

    from .nn import functional as F
    from .utils.data import DataLoader

    for flag, value in (("--save", args.save), ("--metrics-json", args.metrics_json)):
        if value:
            check_output_path(value, flag)
            Path(value).parent.mkdir(parents=True, exist_ok=True)
    device = _resolve_device(args.device)
    if args.lr is None:
        args.lr = DEFAULT_LR[args.optimizer]
    mt.manual_seed(args.seed)
    train_set, test_set = _load_data(args)
    image_shape = tuple(train_set.tensors[0].shape[1:])
    model = _build_model(args.model, image_shape).to(device)
    optimizer = _build_optimizer(args, list(model.parameters()))
    loader_gen = mt.Generator()
    loader_gen.manual_seed(args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                        generator=loader_gen)
    n = len(train_set)
    # --distributed: DDP replica, this rank's shard, rank 0 alone prints and saves.
    run, net = None, model
    if args.distributed:
        from .distributed.run import DataParallelRun

        run = DataParallelRun()
        net = run.wrap(model)
        loader = run.loader(train_set, args.batch_size, seed=args.seed)
        n = run.shard_size()
    is_main = run is None or run.is_main
    batch_sizes = [args.batch_size] * (n // args.batch_size) + (
        [n % args.batch_size] if n % args.batch_size else [])
    weights = window_weights(batch_sizes, args.accum_steps)
    # A step closes each window: after every K-th batch and after the epoch's last one.
    step_after = {min(i + args.accum_steps, len(batch_sizes)) - 1
                  for i in range(0, len(batch_sizes), args.accum_steps)}

    start_epoch, steps = 0, 0
    if args.resume:
        start_epoch, steps = _load_checkpoint(args.resume, args, model, optimizer, loader_gen,
                                              device)
        if is_main:
            left = ("nothing left to train: raise --epochs to train more"
                    if start_epoch >= args.epochs else
                    f"training epochs {start_epoch + 1} to {args.epochs}")
            print(f"resumed from {args.resume} after epoch {start_epoch} ({steps} steps); "
                  f"{left}", flush=True)
    resumed_steps = steps
    mem = _memory_api(device)
    started = time.perf_counter()
    train_loss = train_acc = float("nan")
    for epoch in range(start_epoch, args.epochs):
        epoch_started = time.perf_counter()
        seen = correct = 0
        loss_sum = 0.0
        if run is not None:
            run.set_epoch(epoch)
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch",
                   leave=False, disable=None if is_main else True)
        for i, (x, y) in enumerate(bar):
            x, y = x.to(device), y.to(device)
            out = net(x)
            loss = F.cross_entropy(out, y)
            with contextlib.nullcontext() if run is None else run.sync(net, i in step_after):
                (loss * weights[i]).backward()
            if i in step_after:
                optimizer.step()
                optimizer.zero_grad(set_to_none=args.set_to_none)
                steps += 1
            seen += len(y)
            loss_sum += loss.item() * len(y)
            correct += int((out.argmax(1) == y).sum().item())
            # refresh=False: the bar redraws at its own pace, not once per batch.
            bar.set_postfix(loss=f"{loss_sum / seen:.4f}", acc=f"{correct / seen:.4f}",
                            refresh=False)
        bar.close()
        train_loss, train_acc = loss_sum / seen, correct / seen
        test_loss, test_acc = evaluate(model, test_set, device)
        if is_main:
            print(f"epoch {epoch + 1}/{args.epochs}: train loss {train_loss:.4f} acc "
                  f"{train_acc:.4f} | test loss {test_loss:.4f} acc {test_acc:.4f} "
                  f"({time.perf_counter() - epoch_started:.2f} s)", flush=True)
        if args.save and is_main:
            _save_checkpoint(args.save, args, model, optimizer, epoch + 1, steps, loader_gen)
    seconds = time.perf_counter() - started
    test_loss, test_acc = evaluate(model, test_set, device)
    return {"test_accuracy": test_acc, "test_loss": test_loss, "epochs": args.epochs,
            "steps": steps, "seconds": seconds, "peak_memory_bytes": mem.max_memory_allocated(),
            "train_loss": train_loss, "train_accuracy": train_acc, "device": device,
            "resumed_from_epoch": start_epoch if args.resume else None,
            "steps_this_run": steps - resumed_steps,
            "config": _config(args), "is_main": is_main,
            "world_size": 1 if run is None else run.world_size}


def _cmd_train(args: argparse.Namespace) -> int:
    metrics = train(args)
    if not metrics.pop("is_main"):  # --distributed: the other ranks stay quiet
        return 0
    this_run = metrics["steps_this_run"]
    steps = (f"{this_run} steps" if metrics["resumed_from_epoch"] is None else
             f"{this_run} steps this run ({metrics['steps']} in all)")
    print(f"test accuracy {metrics['test_accuracy']:.4f}, test loss {metrics['test_loss']:.4f}"
          f", {steps} in {metrics['seconds']:.1f} s on {metrics['device']}")
    if args.metrics_json:
        path = Path(args.metrics_json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    return 0


# --------------------------------------------------------------------------------- bench

def _bench_out(args: argparse.Namespace) -> str:
    """Where the results go: ``--out``, or a new folder named by the date and time."""
    if args.out:
        return args.out
    kind = "study" if args.model else "distributed" if args.distributed else "bench"
    return f"microtorch-{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def _cmd_bench(args: argparse.Namespace) -> int:
    out = _bench_out(args)
    check_output_path(out, "--out", directory=True)
    # A bad --device fails before anything is announced.
    if args.model:
        if args.device == "cuda" and not mt.cuda.is_available():
            raise CLIError("--device cuda: CUDA is not available (needs CuPy and a GPU)")
    elif not args.distributed:
        from .bench.measure import available_devices

        available_devices(args.device)
    if not args.out:
        print(f"bench: no --out given: the results will be saved in {out}/", file=sys.stderr,
              flush=True)
    if args.model:
        return _cmd_bench_model(args, out)
    if args.distributed:
        return _cmd_bench_distributed(args, out)
    from . import bench
    from .bench.estimate import calibrate_bench, estimate_bench, format_seconds
    from .bench.report import format_us, headline, summary

    if args.tiny:
        cfg = bench.BenchConfig.tiny()
    elif args.quick:
        cfg = bench.BenchConfig.quick()
    else:
        cfg = bench.BenchConfig.full()
    devices = bench.study.available_devices(args.device)
    torch = None if args.no_torch else bench.load_torch()
    if torch is not None and args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    print(f"bench ({cfg.name}): calibrating on this machine ...", file=sys.stderr, flush=True)
    estimate = estimate_bench(cfg, devices, calibrate_bench(cfg, devices, torch))
    print(f"bench ({cfg.name}): {estimate['text']}", file=sys.stderr, flush=True)
    results = bench.run_benchmarks(cfg, device=args.device, use_torch=not args.no_torch,
                                   torch_threads=args.torch_threads, estimate=estimate)
    print(summary(results), flush=True)
    for row in headline(results):
        ratio = "" if row["ratio"] is None else f"  ratio {row['ratio']:.2f}x"
        torch_time = "" if row["torch_us"] is None else f"  torch {format_us(row['torch_us'])}"
        print(f"[{row['device']}] {row['case']}: microtorch {format_us(row['microtorch_us'])}"
              f"{torch_time}{ratio}", flush=True)
    for path in bench.write_outputs(results, out):
        print(f"wrote {path}", flush=True)
    print(f"bench ({cfg.name}): took {format_seconds(results['seconds'])} (estimated "
          f"{format_seconds(estimate['seconds'])}); results in {out}/", flush=True)
    return 0


def _cmd_bench_model(args: argparse.Namespace, out: str) -> int:
    """``microtorch bench --model FILE.py``: the set_to_none study of the user's model; the
    recommendation first, then its evidence, defects, and where the files went."""
    from .bench.model_study import ModelStudyError, study_model

    device = "cuda" if args.device == "auto" and mt.cuda.is_available() else (
        "cpu" if args.device == "auto" else args.device)
    try:
        study = study_model(args.model, device=device, accum_steps=args.accum_steps,
                            precision=args.precision, min_steps=args.min_steps,
                            max_steps=args.max_steps)
    except ModelStudyError as exc:
        raise CLIError(str(exc)) from None
    headline, *evidence = study.recommendation
    print(headline, flush=True)
    for line in evidence:
        print(f"  - {line}", flush=True)
    for defect in study.defects:
        print(f"DEFECT: {defect}", flush=True)
    for path in study.save(out):
        print(f"wrote {path}", flush=True)
    print(f"bench --model: results in {out}/", flush=True)
    return 1 if study.defects else 0


def _cmd_bench_distributed(args: argparse.Namespace, out: str) -> int:
    """``microtorch bench --distributed`` (microtorch.bench.distributed)."""
    from .bench import distributed as dbench
    from .bench.report import format_us

    cfg = (dbench.DistributedBenchConfig.tiny() if args.tiny else
           dbench.DistributedBenchConfig.quick() if args.quick else
           dbench.DistributedBenchConfig())
    results = dbench.run_distributed_bench(cfg)
    for r in results["distributed"]:
        hidden = "" if r["hidden_fraction"] is None else f", {r['hidden_fraction']:.0%} hidden"
        print(f"{r['world_size']} rank(s), bucket cap {r['bucket_cap_mb']:g} MB: step "
              f"{format_us(r['step']['median_us'])}, comm {format_us(r['comm']['median_us'])}, "
              f"exposed {format_us(r['exposed']['median_us'])}{hidden}")
    for path in dbench.write_outputs(results, out):
        print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------------------------- main

def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``microtorch`` console script and ``python -m microtorch``."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.error("the following arguments are required: COMMAND")
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        print("microtorch: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the promise is one line, never a traceback
        if os.environ.get("MICROTORCH_DEBUG") == "1":
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        prefix = "" if isinstance(exc, CLIError) else f"{type(exc).__name__}: "
        print(f"microtorch {args.command}: error: {prefix}{message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
