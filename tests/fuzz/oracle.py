"""The oracles: run one program (and its transforms) on the llvm backend and on the interpreter.

``check_program(prog)`` returns a dict ``{"findings": [...], "unsupported": [...]}``. Each
finding is ``{"cls", "label", "msg", "sig"}``: ``cls`` is the failure class (see CLASSES),
``label`` says which function and which check (``grad: call 2``), ``sig`` is a short root-cause
signature used to group findings (exception type and innermost tracejit frame, or the check).

The interpreter (``tj.jit(f, backend="interpret")``) is the reference. Floating-point results
are compared with a tolerance relative to the magnitude of the result; an element beyond it is
forgiven only when the *interpreter itself* moves by a comparable amount when the inputs are
perturbed by a few ulps (``_noise``): that separates ill-conditioned programs (cancellation,
floor of a rounding-sensitive value) from wrong code without loosening every comparison.
"""
from __future__ import annotations

import os
import re
import traceback

import numpy as np

import tracejit as tj
from tracejit import errors
from tracejit.backend.engine import threads

from . import gen, rules
from .transforms import build_cases

CLASSES = ["mismatch", "internal", "crash", "hang", "deriv-mismatch", "vmap-mismatch",
           "nondeterminism", "input-mutation", "held-corruption",
           # mutating programs (oracle_mut.py), against NumPy
           "arg-mismatch", "aliasing", "missing-error", "error-mismatch"]
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-9, "complex128": 1e-9}
_TJ_DIR = os.path.dirname(tj.__file__)


class Finding(Exception):
    def __init__(self, cls, label, msg, sig=None):
        super().__init__(msg)
        self.record = {"cls": cls, "label": label, "msg": msg[:2000], "sig": sig or label}


def leaves(x):
    """Flatten tuples/lists/dicts/``Box``es of results into a list of NumPy arrays (None has
    no leaves)."""
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in leaves(x[k])]
    if x is None:
        return []
    if hasattr(x, "items") and isinstance(getattr(x, "items"), tuple):     # transforms.Box
        return leaves(x.items)
    return [np.asarray(x)]


def _snapshot(xs):
    return [np.array(v, copy=True) for v in leaves(xs)]


def _same_bits(a, b, nan_bits=True):
    """Bit-identical leaves; with ``nan_bits=False`` a NaN matches any NaN (the tiers promise
    NaN positions, not NaN sign/payload bits: LLVM does not preserve them through folding)."""
    if not nan_bits:
        a, b = _canonical_nans(a), _canonical_nans(b)
    return len(a) == len(b) and all(u.dtype == v.dtype and u.shape == v.shape and
                                    np.ascontiguousarray(u).tobytes() ==
                                    np.ascontiguousarray(v).tobytes() for u, v in zip(a, b))


def _canonical_nans(xs):
    """Each NaN (of a float, or either part of a complex) replaced by the default NaN."""
    out = []
    for x in xs:
        if x.dtype.kind in "fc":
            flat = np.ascontiguousarray(x).reshape(-1).view(x.real.dtype).copy()
            flat[np.isnan(flat)] = np.nan
            x = flat.view(x.dtype).reshape(x.shape)
        out.append(x)
    return out


def exc_signature(e: BaseException) -> str:
    """Exception type + innermost tracejit frame: findings with one root cause share it."""
    root = e.__cause__ if isinstance(e, getattr(errors, "CompilerError", ())) and \
        e.__cause__ is not None else e          # CompilerError wraps the real failure
    frames = [f for f in traceback.extract_tb(root.__traceback__)
              if f.filename.startswith(_TJ_DIR)]
    where = (f"{os.path.relpath(frames[-1].filename, os.path.dirname(_TJ_DIR))}:"
             f"{frames[-1].name}") if frames else "?"
    first = (str(e).splitlines() or [""])[0]
    first = re.sub(r"\d+", "N", first)[:80]
    name = type(e).__name__ + (f"({type(root).__name__})" if root is not e else "")
    return f"{name} at {where}: {first}"


def _first_line(e):
    return f"{type(e).__name__}: " + re.sub(r"\n\s+at .*", "", str(e)).split("\n")[0][:200]


