"""The package's import graph: no circles, and the backend's layers import one way (issue 13).

Imports are read with ``ast`` from the source of every module of ``tracejit/``: module-level
imports and imports inside functions alike (a lazy import dodges a circle at import time, not
in the design), relative imports resolved against the importing module. An imported name
counts as an import of the longest prefix that is a module (``from pkg import mod`` of
``pkg.mod``, ``from pkg.mod import f`` of ``pkg.mod``, ``from pkg import attr`` of ``pkg``);
the parent packages Python runs first are not counted.

The backend's layers, lowest first (a module may import its own layer and the ones below)::

    abi  <-  plan  <-  engine  <-  mathlib, matmul  <-  emit  <-  runtime  <-  backend/__init__

The plan never imports llvmlite; only ``engine/jit.py`` imports ``llvmlite.binding``.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import tracejit

ROOT = Path(tracejit.__file__).parent
BACKEND = "tracejit.backend"

# rank of each part of the backend: imports go to a lower rank or stay inside the part
LAYERS = {"abi": 0, "plan": 1, "engine": 2, "mathlib": 3, "matmul": 3, "emit": 4, "runtime": 5,
          "": 6}

# what the backend may import from the rest of the package: the layers below it
# (STYLE.md 8: trace -> ir -> ops -> transforms -> passes -> backend -> runtime -> api)
BELOW_BACKEND = ("tracejit.config", "tracejit.ir", "tracejit.dtypes", "tracejit.errors",
                 "tracejit.bugreport", "tracejit.passes", "tracejit.ops")
UPWARD_EXCEPTIONS = {
    ("tracejit.backend.engine.jit", "tracejit"):
        "cache keys read tracejit.__version__, defined in tracejit/__init__.py; to drop this, "
        "the version moves to a module of its own (a front-end file)",
}

# Circles of the front end that predate issue 13 (its modules import each other through
# tracejit.numpy, tracejit.api and the package root). A module joining them fails the test;
# shrink the set as they are broken.
KNOWN_FRONT_END_CIRCLES = frozenset(
    ["tracejit", "tracejit.ad", "tracejit.ad_util", "tracejit.api", "tracejit.autograph",
     "tracejit.checkpoint",
     "tracejit.control", "tracejit.core", "tracejit.custom", "tracejit.derivatives",
     "tracejit.interpret", "tracejit.passes", "tracejit.signature", "tracejit.test_util",
     # issue 18's callbacks and odeint: imported by the package root and importing core,
     # they close the circle through backend/engine/jit.py -> tracejit (__version__, see
     # UPWARD_EXCEPTIONS); moving the version to a module of its own takes them out
     "tracejit.callback", "tracejit.debug", "tracejit.ops.callback", "tracejit.ode"]
    + [f"tracejit.numpy{m}" for m in (
        "", "._base", ".counting", ".creation", ".dispatch", ".einsum", ".extra", ".factor",
        ".fft", ".floatfns", ".indexing", ".intercept", ".intrange", ".linalg", ".logic",
        ".math", ".methods", ".mutation", ".nanfuncs", ".nonzero", ".products", ".reductions",
        ".shape", ".signal", ".sorting", ".tail",
        # SciPy's ufuncs reach them from Tracer.__array_ufunc__ as NumPy's reach the others
        ".special", ".special_gamma", ".special_incomplete", ".bits")]
    # (a new module of the NumPy layer joins it like every other; every ops module via core)
    + [f"tracejit.ops.{m}" for m in ("contraction", "control", "elementwise", "fft", "linalg",
                                     "reductions", "sorting", "spectral", "structural")]
    + [f"tracejit.transforms.{m}" for m in ("batching", "jvp", "partial_eval", "transpose")])


def _modules() -> dict:
    """Dotted module name -> (path, whether it is a package's ``__init__``)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _imported_names(name, is_pkg, node) -> list:
    """Absolute dotted names an ``import`` / ``from ... import`` statement refers to."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [f"{target}.{a.name}" for a in node.names]


def _raw_imports(modules) -> dict:
    """Module -> set of every dotted name it imports (inside or outside tracejit)."""
    out = {}
    for name, (path, is_pkg) in modules.items():
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update(_imported_names(name, is_pkg, node))
        out[name] = names
    return out


def import_graph() -> dict:
    """Module -> set of the tracejit modules it imports (a name resolves to the longest
    prefix that is a module: ``from .x import f`` is an import of ``x``)."""
    modules = _modules()
    graph = {}
    for name, names in _raw_imports(modules).items():
        deps = set()
        for target in names:
            if not target.startswith("tracejit"):
                continue
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


def circles(graph) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
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


def _subgraph(graph, keep) -> dict:
    return {m: {d for d in deps if keep(d)} for m, deps in graph.items() if keep(m)}


def _layer(module) -> str:
    rest = module[len(BACKEND) + 1:] if module != BACKEND else ""
    return rest.split(".")[0]


GRAPH = import_graph()


def test_the_graph_is_read():
    """The reader sees lazy imports too (executable imports pyabi inside functions)."""
    assert "tracejit.backend.runtime.pyabi" in GRAPH["tracejit.backend.runtime.executable"]
    assert "tracejit.backend.runtime.executable" in GRAPH["tracejit.api"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_backend_has_no_import_circle():
    assert circles(_subgraph(GRAPH, lambda m: m.startswith(BACKEND))) == []


def test_backend_layers_import_one_way():
    """plan <- emit <- runtime (and abi, engine, mathlib, matmul in between): never upwards."""
    wrong = []
    for m, deps in GRAPH.items():
        if not m.startswith(BACKEND):
            continue
        assert _layer(m) in LAYERS, f"{m} is in no layer of the backend"
        for d in deps:
            if d.startswith(BACKEND) and _layer(d) != _layer(m) and \
                    LAYERS[_layer(d)] >= LAYERS[_layer(m)]:
                wrong.append(f"{m} -> {d}")
    assert wrong == []


def test_backend_imports_only_the_layers_below_it():
    wrong = []
    for m, deps in GRAPH.items():
        if not m.startswith(BACKEND):
            continue
        for d in deps:
            if d.startswith(BACKEND) or (m, d) in UPWARD_EXCEPTIONS:
                continue
            if not any(d == b or d.startswith(b + ".") for b in BELOW_BACKEND):
                wrong.append(f"{m} -> {d}")
    assert wrong == []


def test_plan_never_imports_llvmlite():
    raw = _raw_imports(_modules())
    for m, names in raw.items():
        if _layer(m) in ("plan", "abi") and m.startswith(BACKEND + "."):
            assert not any(n.split(".")[0] == "llvmlite" for n in names), m


def test_only_the_engine_imports_llvmlite_binding():
    raw = _raw_imports(_modules())
    users = sorted(m for m, names in raw.items()
                   if any(n == "llvmlite.binding" or n.startswith("llvmlite.binding.")
                          for n in names))
    assert users == ["tracejit.backend.engine.jit"]


def test_no_new_import_circle_in_the_package():
    """Every circle of the package runs through the front end's known circles: removing those
    modules leaves none, and no other front-end module is part of one."""
    found = {m for comp in circles(GRAPH) for m in comp}
    assert sorted(m for m in found - KNOWN_FRONT_END_CIRCLES
                  if not m.startswith(BACKEND)) == []
    rest = _subgraph(GRAPH, lambda m: m not in KNOWN_FRONT_END_CIRCLES)
    assert circles(rest) == []


@pytest.mark.xfail(strict=False, reason="the front end's circles predate issue 13 "
                   "(KNOWN_FRONT_END_CIRCLES); drop this mark once they are broken")
def test_no_import_circle_anywhere():
    assert circles(GRAPH) == [], "\n".join(" ".join(c) for c in circles(GRAPH))


if __name__ == "__main__":       # print the circles and the backend's edges
    for comp in circles(GRAPH):
        print("circle:", " ".join(comp))
    for m in sorted(GRAPH):
        if m.startswith(BACKEND):
            print(m, "->", " ".join(sorted(GRAPH[m])), file=sys.stdout)
