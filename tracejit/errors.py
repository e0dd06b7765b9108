"""Errors that point at the user's code.

Every error raised while tracing names the first stack frame outside the tracejit package (the
user's file:line), the operation, the shapes/dtypes involved and what to do instead.
"""
from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = None


_internal: dict = {}       # filename -> bool (every equation asks; abspath is the cost)


def _is_internal(filename: str) -> bool:
    known = _internal.get(filename)
    if known is not None:
        return known
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy
        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    path = os.path.abspath(filename)
    known = _internal[filename] = path.startswith(_PACKAGE_DIR + os.sep) or \
        path.startswith(_NUMPY_DIR + os.sep) or filename.startswith("<frozen") or \
        "/_pytest/" in filename or "/pluggy/" in filename
    return known


# code object -> its file's base name, or "" when internal: one dict probe per frame on the
# hot path (every traced equation)
_internal_code: dict = {}


def user_location() -> str | None:
    """'file.py:12' of the innermost frame outside tracejit and numpy, or None."""
    frame = sys._getframe(1)
    cache = _internal_code
    while frame is not None:
        code = frame.f_code
        name = cache.get(code)
        if name is None:
            if len(cache) > 4096:            # code made by exec/compile must not pile up
                cache.clear()
            name = cache[code] = "" if _is_internal(code.co_filename) else \
                os.path.basename(code.co_filename)
        if name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def user_frame_full() -> str | None:
    """Like user_location but with the full path, for messages."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _with_location(message: str) -> str:
    loc = user_frame_full()
    return f"{message}\n  at {loc}" if loc else message


class TracerError(Exception):
    """Base class of tracejit's user-facing errors."""


class TracerWarning(UserWarning):
    """Code that traces but probably does not mean what it says once compiled (a NumPy random
    draw while tracing is frozen into the compiled function)."""


class ConcretizationError(TracerError, TypeError):
    """A traced value was used where a concrete Python value is needed (if, bool, float, shape)."""

    def __init__(self, message):
        super().__init__(_with_location(message))


class ShapeError(TracerError, ValueError):
    """Shapes do not fit the operation."""

    def __init__(self, message):
        super().__init__(_with_location(message))


class DTypeError(TracerError, TypeError):
    """An unsupported or mismatched dtype."""

    def __init__(self, message):
        super().__init__(_with_location(message))


class UnsupportedError(TracerError, NotImplementedError):
    """A NumPy function or feature tracejit does not provide."""

    def __init__(self, message):
        super().__init__(_with_location(message))


class InputError(TracerError, TypeError):
    """A bad argument to a traced or transformed function."""

    def __init__(self, message):
        super().__init__(_with_location(message))


class NaNError(TracerError, FloatingPointError):
    """Raised under ``config.debug_nans`` at the first equation that produced a NaN."""


def numpy_shape_from_tracer(exc: BaseException) -> "ConcretizationError | None":
    """NumPy's creation functions (``np.zeros(n)``, ``np.ones(n)``, ``np.full(n, v)``) turn a
    traced ``n`` into their own bare TypeError (they call ``__index__`` and discard its
    ConcretizationError). Recognise it and say what happened, at the user's line."""
    text = str(exc)
    if not isinstance(exc, TypeError) or isinstance(exc, TracerError) or "Tracer<" not in text \
            or "integer" not in text:
        return None
    return _at_user_line(exc, "Using a traced value as a shape (e.g. np.zeros(n) with a traced "
                         "n) needs a concrete value, but it is only known when the compiled "
                         "function runs. Shapes must be static: a Python int argument n is "
                         "(each value traces once); one computed from traced arrays is not: "
                         f"pass it with static_argnums / static_argnames. (NumPy said: {text})")


def numpy_grid_from_tracer(exc: BaseException) -> "ConcretizationError | None":
    """``np.mgrid[0:n]`` / ``np.ogrid[0:n]`` with a traced bound: NumPy's ``nd_grid`` catches
    the ConcretizationError of its size computation and falls into a path that fails with an
    unrelated error (``'tuple' object has no attribute 'step'``, or a conversion to an array).
    Recognise a failure inside ``nd_grid.__getitem__`` and say what happened."""
    tb, grid = exc.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "__getitem__" and \
                os.path.basename(code.co_filename) in ("_index_tricks_impl.py", "index_tricks.py"):
            owner = tb.tb_frame.f_locals.get("self")
            if hasattr(owner, "sparse"):
                grid = "np.ogrid" if owner.sparse else "np.mgrid"
        tb = tb.tb_next
    if grid is None:
        return None
    return _at_user_line(exc, f"{grid}[start:stop:step] with a traced bound needs concrete "
                         "bounds (they fix the grid's shape), but the value is only known when "
                         "the compiled function runs. A Python int argument is concrete (each "
                         "value traces once); for one computed from traced arrays, pass it with "
                         "static_argnums, or build the grid from np.arange of a static length "
                         "and a mask." + ("" if isinstance(exc, TracerError) else
                                          f" (NumPy said: {type(exc).__name__}: {exc})"))


def _at_user_line(exc: BaseException, message: str) -> "ConcretizationError":
    """A ConcretizationError with ``message`` at the innermost frame of the user's code in the
    traceback of ``exc``."""
    where, tb = None, exc.__traceback__
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    err = ConcretizationError.__new__(ConcretizationError)
    Exception.__init__(err, message + (f"\n  at {where}" if where else ""))
    return err


class CompilerError(RuntimeError):
    """A bug in tracejit itself: an internal failure in a compiler stage (simplification, a
    transform, fusion, buffer planning, LLVM emission or compilation). The message names the
    stage and the primitive and gives the path of a file holding the offending graph and the
    traceback, ready for a bug report. Never a fallback to another backend."""
