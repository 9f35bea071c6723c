#!/usr/bin/env bash
# Reproduce the committed results: the full benchmark on this machine, written to
# benchmarks/results/ (results.json, report.md, PNG plots). Extra arguments go to
# `microtorch bench`, e.g. `bash benchmarks/run.sh --quick` or `--device cpu`.
# Run it on an otherwise idle machine: the report records the load average, and any
# competing work inflates the absolute times (PyTorch's two threads suffer most).
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg
exec python -m microtorch bench --out benchmarks/results "$@"
