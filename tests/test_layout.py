"""Layout checks of the repository (issue 10): names, sizes, import direction, self-contained docs.

The import rule (c): build the graph of microtorch's own modules statically with ``ast``, from
every ``import`` statement at any depth (module level and inside functions alike, since a
deferred import is still a dependency), relative imports resolved against the importing module.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``, but those parent packages are
not counted as edges: a package's ``__init__`` re-exporting its children would otherwise close a
circle with every child. The only strongly connected component allowed to hold more than one
module is the core one: ``microtorch._tensor``, ``microtorch.ops.*`` and ``microtorch.autograd.*``
(a Tensor method calls an op, an op builds a graph node, a node's backward calls ops again).
Any other circle, and any module outside the core pulled into the core's circle, fails the test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "microtorch"
MAX_LINES = 700


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, level: int, here: str, is_package: bool) -> str:
    if level == 0:
        return name
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def import_graph() -> dict[str, set[str]]:
    """Edges ``module -> imported microtorch module`` from every import statement."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, mod, is_package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for t in targets:
                # "import microtorch.a.b" names a module; keep the longest known prefix.
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def _is_core(mod: str) -> bool:
    return (mod == "microtorch._tensor" or mod.startswith("microtorch.ops")
            or mod.startswith("microtorch.autograd"))


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _cycle_in(comp: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One concrete circle inside a component, for the error message (breadth-first search)."""
    members = set(comp)
    start = next((m for m in comp if not _is_core(m)), comp[0])
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def test_no_file_named_by_when_it_was_written():
    bad = [str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*")
           if re.search(r"_extra|_more|layers_1d", p.name)]
    assert not bad, f"files named by when, not what: {bad}"


def test_no_module_over_700_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by category): {long}"


def test_no_import_circle_outside_the_core():
    graph = import_graph()
    bad = [c for c in strongly_connected(graph) if not all(_is_core(m) for m in c)]
    assert not bad, "import circles outside the core: " + "; ".join(
        " -> ".join(_cycle_in(c, graph)) for c in bad)


# The direction of dependency, lowest first: a module may import its own layer and the ones
# below it. Modules not listed (the package root, _hooks, cuda, cpu, random, serialization, ...)
# are outside the rule; the circle check above still covers them.
LAYERS = [("microtorch.backend", "microtorch._dtype"),
          ("microtorch._tensor", "microtorch.autograd", "microtorch.ops"),
          ("microtorch.nn",),
          ("microtorch.optim",),
          ("microtorch.utils.data", "microtorch.distributed", "microtorch.cli", "microtorch.bench")]
# nn.parallel is PyTorch's alias for the distributed wrapper (torch.nn.parallel.
# DistributedDataParallel); nn imports it on first use only.
UPWARD_ALLOWED = {("microtorch.nn.parallel", "microtorch.distributed.ddp")}


def _layer(mod: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(mod == p or mod.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_imports_go_one_direction():
    bad = []
    for mod, targets in import_graph().items():
        for t in targets:
            lo, hi = _layer(mod), _layer(t)
            if lo is not None and hi is not None and hi > lo and (mod, t) not in UPWARD_ALLOWED:
                bad.append(f"{mod} -> {t}")
    assert not bad, "imports against the direction backend <- tensor/autograd/ops <- nn <- " \
        f"optim <- data/distributed/cli/bench: {sorted(bad)}"


def test_backend_does_not_import_the_tensor_layer():
    graph = import_graph()
    bad = {m: sorted(t for t in ts if not t.startswith("microtorch.backend")
                     and t != "microtorch._dtype")
           for m, ts in graph.items() if m.startswith("microtorch.backend")}
    bad = {m: ts for m, ts in bad.items() if ts}
    assert not bad, f"backend modules importing above the backend: {bad}"


def test_the_checker_finds_a_circle():
    graph = {"microtorch.nn.a": {"microtorch.nn.b"}, "microtorch.nn.b": {"microtorch.nn.a"},
             "microtorch.ops.x": {"microtorch._tensor"}, "microtorch._tensor": {"microtorch.ops.x"}}
    comps = strongly_connected(graph)
    assert sorted(comps) == [["microtorch._tensor", "microtorch.ops.x"],
                             ["microtorch.nn.a", "microtorch.nn.b"]]
    assert _cycle_in(["microtorch.nn.a", "microtorch.nn.b"], graph) == [
        "microtorch.nn.a", "microtorch.nn.b", "microtorch.nn.a"]


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_link_only_inside_the_repository(doc: Path):
    assert doc.exists(), f"{doc} is missing"
    text = doc.read_text()
    assert "../shared" not in text and "DESIGN.md" not in text, \
        f"{doc.name} points outside the repository (../shared or DESIGN.md)"
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        path = (doc.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(target)
    assert not broken, f"{doc.name} links to files not in the repository: {broken}"


def test_license_and_typed_marker_exist():
    assert (ROOT / "LICENSE").is_file()
    assert (PACKAGE / "py.typed").is_file()