# ---------------------------------------------------------------------------------------------
# value comparison

def compare(got, exp, where, noise=None, tol=None, mag=0.0, names=("llvm", "interpreter"),
            what="result"):
    """Raise Finding("mismatch") unless ``got`` matches ``exp`` (leaves of one call's result).
    ``noise()`` gives per-leaf arrays of the interpreter's own sensitivity, computed lazily;
    ``tol`` overrides the per-dtype tolerance (a float64 result computed through float32 is
    only float32-accurate); ``mag`` is the magnitude of the terms (the largest input), a floor
    for the absolute tolerance of results that cancel to ~0."""
    g, e = leaves(got), leaves(exp)
    if len(g) != len(e):
        raise Finding("mismatch", where, f"{len(g)} results, expected {len(e)}", where)
    noise_arrays = None
    for k, (a, b) in enumerate(zip(g, e)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise Finding("mismatch", where, f"{what} {k}: {a.dtype}{list(a.shape)}, {names[1]} "
                          f"gives {b.dtype}{list(b.shape)}", f"{where}: type")
        bad = _bad_elements(a, b, tol, mag)
        if not bad.any():
            continue
        if noise is not None:
            if noise_arrays is None:
                noise_arrays = noise()
            if noise_arrays is not None:
                nz = noise_arrays[k]
                with np.errstate(all="ignore"):
                    diff = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
                    forgiven = np.isfinite(nz) & (nz > 0) & (diff <= 50 * nz) | np.isnan(nz)
                bad &= ~forgiven
                if not bad.any():
                    continue
        i = tuple(int(j) for j in np.argwhere(bad)[0]) if bad.ndim else ()
        raise Finding("mismatch", where,
                      f"{what} {k} ({a.dtype}{list(a.shape)}): {int(bad.sum())} of {a.size} "
                      f"elements differ; first at {i}: {names[0]} {a[i]!r} vs {names[1]} "
                      f"{b[i]!r}",
                      f"{where}: value {a.dtype}")


def _bad_elements(a, b, tol=None, mag=0.0):
    if a.dtype.kind not in "fc":
        return a != b
    tol = max(TOL[str(a.dtype)], tol or 0.0)
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
        fin = np.isfinite(b64)
        scale = max(np.max(np.abs(b64[fin])) if fin.any() else 0.0, mag)
        err = np.abs(a64 - b64)
        bad = ~(err <= tol * np.abs(b64) + tol * scale + 1e-300)
        nan_a, nan_b = np.isnan(a64), np.isnan(b64)
        inf_same = (a64 == b64)                    # inf == inf of the same sign
        bad = np.where(nan_b | nan_a, nan_a != nan_b, bad & ~inf_same)
    return bad


def _perturbed(inputs, seed):
    """Inputs scaled by 1 + ~16 ulps (float leaves only, in tuples/dicts too; ints cannot be
    perturbed)."""
    rng = np.random.default_rng(seed)

    def one(x):
        if isinstance(x, (float, complex)) and not isinstance(x, bool):
            return x * (1 + 3.6e-15 * rng.standard_normal())
        if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
            eps = 2e-6 if x.dtype in (np.float32, np.complex64) else 3.6e-15
            return (x * (1 + eps * rng.standard_normal(x.shape))).astype(x.dtype)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(one(v) for v in x))
        if isinstance(x, (tuple, list)):
            return type(x)(one(v) for v in x)
        if hasattr(x, "items") and isinstance(getattr(x, "items"), tuple):   # transforms.Box
            return type(x)(one(v) for v in x.items)
        if isinstance(x, dict):
            return {k: one(v) for k, v in x.items()}
        return x
    return [one(x) for x in inputs]


def noise_of(fi, inputs, exp, seed=0):
    """Per-leaf |interpreter(perturbed inputs) - interpreter(inputs)|, max over two probes."""
    def noise():
        e = leaves(exp)
        acc = [np.zeros(v.shape) for v in e]
        for s in (seed, seed + 1):
            try:
                p = leaves(fi(*_perturbed(inputs, s)))
            except Exception:
                return None
            for k, (u, v) in enumerate(zip(p, e)):
                with np.errstate(all="ignore"):
                    d = np.abs(u.astype(np.complex128) - v.astype(np.complex128))
                    d = np.where(np.isnan(u) != np.isnan(v), np.nan, d)
                acc[k] = np.fmax(acc[k], d) if not np.isnan(d).any() else np.where(
                    np.isnan(d), np.nan, np.fmax(acc[k], d))
        return acc
    return noise


