"""The one configuration object. Environment variables are read here and nowhere else.

Attributes (all plain, settable at run time):
- ``backend``: "llvm" (default once available) or "interpret" (the NumPy oracle); env TRACEJIT_BACKEND.
- ``log_retraces``: log every retrace with the argument path that changed; env TRACEJIT_LOG_RETRACES.
- ``debug_nans``: raise at the first equation producing a NaN; env TRACEJIT_DEBUG_NANS.
- ``strong_zero_where``: a cotangent that is zero because where/select did not pick a branch stays
  zero through that branch's backward pass (0·inf = 0); False restores plain IEEE propagation.
- ``cache_size``: per-function LRU bound on compiled signatures; env TRACEJIT_CACHE_SIZE.
- ``cache_dir``: directory of the on-disk compile cache of user functions, or None (the default:
  user code is cached only when asked); env TRACEJIT_CACHE_DIR.
- ``library_cache_dir``: directory where tracejit's own native library code (vector math, the
  thread pool) is kept as object code keyed by CPU, versions and source hash, so a new process
  loads it in ~1 ms instead of compiling it; default ``$XDG_CACHE_HOME/tracejit`` (or
  ``~/.cache/tracejit``); env TRACEJIT_LIBRARY_CACHE_DIR, where an empty value or "0" disables.
- ``num_threads``: threads (the caller included) a compiled kernel may use; default all usable
  cores; env TRACEJIT_NUM_THREADS. Assigning it takes effect at once, also for functions already
  compiled (the native pool reads the current value on every parallel call). Results do not
  depend on it: elementwise loops split into disjoint ranges, and reductions always combine the
  same fixed chunks in the same order, whatever the thread count.
- ``check_ir``: verify the IR after every pass (on under pytest); env TRACEJIT_CHECK_IR.
- ``print_after``: pass names after which the IR is printed to stderr; env TRACEJIT_PRINT_AFTER.
- ``max_while_iterations``: optional cap that makes a runaway while_loop raise instead of hang
  (also inside native kernels, which read the current value on every loop); env
  TRACEJIT_MAX_WHILE_ITERATIONS.
- ``reuse_outputs``: a traced function's native entry hands out again a result array of at
  least 64 KiB that nobody references any more (it keeps its last 2 per large output and
  signature), instead of allocating fresh memory that the OS must fault in again; results still
  held by the caller are never touched. env TRACEJIT_REUSE_OUTPUTS (default on).
- ``bug_report_dir``: where a ``CompilerError`` (a bug in tracejit) writes the offending graph
  and traceback; default ``<tempdir>/tracejit-bugs``; env TRACEJIT_BUG_REPORT_DIR.
- ``hot_tier``: tier-up of hot, math-heavy kernels (default on; env TRACEJIT_HOT_TIER=0 turns it
  off). A signature is first compiled for a short compile (no optimisation pipeline, math
  functions called in a shared library); when its fused loops call transcendental functions
  (exp, tanh, log, sin...) and its calls have run about ``backend.executable.HOT_AFTER_NS`` of
  estimated native time, the same graph is compiled again in a background thread with the math
  bodies inlined and the O1 pipeline, and later calls switch to that kernel. Results are bit
  for bit the same in both tiers. Assigning False stops further tier-ups (kernels already
  switched stay switched); it is read when a signature is compiled and when it turns hot.

- ``roll_loops``: the last simplification pass rolls a chain of repeated copies of one body
  (an unrolled Python loop, its gradient's backward chain) into a ``scan``, so that compiling
  it costs one copy (``tracejit/transforms/roll.py``); results are bit for bit the same. env
  TRACEJIT_ROLL_LOOPS=0 turns it off.

- ``fold_product_scalars``: the llvm backend computes ``(s * A) @ B`` (and ``A @ (B / s)``,
  ``-A @ B``...) as ``s * (A @ B)`` with the scale in the product's epilogue, as BLAS's alpha
  does, instead of materialising the scaled operand: equal up to the product's rounding, not
  bit for bit (and it can overflow where the scaled operand would not).
  TRACEJIT_FOLD_PRODUCT_SCALARS=0 keeps NumPy's order of operations.

- ``autograph``: when a trace fails because Python branched on a traced value (``if``,
  ``while``, ``and``/``or``/``not``, ``a if c else b``), trace again with the user's functions
  converted to graph control flow (``tracejit/autograph.py``); env TRACEJIT_AUTOGRAPH=0 turns
  it off.

Settings that can take a bad value are validated on assignment (``_VALIDATORS``): a bad value
raises TypeError or ValueError and leaves the old value (and the native mirrors) unchanged; a
bad environment variable is reported with a warning and the default is used instead.
"""
from __future__ import annotations

import operator
import os
import sys
import warnings


