"""microtorch.distributed: collectives, DDP parity with single-process training, failure
handling, DistributedSampler.

Multi-process checks launch ``mpiexec -n 2 python tests/mpi_scripts/<script>.py`` (the MPICH
wheel's launcher; no flags or environment needed on a single host) and read the JSON files
the ranks write into ``$MPI_TEST_OUT`` (stdout lines of two ranks can interleave). They skip
when mpiexec or mpi4py is missing, unless ``MICROTORCH_REQUIRE_MPI=1`` (CI) makes that fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import microtorch as torch
from microtorch.autograd import engine
from microtorch.utils.data.distributed import DistributedSampler

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "mpi_scripts"


def _mpiexec() -> str | None:
    # The launcher next to this interpreter first: it belongs to the MPI that mpi4py loads.
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    return shutil.which("mpiexec")


def _require_mpi() -> str:
    launcher = _mpiexec()
    missing = None
    if launcher is None:
        missing = "mpiexec not found (pip install mpich)"
    elif importlib.util.find_spec("mpi4py") is None:
        missing = "mpi4py not installed (pip install mpi4py)"
    if missing:
        if os.environ.get("MICROTORCH_REQUIRE_MPI") == "1":
            pytest.fail(f"MICROTORCH_REQUIRE_MPI=1 but {missing}")
        pytest.skip(missing)
    return launcher


def run_mpi(script: str, *args: str, out: Path, n: int = 2, timeout: float = 60
            ) -> subprocess.CompletedProcess:
    """Run a script of tests/mpi_scripts on ``n`` ranks; never waits longer than ``timeout``."""
    launcher = _require_mpi()
    env = dict(os.environ, MPI_TEST_OUT=str(out), PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([launcher, "-n", str(n), sys.executable, str(SCRIPTS / script), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def results(proc: subprocess.CompletedProcess, out: Path) -> list[dict]:
    """What each rank reported, by rank."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads(f.read_text()) for f in sorted(out.glob("rank*.json"))]


# -- multi-process ------------------------------------------------------------------------------
@pytest.mark.mpi
def test_collectives_two_ranks(tmp_path):
    out = results(run_mpi("collectives.py", out=tmp_path), tmp_path)
    assert [r["rank"] for r in out] == [0, 1]
    for r in out:
        assert r["world"] == 2 and r["initialized"] and r["backend"] == "mpi"
        assert r["sum"] == [3.0, 6.0]
        assert r["avg"] == [1.5, 3.0] and r["avg_dtype"] == "microtorch.float64"
        assert r["max_int"] == [6, 0] and r["max_dtype"] == "microtorch.int64"
        assert r["noncontig"] == [[0.0, 9.0], [3.0, 12.0], [6.0, 15.0]]
        assert r["half"] == [1.0, 1.0, 1.0] and r["half_dtype"] == "microtorch.float16"
        assert r["broadcast"] == [[1.0, 1.0], [1.0, 1.0]]
        assert r["all_gather"] == [[0, 0], [1, 10]]
        assert r["async_done"]
    # The sampler took rank and world size from the group.
    for r in out:
        sampler = DistributedSampler(range(11), 2, r["rank"], seed=3)
        sampler.set_epoch(2)
        assert r["sampler"] == list(sampler)
    assert set(out[0]["sampler"]) | set(out[1]["sampler"]) == set(range(11))


