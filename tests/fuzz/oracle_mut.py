"""The oracle of mutating programs (mutate.py): plain NumPy on fresh arguments.

For the first inputs (three calls: the Python path, then the native entry) and new inputs (two
calls), on both backends, each call gets *fresh* arguments (``make_arg`` again, so the view
layouts are the same) and is compared with NumPy run on its own fresh arguments:

- the returned values and dtypes, and the final contents of every argument array (NumPy's
  in-place semantics: what the function wrote into the caller's arrays);
- a returned argument that NumPy wrote into must be the caller's array itself (``aliasing``);
- results held by the caller never change during later calls (``held-corruption``);
- where NumPy raises, tracejit must raise an exception of a compatible type (sharing a builtin
  base: ``TypeError``, ``ValueError``, ``IndexError``, ...): ``missing-error`` if it returns,
  ``error-mismatch`` if the types differ.

Where NumPy succeeds, a clear tracejit error (``TracerError``: ``InputError``,
``ConcretizationError``, ``UnsupportedError``, ...; ``NotImplementedError``) is a *refusal*,
not a finding: listed (``refusals``, message with numbers and names folded) as candidate missing
features. One that the documentation promises is ``expected`` instead: the ``InputError`` for
a non-C-contiguous argument of a function that reshapes an argument and writes. Any other
exception is ``internal``. Floating-point values are compared as in oracle.py (tolerance, and
the noise probe: here NumPy's own sensitivity to inputs perturbed by ~16 ulps, layouts kept).
"""
from __future__ import annotations

import re
import traceback
import warnings

import numpy as np

import tracejit as tj
from tracejit import errors

from . import gen
from .oracle import Finding, _snapshot, compare, exc_signature, leaves

BACKENDS = ("interpret", "llvm")
BUILTIN_KINDS = (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError,
                 OverflowError, FloatingPointError, AttributeError, NotImplementedError)