def _flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _library_cache_dir(env):
    value = env.get("TRACEJIT_LIBRARY_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in ("", "0", "off", "false", "no") else value
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tracejit")


def _int(name, value, low, high=2 ** 63 - 1):
    if isinstance(value, (bool, float)):
        raise TypeError(f"config.{name} must be an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"config.{name} must be an integer, got {type(value).__name__} "
                        f"{value!r:.60}") from None
    if n < low:
        raise ValueError(f"config.{name} must be at least {low}, got {n}")
    if n > high:
        raise ValueError(f"config.{name} must be at most {high}, got {n}")
    return n


def _backend(value):
    if value not in ("llvm", "interpret"):
        raise ValueError(f"config.backend must be 'llvm' or 'interpret', got {value!r:.60}")
    return value


def _while_limit(value):
    # None or 0: no cap (what TRACEJIT_MAX_WHILE_ITERATIONS=0 means too)
    if value is None:
        return None
    n = _int("max_while_iterations", value, 0)
    return n or None


def _optional_dir(name):
    def check(value):
        if value is None:
            return None
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"config.{name} must be a path or None, got {value!r:.60}")
        return os.fspath(value) or None
    return check


# name -> function(value) returning the value to store, or raising TypeError / ValueError
_VALIDATORS = {
    "backend": _backend,
    "cache_size": lambda v: _int("cache_size", v, 1),
    "num_threads": lambda v: _int("num_threads", v, 1),
    "max_while_iterations": _while_limit,
    "cache_dir": _optional_dir("cache_dir"),
    "library_cache_dir": _optional_dir("library_cache_dir"),
}


class Config:
    def __init__(self):
        env = os.environ
        self._from_env("backend", env.get("TRACEJIT_BACKEND"), "llvm")
        self.log_retraces = _flag("TRACEJIT_LOG_RETRACES")
        self.debug_nans = _flag("TRACEJIT_DEBUG_NANS")
        self.strong_zero_where = _flag("TRACEJIT_STRONG_ZERO_WHERE", True)
        self._from_env("cache_size", env.get("TRACEJIT_CACHE_SIZE"), 64, int)
        self.cache_dir = env.get("TRACEJIT_CACHE_DIR") or None
        self.library_cache_dir = _library_cache_dir(env)
        threads = env.get("TRACEJIT_NUM_THREADS")
        self._from_env("num_threads", None if threads in (None, "", "0") else threads,
                       _usable_cores(), int)
        self.check_ir = _flag("TRACEJIT_CHECK_IR", "pytest" in sys.modules)
        self.print_after = tuple(p for p in env.get("TRACEJIT_PRINT_AFTER", "").split(",") if p)
        self._from_env("max_while_iterations", env.get("TRACEJIT_MAX_WHILE_ITERATIONS"), None,
                       int)
        self.reuse_outputs = _flag("TRACEJIT_REUSE_OUTPUTS", True)
        self.hot_tier = _flag("TRACEJIT_HOT_TIER", True)
        self.autograph = _flag("TRACEJIT_AUTOGRAPH", True)
        self.roll_loops = _flag("TRACEJIT_ROLL_LOOPS", True)
        self.fold_product_scalars = _flag("TRACEJIT_FOLD_PRODUCT_SCALARS", True)
        self.bug_report_dir = env.get("TRACEJIT_BUG_REPORT_DIR") or None

    # Settings that change what a compiled function computes; assigning one of them drops the
    # native fast-path entries of every traced function (they were built for the old value).
    _AFFECTS_CODE = ("backend", "strong_zero_where", "debug_nans", "fold_product_scalars")

    def _from_env(self, name, raw, default, parse=str):
        """Set ``name`` from an environment variable's text (None: unset), or to ``default``
        with a warning when the text is not a valid value."""
        if raw is not None:
            try:
                setattr(self, name, parse(raw.strip()))
                return
            except (TypeError, ValueError) as e:
                warnings.warn(f"tracejit: ignoring TRACEJIT_{name.upper()}={raw!r} ({e}); "
                              f"using {default!r}", RuntimeWarning, stacklevel=3)
        setattr(self, name, default)

    def __setattr__(self, name, value):
        check = _VALIDATORS.get(name)
        if check is not None:
            value = check(value)     # raises before anything changes
        changed = name in self._AFFECTS_CODE and getattr(self, name, value) != value
        object.__setattr__(self, name, value)
        if changed:
            for callback in list(_on_code_change):
                callback()
        for callback in list(_on_set.get(name, ())):
            callback(value)

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"tracejit.config({items})"


_on_code_change: list = []     # callbacks registered by tracejit.api
_on_set: dict = {}             # name -> callbacks(value) run on assignment (the native runtime
                               # mirrors num_threads and max_while_iterations this way)


def on_set(name, callback) -> None:
    """Run ``callback(value)`` whenever ``config.<name>`` is assigned (used by the backend to
    push run-time settings into native code without config importing the backend)."""
    _on_set.setdefault(name, []).append(callback)
config = Config()