# ---------------------------------------------------------------------------------------------
# one function under every check

def _call(fun, args, label, case=None):
    try:
        return case.call(fun, args) if case is not None else fun(*args)
    except Finding:
        raise
    except Exception as e:               # noqa: BLE001 - every exception is a finding here
        raise Finding("internal", label, "".join(traceback.format_exception(e))[-1500:],
                      exc_signature(e)) from e


def check_case(case, prog, opts):
    """All llvm-vs-interpreter checks for one function: three calls with the first inputs
    (Python path, then the native entry once the signature was called twice), two with new
    inputs, inputs never mutated, held results never changed, threads and tiers bit-identical.
    Raises Finding; returns the llvm results of the first call."""
    label, fun, in1, in2 = case.label, case.fun, case.in1, case.in2
    fi = tj.jit(fun, backend="interpret", **case.jit_kw)
    try:
        exp1 = case.call(fi, in1)
    except (errors.TracerError, NotImplementedError) as e:
        # a clear refusal ("... is not supported"); listed so the generator can avoid it
        raise Finding("unsupported", label, _first_line(e))
    except Exception as e:               # noqa: BLE001
        if label != "f" and _numpy_error(e):
            # a transform's inputs the program was not validated on (a vmap's batch: NumPy
            # raises for one example, e.g. max of an empty selection): llvm must raise alike
            _raises_alike(tj.jit(fun, backend="llvm", **case.jit_kw), in1, e,
                          f"{label}: error of an example", case)
            return None
        raise Finding("internal", f"{label}: interpreter", "".join(
            traceback.format_exception(e))[-1500:], "interpreter " + exc_signature(e)) from e
    fl = tj.jit(fun, backend="llvm", **case.jit_kw)
    tol = 1e-4 if {"float32", "complex64"} & ({a.dtype for a in prog.args} |
                                              {s.dtype for s in prog.stmts}) else None
    tol = tol or (1e-4 if any("float32" in ln or "complex64" in ln
                              for s in prog.stmts for ln in s.lines) else None)
    mag = max([1e-3] + [float(np.max(np.abs(x[np.isfinite(x)]), initial=0)) for x in
                        leaves(in1) if x.dtype.kind in "fc"])
    saved_in = [_snapshot(in1), _snapshot(in2)]
    held = []
    noise1 = noise_of(lambda *a: case.call(fi, a), in1, exp1, prog.seed)
    for call in range(3):
        r = _call(fl, in1, f"{label}: call {call + 1}", case)
        compare(r, exp1, f"{label}: call {call + 1}", noise1, tol, mag)
        held.append((r, _snapshot(r), f"call {call + 1}"))
    try:
        exp2 = case.call(fi, in2)
    except Exception as e:               # noqa: BLE001
        # invalid for the new inputs (programs are validated on the first ones only: a Python
        # int argument that turns negative next to an unsigned array is NumPy's OverflowError,
        # fuzz sample 2024 #615): llvm must raise alike
        _raises_alike(fl, in2, e, f"{label}: new inputs", case)
        exp2 = None
    if exp2 is not None:
        noise2 = noise_of(lambda *a: case.call(fi, a), in2, exp2, prog.seed + 2)
        for call in range(2):
            r = _call(fl, in2, f"{label}: new inputs call {call + 1}", case)
            compare(r, exp2, f"{label}: new inputs call {call + 1}", noise2, tol, mag)
            held.append((r, _snapshot(r), f"new inputs call {call + 1}"))
    for k, (xs, snap) in enumerate(zip((in1, in2), saved_in)):
        if not _same_bits(_snapshot(xs), snap):
            raise Finding("input-mutation", label, f"inputs {k + 1} changed by a call", label)
    if opts.get("threads_tiers"):
        _threads_and_tiers(fl, in1, label, held, case)
    for r, snap, when in held:
        if not _same_bits(_snapshot(r), snap):
            raise Finding("held-corruption", label, f"the result of {when}, held by the "
                          f"caller, changed during later calls", f"{label}: held result")
    if case.reference is not None:          # e.g. vmap against a loop of the interpreter
        case.reference(exp1, tol, mag)
    return exp1


