"""The one configuration object. Environment variables are read here and nowhere else.

Attributes (all plain, settable at run time):
- ``backend``: "llvm" (default once available) or "interpret" (the NumPy oracle); env TRACEJIT_BACKEND.
- ``log_retraces``: log every retrace with the argument path that changed; env TRACEJIT_LOG_RETRACES.
- ``debug_nans``: raise at the first equation producing a NaN; env TRACEJIT_DEBUG_NANS.
- ``strong_zero_where``: a cotangent that is zero because where/select did not pick a branch stays
  zero through that branch's backward pass (0·inf = 0); False restores plain IEEE propagation.
- ``cache_size``: per-function LRU bound on compiled signatures; env TRACEJIT_CACHE_SIZE.
- ``cache_dir``: directory of the on-disk compile cache, or None; env TRACEJIT_CACHE_DIR.
- ``num_threads``: worker threads of compiled kernels; env TRACEJIT_NUM_THREADS.
- ``check_ir``: verify the IR after every pass (on under pytest); env TRACEJIT_CHECK_IR.
- ``print_after``: pass names after which the IR is printed to stderr; env TRACEJIT_PRINT_AFTER.
- ``max_while_iterations``: optional cap that makes a runaway while_loop raise instead of hang.
"""
from __future__ import annotations

import os
import sys


def _flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


class Config:
    def __init__(self):
        env = os.environ
        self.backend = env.get("TRACEJIT_BACKEND", "llvm")
        self.log_retraces = _flag("TRACEJIT_LOG_RETRACES")
        self.debug_nans = _flag("TRACEJIT_DEBUG_NANS")
        self.strong_zero_where = _flag("TRACEJIT_STRONG_ZERO_WHERE", True)
        self.cache_size = int(env.get("TRACEJIT_CACHE_SIZE", "64"))
        self.cache_dir = env.get("TRACEJIT_CACHE_DIR") or None
        self.num_threads = int(env.get("TRACEJIT_NUM_THREADS", "0")) or (os.cpu_count() or 1)
        self.check_ir = _flag("TRACEJIT_CHECK_IR", "pytest" in sys.modules)
        self.print_after = tuple(p for p in env.get("TRACEJIT_PRINT_AFTER", "").split(",") if p)
        self.max_while_iterations = int(env.get("TRACEJIT_MAX_WHILE_ITERATIONS", "0")) or None

    # Settings that change what a compiled function computes; assigning one of them drops the
    # native fast-path entries of every traced function (they were built for the old value).
    _AFFECTS_CODE = ("backend", "strong_zero_where", "debug_nans")

    def __setattr__(self, name, value):
        changed = name in self._AFFECTS_CODE and getattr(self, name, value) != value
        object.__setattr__(self, name, value)
        if changed:
            for callback in list(_on_code_change):
                callback()

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"tracejit.config({items})"


_on_code_change: list = []     # callbacks registered by tracejit.api
config = Config()
