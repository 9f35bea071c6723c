"""DataLoader with worker processes: the same batches in the same order as num_workers=0 and
as PyTorch, PyTorch's per-worker seeding, worker_init_fn / get_worker_info, persistent
workers, errors re-raised with their traceback, timeouts, clean shutdown and no orphans;
WeightedRandomSampler; pin_memory on CPU."""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import microtorch
from microtorch.utils.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    Subset,
    WeightedRandomSampler,
    get_worker_info,
)

torch = pytest.importorskip("torch")
tdata = torch.utils.data


class Samples(Dataset):
    """Dict samples with a tensor, a NumPy array and Python numbers."""

    def __init__(self, n: int = 23) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return {"x": microtorch.tensor([float(i), float(i * i)]),
                "a": np.full(2, i, np.int32), "i": i, "f": i / 4}


class TorchSamples(tdata.Dataset):
    def __len__(self) -> int:
        return 23

    def __getitem__(self, i: int) -> dict:
        return {"x": torch.tensor([float(i), float(i * i)]),
                "a": np.full(2, i, np.int32), "i": i, "f": i / 4}


def _plain(batch):
    return {k: v.tolist() for k, v in batch.items()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) is not running
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][0] != "Z"
    except OSError:
        return True


def _wait_gone(pids, deadline: float = 30.0) -> list[int]:
    end = time.monotonic() + deadline
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.torch
@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_same_batches_as_no_workers_and_as_torch(num_workers):
    def ours(workers):
        loader = DataLoader(Samples(), batch_size=4, shuffle=True, num_workers=workers,
                            generator=microtorch.Generator().manual_seed(11))
        return [_plain(b) for epoch in range(2) for b in loader]

    loader_t = tdata.DataLoader(TorchSamples(), batch_size=4, shuffle=True,
                                num_workers=num_workers,
                                generator=torch.Generator().manual_seed(11))
    theirs = [_plain(b) for epoch in range(2) for b in loader_t]
    assert ours(num_workers) == ours(0) == theirs


class SeedReport(Dataset):
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int):
        info = get_worker_info()
        return (info.id, info.num_workers, info.seed, microtorch.initial_seed(),
                float(microtorch.rand(1)), float(np.random.rand()), random.random())


class TorchSeedReport(tdata.Dataset):
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int):
        info = tdata.get_worker_info()
        return (info.id, info.num_workers, info.seed, torch.initial_seed(),
                float(torch.rand(1)), float(np.random.rand()), random.random())


def _values(batch):
    return tuple(v.item() if hasattr(v, "item") else v for v in batch)


@pytest.mark.torch
def test_worker_seeding_is_pytorchs():
    microtorch.manual_seed(5)
    torch.manual_seed(5)
    ours = [_values(b) for b in DataLoader(SeedReport(), batch_size=None, num_workers=2)]
    theirs = [_values(b) for b in tdata.DataLoader(TorchSeedReport(), batch_size=None,
                                                   num_workers=2)]
    assert ours == theirs
    assert get_worker_info() is None  # in the main process


class InitRecorder(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        return os.environ.get("MT_WORKER_INIT", "unset")


def _init_fn(worker_id: int) -> None:
    os.environ["MT_WORKER_INIT"] = f"init-{worker_id}"


def test_worker_init_fn_runs_in_each_worker():
    out = list(DataLoader(InitRecorder(), batch_size=None, num_workers=2,
                          worker_init_fn=_init_fn))
    assert out == ["init-0", "init-1", "init-0", "init-1"]
    assert "MT_WORKER_INIT" not in os.environ


class Failing(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int):
        if i == 5:
            raise ValueError(f"sample {i} is broken")
        if i == 6:
            return {}["missing key"]
        return i


def test_worker_exception_reraised_with_traceback():
    loader = DataLoader(Failing(), batch_size=None, num_workers=2)
    it = iter(loader)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError) as info:
        next(it)
    message = str(info.value)
    assert "Caught ValueError in DataLoader worker process 1" in message
    assert "sample 5 is broken" in message and "in __getitem__" in message
    assert _wait_gone(it.worker_pids) == []  # the error shut every worker down
    with pytest.raises(KeyError, match="missing key"):
        list(DataLoader(Subset(Failing(), [6]), batch_size=None, num_workers=1))


def _raise_in_init(worker_id: int) -> None:
    raise RuntimeError(f"init of {worker_id} failed")


def test_worker_init_fn_error_reraised():
    with pytest.raises(RuntimeError, match="init of 0 failed"):
        list(DataLoader(InitRecorder(), num_workers=1, worker_init_fn=_raise_in_init))