@pytest.mark.mpi
def test_ddp_matches_single_process_with_the_whole_batch(tmp_path):
    (res,) = results(run_mpi("ddp.py", out=tmp_path), tmp_path)
    for key in ("accum1_none1", "accum1_none0", "accum3_none1", "accum3_none0", "no_view"):
        r = res[key]
        assert r["max_diff"] < 1e-5, (key, r)  # 2 ranks x batch B == 1 process x batch 2B
        assert r["rank_spread"] == 0.0, (key, r)  # replicas stay bit-identical
        assert r["buffer"] == 1.0, (key, r)  # rank 0's buffer was broadcast
    assert res["accum1_none1"]["buckets"] == 2  # the small cap made several buckets
    assert res["accum1_none0"]["grads_in_buckets"] is True  # gradient_as_bucket_view
    assert res["no_view"]["grads_in_buckets"] is False
    for key in ("unused_none1", "unused_none0"):
        r = res[key]
        for it in ("0", "1"):
            assert r[it]["never_is_none"], (key, it)  # no gradient on any rank: stays None
            assert not r[it]["b_is_none"], (key, it)  # a gradient on rank 1 only
            assert r[it]["a_weight"] == pytest.approx(r["a_expected"], rel=1e-6)
    assert res["state_keys"][0] == "module.seen"
    assert all(k.startswith("module.") for k in res["state_keys"])


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["raise", "hang"])
def test_a_failing_rank_does_not_hang_the_others(mode, tmp_path):
    start = time.monotonic()
    proc = run_mpi("failure.py", mode, out=tmp_path, timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode != 0
    assert "UNREACHABLE" not in proc.stdout
    assert elapsed < 30, f"the job took {elapsed:.1f} s to stop"
    if mode == "raise":
        assert "rank 1 fails on purpose" in proc.stderr
        assert "aborting all 2 ranks" in proc.stderr
    else:  # rank 0 times out (timeout=2 s) with a clear error, then the job is aborted
        assert "all_reduce on rank 0 timed out after 2 s" in proc.stderr
        assert "a peer rank may have failed" in proc.stderr


@pytest.mark.mpi
def test_a_killed_rank_ends_the_job(tmp_path):
    """SIGKILL of rank 1 mid-training: the job ends quickly and never reports success. (Under
    MPICH's launcher the survivor is taken down with the job; when it is not, its next
    all-reduce times out, as ``hang`` shows.)"""
    start = time.monotonic()
    proc = run_mpi("failure.py", "kill", out=tmp_path, timeout=60)
    assert proc.returncode != 0
    assert "UNREACHABLE" not in proc.stdout
    assert time.monotonic() - start < 30
    for report in tmp_path.glob("rank*.json"):  # a survivor that saw the failure says so
        assert json.loads(report.read_text())["error"] in ("DistributedTimeoutError",
                                                           "Exception")


def _mpich_segments() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("mpich_shm_")}


@pytest.mark.mpi
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this system")
@pytest.mark.parametrize("mode", ["kill", "raise"])
def test_a_killed_or_aborted_job_leaves_dev_shm_as_it_found_it(mode, tmp_path):
    """MPICH keeps its 2 MB segment under /dev/shm until MPI_Finalize; init_process_group
    unlinks the name once every rank has mapped it, so SIGKILL or MPI_Abort leave nothing.
    (Other tests' jobs may run meanwhile: their segments are unlinked right after their
    init, so what is new is waited out for a moment; a leaked file stays for good.)"""
    before = _mpich_segments()
    proc = run_mpi("failure.py", mode, out=tmp_path, timeout=60)
    assert proc.returncode != 0
    deadline = time.monotonic() + 10
    while (_mpich_segments() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _mpich_segments() - before == set()


@pytest.mark.mpi
@pytest.mark.parametrize("mode, rank1_shape, counts", [
    ("shape", "(6, 4)", (4, 4)),  # same element count, other shape
    ("numel", "(5, 4)", (4, 4)),
    ("count", "(6, 4)", (4, 6)),  # rank 1 has another layer
])
def test_ddp_refuses_ranks_with_different_models(mode, rank1_shape, counts, tmp_path):
    reports = results(run_mpi("ddp_mismatch.py", mode, out=tmp_path, timeout=60), tmp_path)
    assert len(reports) == 2
    for r in reports:  # every rank raises the same error, naming both shapes
        message = r["error"]
        assert message is not None, r
        assert f"rank 0 has {counts[0]} parameters" in message
        assert f"rank 1 has {counts[1]}" in message
        assert "parameter 0: rank 0 has '0.weight' of shape (4, 6)" in message
        assert f"rank 1 has '0.weight' of shape {rank1_shape}" in message


@pytest.mark.mpi
def test_ddp_accepts_identical_models(tmp_path):
    reports = results(run_mpi("ddp_mismatch.py", "same", out=tmp_path, timeout=60), tmp_path)
    assert [r["error"] for r in reports] == [None, None]


# -- single process -----------------------------------------------------------------------------
def test_sampler_shards_pad_and_drop_last():
    shards = [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded from the start
    shards = [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
              for r in range(3)]
    assert shards == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s0, s1 = (DistributedSampler(range(10), 2, r, seed=1) for r in (0, 1))
    first = list(s0)
    assert sorted(first + list(s1)) == list(range(10))  # disjoint shards of one permutation
    s0.set_epoch(1)
    assert list(s0) != first  # set_epoch reshuffles
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), 2, 2)


