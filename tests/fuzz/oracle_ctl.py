"""The oracle of control-flow programs (gen_control.py): plain NumPy running the same module.

Autograph converts a function from its source, so the program is written into a real module
file (a per-process temporary directory) and imported; ``f`` called on NumPy arrays is the
oracle, ``tj.jit(f)`` on each backend is checked against it exactly as a mutating program is
(oracle_mut.py: results, dtypes, the final contents of the arguments, aliasing, held results,
refusals; first inputs three times, new inputs twice, each call on fresh arguments).

For float64 programs that write into no array, ``tj.grad`` of ``loss = sum(sum(out_k * w_k))``
(fixed random weights, float outputs) w.r.t. the float64 array arguments is also compared, on
both backends, with central differences of NumPy at two step sizes; where the two differences
disagree (a branch or a loop count changes within the step: a kink) the element is skipped.
Class ``deriv-mismatch``; a tracejit error there is ``internal`` unless it is a clear refusal.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sys
import tempfile
import traceback

import numpy as np

import tracejit as tj
from tracejit import errors

from . import gen
from .oracle import Finding, exc_signature
from .oracle_mut import BACKENDS, Expected, _numpy_call, _tolerance, refusal_key, run_backends

_DIR = None
_count = itertools.count()
_WRITE = re.compile(r"(\]\s*[-+*/]?=[^=])|([-+*/]=)|h_write\(")


def load_module(prog):
    """Import ``prog``'s source from a real file (autograph reads it); the module."""
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix=f"tracejit-fuzz-control-{os.getpid()}-")
    name = f"fuzzctl_{prog.seed}_{next(_count)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write("import numpy as np\n\n\n" + prog.source())
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def writes(prog) -> bool:
    body = prog.source().split("def f(", 1)[1]
    return bool(_WRITE.search(body))


def check_control(prog: gen.Program, opts=None) -> dict:
    """Every check for one control-flow program; never raises."""
    mod = load_module(prog)
    f = mod.f
    result = {"findings": [], "unsupported": [], "refusals": [], "expected": []}
    tol = _tolerance(prog)
    first = Expected(f, prog, 0)
    mag = max([1e-3] + [float(np.max(np.abs(x[np.isfinite(x)]), initial=0))
                        for x in first.initial if x.dtype.kind in "fc"])
    expected = {0: first, 1: Expected(f, prog, 1)}
    refused = run_backends(f, prog, expected, tol, mag, result)
    if not refused and not result["findings"] and first.exc is None:
        _check_grad(prog, f, result)
    return result


def _float_outputs(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [k for k, o in enumerate(outs) if np.asarray(o).dtype == np.float64]


def _check_grad(prog, f, result):
    argn = tuple(k for k, a in enumerate(prog.args) if a.kind == "array" and
                 a.dtype == "float64")
    if not argn or writes(prog) or "float32" in prog.source() or \
            any(a.dtype != "float64" and a.kind == "array" for a in prog.args):
        return
    args = gen.make_inputs(prog, 0)
    out = _numpy_call(f, args)
    ks = _float_outputs(out)
    if not ks:
        return
    rng = np.random.default_rng([prog.seed, 5])
    outs = out if isinstance(out, tuple) else (out,)
    ws = {k: rng.uniform(0.5, 1.5, np.shape(outs[k])) for k in ks}

    def loss(*xs):
        o = f(*xs)
        o = o if isinstance(o, tuple) else (o,)
        return sum(np.sum(o[k] * ws[k]) for k in ks)

    fd = {}
    for j in argn:
        g = np.zeros(np.shape(args[j]))
        ok = np.ones(g.shape, bool)
        for i in np.ndindex(g.shape):
            ds = []
            for h in (1e-5, 2.5e-6):
                xp = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
                xm = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
                xp[j][i] += h
                xm[j][i] -= h
                ds.append((_numpy_call(loss, xp) - _numpy_call(loss, xm)) / (2 * h))
            g[i] = ds[1]
            ok[i] = abs(ds[0] - ds[1]) <= 1e-5 * (1 + abs(ds[1]))
        fd[j] = (g, ok)
    for backend in BACKENDS:
        label = f"{backend}: grad"
        try:
            got = tj.jit(tj.grad(loss, argnums=argn), backend=backend)(
                *gen.make_inputs(prog, 0))
        except Exception as e:                   # noqa: BLE001 - classified below
            if isinstance(e, (errors.TracerError, NotImplementedError)) and \
                    not isinstance(e, errors.CompilerError):
                result["refusals"].append(refusal_key(e))
                return
            result["findings"].append(Finding(
                "internal", label, "".join(traceback.format_exception(e))[-1500:],
                exc_signature(e)).record)
            return
        for j, gj in zip(argn, got):
            want, ok = fd[j]
            gj = np.asarray(gj)
            bad = ok & ~np.isclose(gj, want, rtol=1e-5, atol=1e-6 * (1 + np.abs(want).max(
                initial=0)))
            if gj.shape != want.shape or bad.any():
                i = tuple(int(v) for v in np.argwhere(bad)[0]) if gj.shape == want.shape \
                    and bad.ndim else ()
                result["findings"].append(Finding(
                    "deriv-mismatch", label, f"d loss / d {prog.args[j].name} at {i}: tracejit "
                    f"{gj[i] if gj.shape == want.shape else gj!r} vs finite differences "
                    f"{want[i]!r}", f"{backend}: grad").record)
                return