class Slow(Dataset):
    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int):
        if i == 1:
            time.sleep(60)
        return i


def test_timeout():
    loader = DataLoader(Slow(), batch_size=None, num_workers=1, timeout=0.5)
    it = iter(loader)
    assert next(it) == 0
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        next(it)
    assert _wait_gone(it.worker_pids) == []


def test_break_gc_and_keyboard_interrupt_shut_workers_down():
    loader = DataLoader(Samples(), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    pids = it.worker_pids
    assert all(_alive(p) for p in pids)
    del it  # a `break` out of the for loop drops the iterator the same way
    gc.collect()
    assert _wait_gone(pids) == []

    it = iter(loader)
    pids = it.worker_pids
    try:
        for _ in it:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    del it
    gc.collect()
    assert _wait_gone(pids) == []
    assert multiprocessing.active_children() == []


def test_dead_worker_reported():
    loader = DataLoader(Slow(), batch_size=None, num_workers=1)
    it = iter(loader)
    assert next(it) == 0
    os.kill(it.worker_pids[0], signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by "
                                           r"signal: Killed\. "):
        next(it)


def test_a_killed_worker_is_reported_at_once_and_no_later_batch_first():
    """PyTorch's SIGCHLD handler reports a killed worker as soon as it dies; here the next
    batch asks first, and a wait notices within a poll interval (it waited 5 s, and
    delivered the other worker's batch before saying so)."""
    loader = DataLoader(list(range(40)), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    victim = it.worker_pids[0]
    os.kill(victim, signal.SIGKILL)
    for _ in range(500):  # until the kernel has ended it (WNOWAIT: left for the loader)
        if os.waitid(os.P_PID, victim, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        time.sleep(0.01)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid {victim}\) is killed by "
                                           r"signal: Killed\. $"):
        next(it)
    assert time.monotonic() - t0 < 2.0  # not after a 5 s status interval


def test_a_worker_exiting_with_a_code_is_reported_as_pytorch_does():
    class Exits(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            os._exit(3)

    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited "
                                           r"unexpectedly with exit code 3\. Details are lost"):
        next(iter(DataLoader(Exits(), num_workers=1)))


_ORPHAN_SCRIPT = textwrap.dedent("""
    import os, signal, time
    import microtorch
    from microtorch.utils.data import DataLoader, Dataset

    class Forever(Dataset):
        def __len__(self):
            return 1000
        def __getitem__(self, i):
            time.sleep(0.2)
            return i

    it = iter(DataLoader(Forever(), batch_size=None, num_workers=2))
    next(it)
    print(" ".join(str(p) for p in it.worker_pids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup at all
""")


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_workers_of_a_killed_main_process_exit():
    proc = subprocess.run([sys.executable, "-c", _ORPHAN_SCRIPT], capture_output=True,
                          text=True, cwd=os.getcwd(), timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    assert _wait_gone(pids) == []


@pytest.mark.torch
def test_persistent_workers_keep_their_processes_and_order():
    loader = DataLoader(Samples(), batch_size=3, shuffle=True, num_workers=2,
                        persistent_workers=True, generator=microtorch.Generator().manual_seed(2))
    # PyTorch draws no new base seed when persistent workers start another epoch, so the
    # reference is PyTorch's persistent loader (not a num_workers=0 one).
    reference = tdata.DataLoader(TorchSamples(), batch_size=3, shuffle=True, num_workers=2,
                                 persistent_workers=True,
                                 generator=torch.Generator().manual_seed(2))
    ref_it = iter(reference)
    ref_epochs = [[_plain(b) for b in ref_it]]
    ref_partial = iter(reference)
    ref_epochs.append([_plain(next(ref_partial))])
    ref_epochs.append([_plain(b) for b in reference])
    it = iter(loader)
    pids = it.worker_pids
    assert [_plain(b) for b in it] == ref_epochs[0]
    partial = iter(loader)  # epoch 2, abandoned after one batch (tasks left in flight)
    assert partial is it and [_plain(next(partial))] == ref_epochs[1]
    assert [_plain(b) for b in loader] == ref_epochs[2]
    assert loader._iterator.worker_pids == pids
    del it, partial
    loader._iterator._shutdown_workers()
    assert _wait_gone(pids) == []


class Shards(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        step, start = (1, 0) if info is None else (info.num_workers, info.id)
        return iter(range(start, self.n, step))


class TorchShards(tdata.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = tdata.get_worker_info()
        step, start = (1, 0) if info is None else (info.num_workers, info.id)
        return iter(range(start, self.n, step))


@pytest.mark.torch
@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (2, False), (2, True)])
def test_iterable_dataset_sharded_by_worker_info(batch_size, drop_last):
    ours = [b.tolist() if hasattr(b, "tolist") else b for b in DataLoader(
        Shards(11), batch_size=batch_size, num_workers=3, drop_last=drop_last)]
    theirs = [b.tolist() if hasattr(b, "tolist") else b for b in tdata.DataLoader(
        TorchShards(11), batch_size=batch_size, num_workers=3, drop_last=drop_last)]
    assert ours == theirs


@pytest.mark.torch
def test_concat_and_subset_through_workers_equal_torch():
    ours = ConcatDataset([Subset(Samples(10), [1, 3, 5]), Samples(4)])
    theirs = tdata.ConcatDataset([tdata.Subset(TorchSamples(), [1, 3, 5]),
                                  tdata.Subset(TorchSamples(), range(4))])
    a = [_plain(b) for b in DataLoader(ours, batch_size=2, num_workers=2)]
    b = [_plain(b) for b in tdata.DataLoader(theirs, batch_size=2, num_workers=2)]
    assert a == b


@pytest.mark.torch
@pytest.mark.parametrize("replacement", [True, False])
def test_weighted_random_sampler_equals_torch(replacement):
    weights = [0.1, 0.0, 3.0, 2.5, 1.0, 0.7, 0.0, 4.0, 1e-3]
    n = 25 if replacement else 6
    for seed in range(20):
        ours = WeightedRandomSampler(weights, n, replacement,
                                     generator=microtorch.Generator().manual_seed(seed))
        theirs = tdata.WeightedRandomSampler(weights, n, replacement,
                                             generator=torch.Generator().manual_seed(seed))
        assert list(ours) == list(theirs), seed
        assert len(ours) == n
    microtorch.manual_seed(4)
    torch.manual_seed(4)
    assert list(WeightedRandomSampler(microtorch.tensor([1.0, 2.0, 3.0]), 10)) == \
        list(tdata.WeightedRandomSampler(torch.tensor([1.0, 2.0, 3.0]), 10))
    loader = DataLoader(Samples(9), batch_size=4, num_workers=2,
                        sampler=WeightedRandomSampler(weights, 12, generator=microtorch.
                                                      Generator().manual_seed(1)))
    tloader = tdata.DataLoader(TorchSamples(), batch_size=4, num_workers=2,
                               sampler=tdata.WeightedRandomSampler(
                                   weights, 12, generator=torch.Generator().manual_seed(1)))
    assert [_plain(b) for b in loader] == [_plain(b) for b in tloader]


def test_weighted_random_sampler_validation():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=1)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        WeightedRandomSampler([-1.0, 2.0], 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)


@pytest.mark.skipif(microtorch.cuda.is_available(), reason="checks the CPU behaviour")
def test_pin_memory_on_cpu_warns_and_is_a_no_op():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        loader = DataLoader(Samples(6), batch_size=3, num_workers=1, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [_plain(b) for b in loader] == [_plain(b) for b in DataLoader(Samples(6), 3)]


@pytest.mark.cuda
@pytest.mark.skipif(not microtorch.cuda.is_available(), reason="needs CUDA (CuPy and a GPU)")
def test_pin_memory_on_cuda_gives_pinned_host_tensors():
    import cupy

    batch = next(iter(DataLoader(Samples(6), batch_size=3, num_workers=1, pin_memory=True)))
    x = batch["x"]
    assert x.device == microtorch.device("cpu") and x.tolist() == [[0, 0], [1, 1], [2, 4]]
    pointer = cupy.cuda.runtime.pointerGetAttributes(x._data.ctypes.data)
    assert pointer.type == cupy.cuda.runtime.memoryTypeHost


def test_persistent_workers_restart_after_an_error():
    loader = DataLoader(Failing(), batch_size=None, num_workers=2, persistent_workers=True)
    with pytest.raises(ValueError, match="sample 5 is broken"):
        list(loader)
    it = iter(loader)  # the failed workers were shut down: a fresh set starts
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it._shutdown_workers()


def test_spawn_context_pickles_dataset_and_batches():
    from microtorch.utils.data import TensorDataset

    ds = TensorDataset(microtorch.arange(20.0).view(10, 2), microtorch.arange(10))
    kwargs = dict(batch_size=3, shuffle=True)
    spawned = DataLoader(ds, num_workers=2, multiprocessing_context="spawn",
                         generator=microtorch.Generator().manual_seed(1), **kwargs)
    local = DataLoader(ds, generator=microtorch.Generator().manual_seed(1), **kwargs)
    assert [[t.tolist() for t in b] for b in spawned] == [[t.tolist() for t in b] for b in local]
