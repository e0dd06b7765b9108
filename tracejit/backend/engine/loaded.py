"""Loaded graph modules: the machine code of each compiled module (a ``jit.Code``) and its
constant table, shared by the executables of the same content name, freed when the last goes.

Invariants:
- one ``Module`` per content name (the hash of the module's IR and constants); an executable
  ``acquire``s the names it runs (base and hot tier) and ``release``s them when it is
  collected (a ``weakref.finalize``): evicted from the per-function cache, ``clear_cache()``,
  or dropped from a dispatch table, whichever comes last;
- a module whose users are gone is closed (engine, code, data, constant table freed) at once,
  unless a native entry of it may run without the GIL (``gil_free``): another thread could be
  inside its code while the last reference drops, so it is closed only ``GRACE_SECONDS`` later;
- ``release`` may run inside the garbage collector, on any thread, at any point (even while
  this thread holds ``_lock`` or LLVM's lock): it only queues the names; they are processed
  (``drain``) when ``_lock`` can be taken without waiting: then, and before every compile;
- nothing here is on the call path: executables keep the addresses they call.
"""
from __future__ import annotations

import collections
import ctypes
import threading
import time

import numpy as np

from . import jit

GRACE_SECONDS = 10.0
_lock = threading.Lock()
jit.register_fork_lock(_lock)
_modules: dict = {}                       # content name -> Module
_released: collections.deque = collections.deque()     # names whose user went (thread-safe)
_retired: list = []                       # (time to close, Module) of gil_free modules


class Module:
    """A loaded module: its ``jit.Code``, its constant table (the pointer array and the arrays
    it points to) and its number of users."""

    def __init__(self, code):
        self.code, self.table, self.users, self.gil_free = code, None, 0, False

    def fill_table(self, global_name, arrays) -> None:
        """Point the module's ``@..._consts`` global at a pointer array of ``arrays`` (kept
        alive as long as the module's code)."""
        if not global_name:
            return
        keep = [np.ascontiguousarray(a) for a in arrays]
        table = (ctypes.c_void_p * len(keep))(*[a.ctypes.data for a in keep])
        address = jit.global_address(global_name, self.code)
        if not address:
            raise RuntimeError(f"tracejit: constant table {global_name!r} not found after "
                               "loading")
        ctypes.c_void_p.from_address(address).value = ctypes.addressof(table)
        self.table = (table, keep)


def acquire(name: str, build) -> Module:
    """The loaded module ``name``, with one more user: the one loaded already, else
    ``build(Module)`` compiles and fills a new one (under ``_lock``: the same graph is not
    compiled twice at once). A failed build frees what it loaded."""
    drain()
    with _lock:
        module = _modules.get(name)
        if module is None:
            module = Module(jit.Code())
            try:
                build(module)
            except BaseException:
                module.code.close()
                raise
            _modules[name] = module
        module.users += 1
        return module


def lookup(name: str):
    """The loaded module ``name`` with one more user, or None (not loaded)."""
    with _lock:
        module = _modules.get(name)
        if module is not None:
            module.users += 1
        return module


def add(name: str, module: Module) -> Module:
    """Register a module built without ``_lock`` (the hot tier) with one user; when another
    thread registered the name meanwhile, ours is freed and theirs is used."""
    with _lock:
        existing = _modules.get(name)
        if existing is None:
            _modules[name] = existing = module
        elif existing is not module:
            module.code.close()
        existing.users += 1
        return existing


def release(names) -> None:
    """The user of the modules ``names`` is gone (safe from a finalizer: see the module
    docstring)."""
    _released.extend(names)
    drain(wait=False)


def drain(wait: bool = True) -> None:
    """Process released names: close the modules left without users (``gil_free`` ones after
    their grace); ``wait=False``: only if ``_lock`` is free."""
    if not _lock.acquire(blocking=wait):
        return
    try:
        while _released:
            name = _released.popleft()
            module = _modules.get(name)
            if module is None:
                continue
            module.users -= 1
            if module.users <= 0:
                del _modules[name]
                if module.gil_free:
                    _retired.append((time.monotonic() + GRACE_SECONDS, module))
                else:
                    module.code.close()
        now = time.monotonic()
        while _retired and _retired[0][0] <= now:
            _retired.pop(0)[1].code.close()
    finally:
        _lock.release()


def count() -> int:
    """Modules loaded now (tests)."""
    with _lock:
        return len(_modules)
