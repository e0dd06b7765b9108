"""The package's import graph: no circles anywhere, and the layers import one way (issue 13).

Imports are read with ``ast`` from the source of every module of ``tracejit/``: module-level
imports and imports inside functions alike (a lazy import dodges a circle at import time, not
in the design), relative imports resolved against the importing module. An imported name
counts as an import of the longest prefix that is a module (``from pkg import mod`` of
``pkg.mod``, ``from pkg.mod import f`` of ``pkg.mod``, ``from pkg import attr`` of ``pkg``);
the parent packages Python runs first are not counted.

The backend's layers, lowest first (a module may import its own layer and the ones below)::

    abi  <-  plan  <-  engine  <-  mathlib, matmul  <-  emit  <-  runtime  <-  backend/__init__

The plan never imports llvmlite; only ``engine/jit.py`` imports ``llvmlite.binding``.

The front end's layers (``FRONT_END``), lowest first, the pipeline of STYLE.md rule 8 (trace ->
ir -> ops -> transforms -> passes -> backend -> runtime -> api)::

    base         version, errors, dtypes, config, ir, tree, bugreport, funkey, pickling,
                 serialize, artifact, forksafe (values and records: no tracing)
    core         Primitive, the Tracer, the builder, eval_graph
    core helpers ad_util (rules' building blocks), signature, interpret
    ops          the primitives, one place each (ops/*)
    custom rules custom_jvp / custom_vjp / stop_gradient
    numpy        the NumPy layer (its own order below)
    control      cond / while_loop / scan, checkpoint, autograph (Python control flow)
    transforms   jvp, partial evaluation, transpose, control-flow AD, batching (Graph -> Graph)
    passes       simplification passes
    backend      Graph -> native code (its layers above)
    api          trace / jit, the signature cache
    derivatives  ad (jvp, vjp, linearize), derivatives (grad, jacobians, hessian), vmapped
    libraries    callback, debug, ode, random, scipy, test_util
    package      tracejit/__init__.py (imports everything; nothing imports it)

Inside the NumPy layer (``NUMPY_LAYERS``)::

    intrange (range facts) < _base (helpers, exact comparisons) < math (ufuncs, where, trunc)
    < shape < reductions < logic < creation, indexing < products < intstore, mutation
    < composites (tail, sorting, linalg, fft, ...) < tracejit.numpy (the namespace)
    < dispatch (__array_ufunc__/__array_function__ look names up in the namespace) < methods

``core`` imports no NumPy layer: methods.py installs the operators, ndarray methods, NumPy's
protocols and the ``shape`` setter on ``core.Tracer`` with setattr, and the package root imports
it. A module's place is the longest name of a table that matches it; a new module joins a
layer by being listed (the tests name any module that is not).
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
BELOW_BACKEND = ("tracejit.version", "tracejit.config", "tracejit.ir", "tracejit.dtypes",
                 "tracejit.errors", "tracejit.bugreport", "tracejit.passes", "tracejit.ops",
                 "tracejit.forksafe")

# The front end's layers, lowest first: a module imports its own layer and the ones before it.
# A name is a module or a package (all of its modules); the longest name that matches counts.
FRONT_END = [
    ("base", ["tracejit.version", "tracejit.errors", "tracejit.dtypes", "tracejit.config",
              "tracejit.ir", "tracejit.tree", "tracejit.bugreport", "tracejit.funkey",
              "tracejit.pickling", "tracejit.serialize", "tracejit.artifact",
              "tracejit.forksafe"]),
    ("core", ["tracejit.core"]),
    ("core helpers", ["tracejit.ad_util", "tracejit.signature", "tracejit.interpret"]),
    ("ops", ["tracejit.ops"]),
    ("custom rules", ["tracejit.custom"]),
    ("structured control flow", ["tracejit.control", "tracejit.checkpoint"]),
    ("numpy", ["tracejit.numpy"]),
    ("control", ["tracejit.autograph",
                 "tracejit.autograph_control", "tracejit.autograph_rewrite"]),
    ("transforms", ["tracejit.transforms"]),
    ("passes", ["tracejit.passes"]),
    ("backend", ["tracejit.backend"]),
    ("api", ["tracejit.api"]),
    ("derivatives", ["tracejit.ad", "tracejit.derivatives", "tracejit.vmapped",
                     "tracejit.apply"]),
    ("libraries", ["tracejit.callback", "tracejit.debug", "tracejit.ode", "tracejit.random",
                   "tracejit.scipy", "tracejit.test_util"]),
    ("package", ["tracejit"]),
]

# The NumPy layer's own order, lowest first (same rule): range facts, then the helpers every
# function uses, the ufuncs (with where), shapes, reductions, ..., the namespace package, and
# on top the protocols that dispatch into that namespace (installed on Tracer by methods.py,
# which the package root imports).
NUMPY = "tracejit.numpy"
NUMPY_LAYERS = [
    ("range facts", ["intrange"]),
    ("helpers", ["_base"]),
    ("ufuncs", ["math"]),
    ("shapes", ["shape"]),
    ("reductions", ["reductions"]),
    ("logic", ["logic"]),
    ("creation and indexing", ["creation", "indexing"]),
    ("products", ["products"]),
    ("writes", ["intstore", "selection", "mutation"]),
    ("composites", ["aliases", "counting", "einsum", "extra", "factor", "fft",
                    "floatfns", "intercept", "linalg", "nanfuncs", "nonzero", "signal", "sorting",
                    "special", "special_gamma", "special_incomplete", "special_inverse", "bits",
                    "tail", "tail_arrays", "tail_index", "ufunc_tail"]),
    ("namespace", [""]),
    ("protocols", ["dispatch"]),
    ("methods", ["methods"]),
]

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
            if d.startswith(BACKEND):
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


def test_no_import_circle_anywhere():
    assert circles(GRAPH) == [], "\n".join(" ".join(c) for c in circles(GRAPH))


def _rank(module, layers, prefix="") -> int | None:
    """Index in ``layers`` of the longest name matching ``module`` (None: in no layer). A
    name matches its module, or every module of its package (but the table's root, ``tracejit``
    or ``prefix``, only its ``__init__``)."""
    best, rank = -1, None
    for i, (_, names) in enumerate(layers):
        for n in names:
            full = f"{prefix}.{n}" if prefix and n else (prefix or n)
            whole = full != (prefix or "tracejit")     # a package's modules, not the root's
            if (module == full or whole and module.startswith(full + ".")) and len(full) > best:
                best, rank = len(full), i
    return rank


def upward_imports(layers, prefix="", within=lambda m: True) -> list:
    """``module -> dependency`` edges that go to a higher layer of ``layers``."""
    wrong = []
    for m, deps in GRAPH.items():
        if not within(m):
            continue
        rm = _rank(m, layers, prefix)
        assert rm is not None, f"{m} is in no layer: add it to the table"
        for d in deps:
            rd = _rank(d, layers, prefix) if within(d) else None
            if rd is not None and rd > rm:
                wrong.append(f"{m} ({layers[rm][0]}) -> {d} ({layers[rd][0]})")
    return sorted(wrong)


def test_front_end_layers_import_one_way():
    """base < core < ... < derivatives < libraries < the package root: never upwards."""
    assert upward_imports(FRONT_END) == []


def test_numpy_layers_import_one_way():
    """Inside the NumPy layer: range facts < helpers < ufuncs < ... < namespace < protocols."""
    inside = lambda m: m == NUMPY or m.startswith(NUMPY + ".")        # noqa: E731
    assert upward_imports(NUMPY_LAYERS, NUMPY, inside) == []


def test_core_does_not_import_the_numpy_layer():
    """NumPy's protocols and operators reach Tracer by methods.py's setattr, not by import."""
    assert not any(d.startswith(NUMPY) for d in GRAPH["tracejit.core"])


if __name__ == "__main__":       # print the circles, the upward imports and the backend's edges
    for comp in circles(GRAPH):
        print("circle:", " ".join(comp))
    for edge in upward_imports(FRONT_END) + upward_imports(
            NUMPY_LAYERS, NUMPY, lambda m: m == NUMPY or m.startswith(NUMPY + ".")):
        print("upward:", edge)
    for m in sorted(GRAPH):
        if m.startswith(BACKEND):
            print(m, "->", " ".join(sorted(GRAPH[m])), file=sys.stdout)