@pytest.mark.torch
@pytest.mark.parametrize("n,replicas,drop_last", [(10, 2, False), (11, 3, False),
                                                  (11, 3, True), (2, 4, False), (100, 4, True)])
def test_sampler_order_equals_pytorch(n, replicas, drop_last):
    tdata = pytest.importorskip("torch.utils.data.distributed", reason="PyTorch not installed")
    for shuffle in (False, True):
        for epoch in (0, 5):
            for rank in range(replicas):
                ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7,
                                          drop_last=drop_last)
                theirs = tdata.DistributedSampler(range(n), replicas, rank, shuffle=shuffle,
                                                  seed=7, drop_last=drop_last)
                ours.set_epoch(epoch)
                theirs.set_epoch(epoch)
                assert list(ours) == list(theirs)
                assert len(ours) == len(theirs)


def test_init_rejects_unsupported_options():
    import microtorch.distributed as dist

    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="init_method"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:23456")
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_rank()
    assert not dist.is_initialized()


def test_engine_post_accumulate_hooks_and_final_callbacks():
    x = torch.ones(3, requires_grad=True)
    log = []

    def hook(t):
        log.append(("accumulated", t.grad.sum().item()))
        engine.queue_callback(lambda: log.append("finished"))

    handle = engine.register_post_accumulate_grad_hook(x, hook)
    (x * 2).sum().backward()
    assert log == [("accumulated", 6.0), "finished"]
    handle.remove()
    (x * 2).sum().backward()
    assert len(log) == 2
    with pytest.raises(RuntimeError, match="during backward"):
        engine.queue_callback(lambda: None)


@pytest.mark.mpi
@pytest.mark.cuda
def test_nccl_collectives_and_ddp_on_the_gpu(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available (needs CuPy and a GPU)")
    import microtorch.distributed as dist

    if not dist.is_nccl_available():
        pytest.skip("CuPy has no NCCL bindings here")
    # Two ranks on one GPU each where there are two; the stand-in gives each process its own.
    n = 2 if os.environ.get("MICROTORCH_TEST_CUDA") == "standin" else min(
        2, torch.cuda.device_count())
    for r in results(run_mpi("nccl.py", out=tmp_path, n=n, timeout=120), tmp_path):
        total = sum(range(1, n + 1))
        assert r["backend"] == "nccl" and r["world"] == n
        assert r["sum"] == [total, 2.0 * total]
        assert r["avg"] == pytest.approx([total / n, 2 * total / n])
        assert r["max"] == [n - 1, 0]
        assert r["noncontig"] == [[0.0, 3.0 * total], [total, 4.0 * total],
                                  [2.0 * total, 5.0 * total]]
        assert r["broadcast"] == [n - 1.0, n - 1.0]
        assert r["all_gather"] == [[float(i)] * 2 for i in range(n)]
        assert r["cpu_sum"] == [float(n)] * 3
        assert r["ddp_max_diff"] < 1e-5


@pytest.mark.mpi
def test_cli_train_distributed_rank0_prints_and_saves(tmp_path):
    launcher = _require_mpi()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    ckpt, metrics = tmp_path / "ckpt.safetensors", tmp_path / "metrics.json"
    proc = subprocess.run(
        [launcher, "-n", "2", sys.executable, "-m", "microtorch", "train", "--distributed",
         "--epochs", "1", "--accum-steps", "2", "--save", str(ckpt), "--metrics-json",
         str(metrics)], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("epoch 1/1:") == 1  # rank 0 only
    assert proc.stdout.count("test accuracy") == 1
    out = json.loads(metrics.read_text())
    assert out["world_size"] == 2 and out["test_accuracy"] > 0.3
    assert ckpt.is_file()


@pytest.mark.mpi
def test_cli_bench_distributed_tiny(tmp_path):
    _require_mpi()
    from microtorch import cli

    assert cli.main(["bench", "--distributed", "--tiny", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert {r["world_size"] for r in res["distributed"]} == {1, 2}
    assert all(r["comm"]["median_us"] >= 0 for r in res["distributed"])
    assert "hidden" in (tmp_path / "report.md").read_text()