def _numpy_error(e) -> bool:
    """Whether ``e`` is a run-time check's error, NumPy's exception for a value (``check_p``:
    ``tracejit.ops.elementwise.ERRORS``)."""
    from tracejit.ops.elementwise import ERRORS
    return (type(e), str(e)) in set(ERRORS.values())


def _threads_and_tiers(fl, args, label, held, case):
    """Bit-identity for 1 vs 2 threads, and base vs hot tier (tier-up forced)."""
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(1)
        one = _call(fl, args, f"{label}: 1 thread", case)
        threads.set_num_threads(2)
        two = _call(fl, args, f"{label}: 2 threads", case)
        held.append((one, _snapshot(one), "1-thread call"))
        if not _same_bits(leaves(one), leaves(two)):
            raise Finding("nondeterminism", label, "1 thread and 2 threads give different "
                          "bits", f"{label}: threads")
        try:
            exe = case.call(fl.lower, args).executable
        except Exception as e:          # noqa: BLE001
            raise Finding("internal", f"{label}: lower", str(e), exc_signature(e)) from e
        if getattr(exe, "_tier_cell", None) is not None and exe.tier == "base":
            if exe.tier_up():
                for n in (1, 2):
                    threads.set_num_threads(n)
                    for call in range(2):
                        hot = _call(fl, args, f"{label}: hot tier", case)
                        if not _same_bits(leaves(one), leaves(hot), nan_bits=False):
                            raise Finding("nondeterminism", label, f"hot tier ({n} threads) "
                                          f"differs from the base tier", f"{label}: tiers")
    finally:
        threads.set_num_threads(before)


def _raises_alike(fl, inputs, exc, label, case):
    """The llvm function ``fl`` raises on ``inputs`` an exception of ``exc``'s class (which the
    interpreter raised there); a Finding otherwise."""
    try:
        out = case.call(fl, inputs)
    except Exception as e:               # noqa: BLE001
        if type(e) is type(exc):
            return
        raise Finding("internal", label, f"the interpreter raises {type(exc).__name__}: {exc}; "
                      f"llvm raises {type(e).__name__}: {e}"[:1500], exc_signature(e)) from e
    raise Finding("mismatch", label, f"the interpreter raises {type(exc).__name__}: {exc}; "
                  f"llvm returns {out!r}"[:1500], f"{label}: missing error")


def check_program(prog: gen.Program, opts=None) -> dict:
    """Every oracle for one program; never raises (except for crashes, which kill the worker)."""
    if prog.control:
        from .oracle_ctl import check_control
        return check_control(prog, opts)
    if prog.mutating:
        from .oracle_mut import check_mutating
        return check_mutating(prog, opts)
    opts = dict(opts or {})
    if "threads_tiers" not in opts:
        opts["threads_tiers"] = prog.big or np.random.default_rng([prog.seed, 3]).random() < 0.1
    findings, unsupported = [], []
    ns = {"np": np, "tj": tj, "fz": rules.TRACED}
    exec(compile(prog.source(), f"<fuzz {prog.seed}>", "exec"), ns)
    try:
        cases = build_cases(prog, ns["f"])
    except Exception as e:                 # noqa: BLE001 - a bug in the fuzzer itself
        return {"findings": [], "unsupported": [], "fuzzer_error": repr(e)}
    for case in cases:
        try:
            if check_case(case, prog, opts) is None:
                continue                     # the inputs are invalid for this case
            if case.fd_check is not None:
                case.fd_check()
        except Finding as f:
            if f.record["cls"] == "unsupported":
                unsupported.append(f.record["msg"])
                if case.label == "f":
                    break
            else:
                findings.append(f.record)
    return {"findings": findings, "unsupported": unsupported}
