"""Object code as data, without LLVM: content hashes, the symbols a module defines, its disk-cache
entries (``diskcache.py`` decides what is trusted), and the hand-over of authenticated object
code between this user's processes (artifacts, pickled functions: ``object_code``).

``jit.py``, the one ``llvmlite.binding`` user, compiles and loads; this module only names,
finds, records and authenticates the bytes. Invariant: an object is handed over only under a
MAC of a trusted cache directory's secret (``seal_object`` / ``authentic_object``), and served
only for the exact cache key and symbols it was recorded with (``handed_over``).
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import NamedTuple

from ...config import config
from . import diskcache

try:    # the BLAKE2 that hashlib re-exports; importing hashlib would also load OpenSSL (~2.5 ms)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - a Python without the builtin module
    from hashlib import blake2b as _blake2b

_handover = threading.local()     # this thread's object_code block: (record, trusted objects)


def handover_state():
    """This thread's ``object_code`` block: (record, trusted objects), or None outside one."""
    return getattr(_handover, "state", None)


def new_hash(data: bytes = b""):
    """A 32-byte content hash (BLAKE2b): cache keys, entry checksums, content-derived names."""
    return _blake2b(data, digest_size=32)


@contextlib.contextmanager
def object_code(trusted=None):
    """Record the object code of the cacheable modules compiled or loaded on this thread inside
    the block: yields a list that gets ``(key, symbols, opt, object bytes)`` per module.
    ``trusted`` (cache key -> (symbols, object bytes), authenticated by the caller) is served
    instead of compiling a module with that key and exactly those symbols."""
    previous = getattr(_handover, "state", None)
    record: list = []
    _handover.state = (record, dict(trusted or {}))
    try:
        yield record
    finally:
        _handover.state = previous


def _handover_dir():
    """The trusted directory whose secret authenticates object code handed between this
    user's processes: ``config.cache_dir``, else ``config.library_cache_dir``."""
    return config.cache_dir or config.library_cache_dir or None


def seal_object(key: str, symbols, obj: bytes):
    """The MAC (hex) under which ``obj`` may be handed to this user's processes, or None (no
    trusted cache directory: the object cannot be authenticated, so it is not handed over)."""
    return diskcache.seal(_handover_dir(), key, symbols, obj)


def authentic_object(key: str, symbols, obj: bytes, mac) -> bool:
    """Whether ``mac`` is this user's MAC of ``obj`` for ``key`` and ``symbols``."""
    directory = _handover_dir()
    return bool(directory) and diskcache.authentic(directory, key, symbols, obj, mac)


def handed_over(state, key, symbols):
    """The trusted object for ``key`` / ``symbols`` in this thread's object_code block."""
    if state is None:
        return None
    found = state[1].get(key)
    return found[1] if found is not None and sorted(found[0]) == sorted(symbols) else None


_DEFINED = re.compile(r'^define [^@]*@"?([^"(\s]+)"?\(|^@"?([^"\s]+)"? = (?!external )', re.M)


def defined_symbols(llvm_ir_text: str) -> list:
    """Names of the functions and globals an LLVM module defines, read from its text (an entry
    is bound to them). From the text: walking the module costs ctypes calls per function."""
    return sorted({a or b for a, b in _DEFINED.findall(llvm_ir_text)})


def read_entry(path, key=None, symbols=None):
    """The authenticated object bytes of the cache entry at ``path`` for ``key`` (default: the
    file name's stem) and ``symbols``, or None; a refused entry is counted and removed."""
    if key is None:
        key = os.path.splitext(os.path.basename(path))[0]
    return diskcache.read_entry(path, key, symbols)


def write_entry(path, obj: bytes, key=None, symbols=None) -> None:
    """Store ``obj`` at ``path``, authenticated and bound to ``key`` and ``symbols``."""
    if key is None:
        key = os.path.splitext(os.path.basename(path))[0]
    diskcache.write_entry(path, key, symbols, obj)


_source_hashes: dict = {}


def source_key(*sources) -> str:
    """Hash of source files (modules or paths): library code's part of a library cache key."""
    paths = tuple(getattr(m, "__file__", m) for m in sources)
    key = paths
    h = _source_hashes.get(key)
    if h is None:
        d = new_hash()
        for path in paths:
            with open(path, "rb") as f:
                d.update(f.read())
        h = _source_hashes[key] = d.hexdigest()
    return h


class Cached(NamedTuple):
    """Where a module's object code is kept: its cache key, the symbols it defines, its entry
    path in ``config.cache_dir`` (or None), and the object found (or None)."""
    key: str
    symbols: list
    path: str | None
    obj: bytes | None


def keep_object(cached: Cached, opt: int, obj: bytes) -> None:
    """Count the object of ``cached`` (loaded when it was found, else compiled: written to the
    disk cache) and record it in this thread's ``object_code`` block."""
    if cached.obj is None:
        if cached.path:
            write_entry(cached.path, obj, cached.key, cached.symbols)
        diskcache.count("graph_compiled")
    diskcache.count("compiled" if cached.obj is None else "loaded")
    state = handover_state()
    if state is not None:
        state[0].append((cached.key, tuple(cached.symbols), opt, bytes(obj)))