def _numpy_call(f, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


def _compatible(tj_exc, np_exc) -> bool:
    if isinstance(np_exc, AttributeError) and re.match(r"'(float|int|complex|bool)' object has "
                                                        r"no attribute", str(np_exc)):
        return True     # a Python scalar argument is traced as a 0-d array, which has methods
    return any(isinstance(tj_exc, k) and isinstance(np_exc, k) for k in BUILTIN_KINDS)


def refusal_key(e) -> str:
    """A refusal's message with source positions, numbers and variable names folded, so one
    cause is one line of the summary."""
    msg = re.sub(r"\n\s+at .*", "", str(e)).split("\n")[0]
    msg = re.sub(r"<fuzz[^>]*>:\d+", "<src>", msg)
    msg = re.sub(r"\b[av]\d+\b", "x", msg)
    msg = re.sub(r"\d+", "N", msg)
    return f"{type(e).__name__}: {msg[:160]}"


def _perturbed(prog, call, seed):
    """Fresh inputs (same layouts) scaled by 1 + ~16 ulps, in place."""
    rng = np.random.default_rng(seed)
    xs = gen.make_inputs(prog, call)
    for k, x in enumerate(xs):
        if isinstance(x, float):
            xs[k] = x * (1 + 3.6e-15 * rng.standard_normal())
        elif isinstance(x, np.ndarray) and x.dtype.kind in "fc":
            eps = 2e-6 if x.dtype in (np.float32, np.complex64) else 3.6e-15
            x[...] = x * (1 + eps * rng.standard_normal(x.shape))
    return xs


def _array_args(xs):
    return [x for x in xs if isinstance(x, np.ndarray)]


class Expected:
    """NumPy's outcome for one input set: result and final arguments, or the exception; and
    the noise probe of both (computed lazily)."""

    def __init__(self, f_np, prog, call):
        self.initial = _array_args(gen.make_inputs(prog, call))
        self.args = gen.make_inputs(prog, call)
        self.exc = None
        try:
            self.out = _numpy_call(f_np, self.args)
        except Exception as e:                  # noqa: BLE001 - NumPy decides
            self.exc = e
        self._noise, self._f, self._prog, self._call = None, f_np, prog, call

    def noise(self, part):
        """``part`` 0: per result leaf; 1: per argument array."""
        def probe():
            if self._noise is None:
                res = [np.zeros(v.shape) for v in leaves(self.out)]
                arg = [np.zeros(v.shape) for v in _array_args(self.args)]
                for s in (1, 2):
                    xs = _perturbed(self._prog, self._call, self._prog.seed + s)
                    try:
                        out = _numpy_call(self._f, xs)
                    except Exception:            # noqa: BLE001
                        self._noise = (None, None)
                        break
                    for acc, got, want in ((res, leaves(out), leaves(self.out)),
                                           (arg, _array_args(xs), _array_args(self.args))):
                        for k, (u, v) in enumerate(zip(got, want)):
                            with np.errstate(all="ignore"):
                                d = np.abs(u.astype(np.complex128) - v.astype(np.complex128))
                            acc[k] = np.fmax(acc[k], d)
                else:
                    self._noise = (res, arg)
            return self._noise[part]
        return probe


def _tolerance(prog):
    f32 = {"float32", "complex64"} & ({a.dtype for a in prog.args} |
                                      {s.dtype for s in prog.stmts})
    f32 = f32 or any("float32" in ln or "complex64" in ln for s in prog.stmts for ln in s.lines)
    return 1e-4 if f32 else None


def _check_call(fun, exp, prog, call, label, tol, mag, held, static_exc=None):
    """One traced call against NumPy's outcome ``exp``; raises Finding (refusals included, as
    class ``refusal``/``expected``). ``static_exc``: NumPy's error on the first inputs. When
    NumPy raises on both input sets, tracejit may report the first inputs' error where NumPy
    hits a value-dependent one earlier on the new inputs (an index out of range before a
    write into a read-only view): tracejit finds the static error while tracing, before any
    run-time check runs (fuzz 12001 #880); both are errors, not a finding."""
    args = gen.make_inputs(prog, call)
    try:
        out = fun(*args)
    except Exception as e:                      # noqa: BLE001 - classified below
        if exp.exc is not None:
            if _compatible(e, exp.exc) or static_exc is not None and _compatible(e, static_exc):
                return
            raise Finding("error-mismatch", label, f"NumPy raises {type(exp.exc).__name__}: "
                          f"{exp.exc}; tracejit raises {type(e).__name__}: {e}"[:1500],
                          f"{label.split(':')[0]}: {type(exp.exc).__name__} vs "
                          f"{type(e).__name__}") from e
        if isinstance(e, (errors.TracerError, NotImplementedError)) and \
                not isinstance(e, errors.CompilerError):
            expected = isinstance(e, errors.InputError) and "C-contiguous" in str(e) and \
                any(isinstance(x, np.ndarray) and not x.flags.c_contiguous for x in args)
            raise Finding("expected" if expected else "refusal", label, refusal_key(e)) from e
        raise Finding("internal", label, "".join(traceback.format_exception(e))[-1500:],
                      exc_signature(e)) from e
    if exp.exc is not None:
        raise Finding("missing-error", label, f"NumPy raises {type(exp.exc).__name__}: "
                      f"{exp.exc}; tracejit returns {out!r}"[:1500],
                      f"{label.split(':')[0]}: missing {type(exp.exc).__name__}")
    names = ("tracejit", "NumPy")
    compare(out, exp.out, label, exp.noise(0), tol, mag, names=names)
    try:
        compare(_array_args(args), _array_args(exp.args), label, exp.noise(1), tol, mag,
                names=names, what="argument")
    except Finding as f:
        arg_names = [a.name for a, x in zip(prog.args, args) if isinstance(x, np.ndarray)]
        msg = re.sub(r"^argument (\d+)", lambda m: f"argument {arg_names[int(m.group(1))]}",
                     f.record["msg"])
        raise Finding("arg-mismatch", label, msg, f.record["sig"]) from None
    _check_aliasing(out, args, exp, label)
    held.append((out, _snapshot(out), label))


def _check_aliasing(out, args, exp, label):
    """A returned argument that NumPy wrote into is the caller's array (NumPy returns the same
    object); one NumPy did not write may be a copy."""
    if not isinstance(exp.out, tuple):
        return
    arrays = [(k, x) for k, x in enumerate(exp.args) if isinstance(x, np.ndarray)]
    for pos, o in enumerate(exp.out):
        for j, (k, x) in enumerate(arrays):
            if o is x and not np.array_equal(x, exp.initial[j], equal_nan=True):
                if out[pos] is not args[k]:
                    raise Finding("aliasing", label, f"result {pos} is argument {k} (written) "
                                  f"in NumPy; tracejit returns another array",
                                  f"{label.split(':')[0]}: aliasing")


def check_mutating(prog: gen.Program, opts=None) -> dict:
    """Every check for one mutating program; never raises. ``refusals``/``expected``: messages
    of clear tracejit errors where NumPy runs the program."""
    src = prog.source()
    ns_np, ns_tj = gen.np_namespace(), {"np": np, "tj": tj}
    exec(compile(gen.to_numpy_source(src), "<fuzz-np>", "exec"), ns_np)
    exec(compile(src, f"<fuzz {prog.seed}>", "exec"), ns_tj)
    result = {"findings": [], "unsupported": [], "refusals": [], "expected": []}
    tol = _tolerance(prog)
    first = Expected(ns_np["f"], prog, 0)
    mag = max([1e-3] + [float(np.max(np.abs(x[np.isfinite(x)]), initial=0))
                        for x in first.initial if x.dtype.kind in "fc"])
    expected = {0: first, 1: Expected(ns_np["f"], prog, 1)}
    run_backends(ns_tj["f"], prog, expected, tol, mag, result)
    return result


def run_backends(f, prog, expected, tol, mag, result) -> bool:
    """``tj.jit(f)`` on each backend against NumPy's outcomes ``expected`` (per input set),
    into ``result``; whether tracejit refused the program."""
    for backend in BACKENDS:
        fun = tj.jit(f, backend=backend)
        held = []
        try:
            for call, n_calls in ((0, 3), (1, 2)):
                for k in range(n_calls):
                    label = f"{backend}: {'new inputs ' if call else ''}call {k + 1}"
                    _check_call(fun, expected[call], prog, call, label, tol, mag, held,
                                expected[0].exc)
            for out, snap, when in held:
                if not oracle_same(out, snap):
                    raise Finding("held-corruption", backend, f"the result of {when}, held "
                                  f"by the caller, changed during later calls",
                                  f"{backend}: held result")
        except Finding as found:         # (not ``as f``: that would unbind the function)
            rec = found.record
            rec["sig"] = re.sub(r"(new inputs )?call \d+(: )?", "", rec["sig"])
            if rec["cls"] in ("refusal", "expected"):
                result["refusals" if rec["cls"] == "refusal" else "expected"].append(rec["msg"])
                return True                      # the other backend refuses alike
            result["findings"].append(rec)
    return False


def oracle_same(out, snap):
    now = _snapshot(out)
    return len(now) == len(snap) and all(
        a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        for a, b in zip(now, snap))
