"""Fork safety: every process-wide lock of tracejit, taken by the forking thread around ``os.fork``.

A child process inherits each lock in the state it had at the fork, held by threads the child
does not have; a child needing such a lock waits forever. So the forking thread takes every
registered lock before forking (in rank order, outermost first), and releases them after it, in
the parent and in the child; then the child's hooks reset per-process state (worker threads,
queues).

One ``os.register_at_fork`` handler serves the whole package, registered once at import. Modules
imported later, possibly by another thread while a fork is under way, only add to this registry:
the handler acquires a snapshot of the registry and checks that it did not change meanwhile
(else it releases and retries), and releases exactly what it acquired. (Separate
``register_at_fork`` calls made during a fork ran an ``after`` handler whose ``before`` had not
run: it released a lock that was not held, its exception skipped the other releases, and about
1 child in 15 forked during another thread's first trace deadlocked.)
"""
from __future__ import annotations

import os
import sys
import threading

# ranks: outermost first; a lock may be taken while holding only locks of lower rank
TABLES = 0        # api: native dispatch tables (held around compiles)
CACHES = 1        # api: signature caches
HOT = 2           # backend tiers: the running hot compile
BACKEND = 3       # backend module locks (libraries, loaded modules, pools), registration order
ENGINE = 4        # the JIT engine's lock
LLVM = 5          # llvmlite's own lock around the LLVM C API
LEAF = 6          # leaf locks (statistics, interception switches, memo tables, gc deferral)

_registry_lock = threading.Lock()       # held only to change or read the registry (and at fork)
_locks: list = []                        # (rank, sequence, lock)
_child_hooks: list = []
_held: list = []


def register(lock, rank: int) -> None:
    """Have ``os.fork`` take ``lock`` (ranked ``rank``, then by registration) before forking and
    release it after, in the parent and the child. ``lock`` may also be a function returning
    the lock or None, asked at each fork (a lock of a module imported later)."""
    with _registry_lock:
        _locks.append((rank, len(_locks), lock))


def in_child(hook) -> None:
    """Call ``hook()`` in a forked child, after the locks are released (registration order)."""
    with _registry_lock:
        _child_hooks.append(hook)


def _llvmlite_lock():
    """llvmlite's lock around the LLVM C API (``ffi.lib._lock``: a ``_LLVMLock`` wrapping an
    RLock; private, hence the fallback to none), once llvmlite is imported (a thread importing
    tracejit's backend holds it while llvmlite initialises LLVM: a child forked then hung)."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    return getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)


def _resolve():
    entries = sorted(_locks, key=lambda e: e[:2])
    locks = [lock() if callable(lock) and not hasattr(lock, "acquire") else lock
             for _, _, lock in entries]
    return [lock for lock in locks if lock is not None]


def _before():
    global _held
    while True:
        with _registry_lock:
            snapshot = _resolve()
        for lock in snapshot:
            lock.acquire()
        _registry_lock.acquire()         # held across the fork: no registration half done
        now = _resolve()
        if len(now) == len(snapshot) and all(a is b for a, b in zip(now, snapshot)):
            _held = snapshot
            return
        _registry_lock.release()         # a lock was registered meanwhile: take it too
        for lock in reversed(snapshot):
            lock.release()


def _release():
    global _held
    held, _held = _held, []
    for lock in reversed(held):
        lock.release()
    _registry_lock.release()


def _after_in_child():
    _release()
    for hook in list(_child_hooks):
        hook()


register(_llvmlite_lock, LLVM)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_release, after_in_child=_after_in_child)
