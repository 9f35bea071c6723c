"""microtorch against an earlier microtorch: the training steps of ``models.py`` from two
checkouts, each worker alone in its own process, rounds alternating which goes first.

A change's effect on a model is a few percent, while these shared machines drift by more than
that between two ``models.py`` runs minutes apart; alternating the two checkouts' workers
round by round puts both under the same drift. Both run microtorch's own process settings,
the same thread count, the same weights (written by the first worker of each case) and
batches. Ratio = this checkout's median / the baseline's (below 1: this one is faster).

    git worktree add /tmp/base <commit>      # the baseline, checked out beside this one
    python3 benchmarks/compare_checkouts.py /tmp/base --cases lstm,cnn --rounds 5 --out DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout

from microtorch.bench.isolated import python_command, run_worker  # noqa: E402
from microtorch.bench.measure import ms_with_quartiles, summarize  # noqa: E402


def compare(baseline: Path, cases: list[str], rounds: int, threads: int, workdir: Path) -> list:
    """Per case and phase: each checkout's summary and the ratio of medians."""
    scripts = {"this": HERE / "models.py", "baseline": baseline / "benchmarks" / "models.py"}
    if not scripts["baseline"].exists():
        raise SystemExit(f"{baseline} has no benchmarks/models.py: not a microtorch checkout")
    rows = []
    for case in cases:
        weights = workdir / case
        samples: dict[str, dict[str, list[float]]] = {"this": {}, "baseline": {}}
        for r in range(rounds):
            for which in (("this", "baseline") if r % 2 == 0 else ("baseline", "this")):
                out = run_worker(python_command(str(scripts[which]), "--worker", "microtorch",
                                                "--case", case, "--weights", str(weights)),
                                 threads, framework="microtorch")
                for phase, times in out["phases"].items():
                    samples[which].setdefault(phase, []).extend(times)
            print(f"  {case}: round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for phase, times in samples["this"].items():
            this, base = summarize(times), summarize(samples["baseline"][phase])
            rows.append({"case": case, "phase": phase, "this": this, "baseline": base,
                         "ratio": this["median_us"] / base["median_us"]})
    return rows


def commit_of(root: Path) -> str:
    """The checkout's commit (short hash), or its path when it is not a git checkout."""
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(root)


def render(rows: list, baseline: Path, rounds: int, threads: int) -> str:
    lines = [f"# This checkout ({commit_of(HERE.parent)}) / baseline ({commit_of(baseline)}), "
             "each worker alone in its own process",
             "", f"{rounds} rounds per case, alternating which checkout goes first; {threads} "
             "threads; medians (quartiles) over all rounds' steps, ms.", "",
             "| case | phase | this | baseline | ratio |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['phase']} | {ms_with_quartiles(r['this'])} | "
                     f"{ms_with_quartiles(r['baseline'])} | **{r['ratio']:.3f}** |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("baseline", type=Path, help="the other checkout's root directory")
    parser.add_argument("--cases", default="mlp,cnn,lstm,transformer,embedding_lm",
                        help="comma-separated models.py cases")
    parser.add_argument("--rounds", type=int, default=3, help="workers per checkout and case")
    parser.add_argument("--threads", type=int, default=2, help="threads of each worker")
    parser.add_argument("--out", type=Path, help="write compare_checkouts.{json,md} here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = compare(args.baseline.resolve(), args.cases.split(","), args.rounds,
                       args.threads, Path(tmp))
    text = render(rows, args.baseline, args.rounds, args.threads)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "compare_checkouts.md").write_text(text)
        (args.out / "compare_checkouts.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
