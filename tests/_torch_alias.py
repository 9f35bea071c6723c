"""Run scripts written for PyTorch with microtorch in its place, and collect what they print.

``python tests/_torch_alias.py {torch,microtorch} OUT.json SCRIPT...`` runs each script in
this one process (``runpy``, as ``__main__``, from a fresh random seed state set by the script
itself) and writes ``{script: {"stdout": ..., "error": ...}}`` as JSON. With ``microtorch``,
an import hook resolves ``torch`` and every ``torch.x.y`` to ``microtorch`` and
``microtorch.x.y``, so the scripts run unmodified: ``import torch.nn.functional as F`` is
``microtorch.nn.functional``. A missing module fails the script as it would fail a user.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import io
import json
import os
import runpy
import sys
import traceback
import warnings


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.x`` by importing ``microtorch.x`` and registering it under both names."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:  # already executed by import_module
        pass


class TorchAlias(importlib.abc.MetaPathFinder):
    """A meta-path finder that answers ``torch`` and ``torch.*`` with microtorch's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        real = "microtorch" + fullname[len("torch"):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real),
                                               is_package=True)


def run_scripts(scripts: list[str]) -> dict[str, dict[str, str | None]]:
    """Run each script as ``__main__``; capture stdout and the error that stopped it."""
    results = {}
    for script in scripts:
        out = io.StringIO()
        error = None
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                runpy.run_path(script, run_name="__main__")
            except BaseException:  # noqa: BLE001 - the harness reports any failure
                error = traceback.format_exc(limit=-4)
        results[os.path.basename(script)] = {"stdout": out.getvalue(), "error": error}
    return results


def main(argv: list[str]) -> None:
    lib, out_path, *scripts = argv
    # runpy puts no script directory on sys.path; the repository root provides microtorch.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if lib == "microtorch":
        sys.meta_path.insert(0, TorchAlias())
    elif lib != "torch":
        raise SystemExit(f"unknown framework {lib!r}: torch or microtorch")
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(run_scripts(scripts), f)


if __name__ == "__main__":
    main(sys.argv[1:])
