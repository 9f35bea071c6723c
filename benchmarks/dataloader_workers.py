"""DataLoader throughput with worker processes against loading in the main process.

The dataset's ``__getitem__`` costs about 1 ms of CPU work (a busy loop, not a sleep: a
sleep would overlap even on one core and flatter the workers).  Prints batches per second
for ``num_workers=0`` and for each worker count, the speed-up, and the machine's load
average (the figures mean little on a machine busy with other work).

    python benchmarks/dataloader_workers.py [--workers 2] [--batches 200] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import microtorch  # noqa: E402
from microtorch.utils.data import DataLoader, Dataset  # noqa: E402


class BusyDataset(Dataset):
    """Samples that each take ``cost`` seconds of CPU time to produce."""

    def __init__(self, n: int, cost: float = 1e-3) -> None:
        self.n, self.cost = n, cost

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        end = time.process_time() + self.cost
        while time.process_time() < end:
            pass
        return microtorch.full((16,), float(i)), i


def batches_per_second(workers: int, batches: int, batch_size: int) -> float:
    loader = DataLoader(BusyDataset(batches * batch_size), batch_size=batch_size,
                        num_workers=workers)
    start = time.perf_counter()
    count = sum(1 for _ in loader)  # worker start-up included, as a user pays it
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    base = max(batches_per_second(0, args.batches, args.batch_size)
               for _ in range(args.repeats))
    print(f"num_workers=0: {base:.1f} batches/s")
    for workers in args.workers:
        rate = max(batches_per_second(workers, args.batches, args.batch_size)
                   for _ in range(args.repeats))
        print(f"num_workers={workers}: {rate:.1f} batches/s  ({rate / base:.2f}x)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
