"""Trusted on-disk entries of object code: what ``jit.py`` loads from ``config.cache_dir`` (user
graphs) and ``config.library_cache_dir`` (tracejit's own library code) and runs natively.

An entry is executed, so loading one must be as safe as compiling. The trust model (the
reasoning of ssh and of Python's bytecode cache):

- a cache directory is used only if it is owned by the current user and not writable by group
  or others; directories we create are 0700. An untrusted directory is ignored (no read, no
  write) with one warning per process;
- an entry is a regular file (opened with ``O_NOFOLLOW | O_NONBLOCK``: a symlink, FIFO, device
  or directory at its path is refused without blocking), owned by the current user, not
  writable by group or others, at most ``MAX_ENTRY_BYTES``, read with a bounded loop; files we
  write are 0600, written to a temporary name and renamed into place (atomic for concurrent
  writers); the temporary file is removed on every failure path;
- every entry is authenticated with a per-directory secret (``<dir>/.key``, 32 random bytes,
  created 0600 and published with ``link`` so readers never see a partial key; a key file with
  another owner, group/other permissions or the wrong size is replaced). The MAC is keyed
  BLAKE2b, a MAC by design (RFC 7693 section 2.9; no HMAC construction needed, and no OpenSSL
  import at start-up). It covers the entry's cache key (the hash of the IR, host CPU and
  features, versions and opt level) and the names of the symbols it defines, so an entry is
  accepted only at the path and for the request it was written for: a valid entry copied to
  another key's file name is refused, as is any byte changed without the key;
- object code handed to another process of the same user (an artifact, a pickled function:
  ``seal`` / ``authentic``) carries a keyed BLAKE2b MAC of its cache key, symbols and bytes
  under the secret of a trusted cache directory of the receiving side (a separate
  personalisation, so it is never a valid cache entry MAC); where that secret differs (another
  user or machine), the object is not trusted and the receiver compiles;
- a refused entry is counted (``stats['rejected']``: not a trusted regular file;
  ``stats['corrupt']``: failed authentication or format), removed, and the caller recompiles
  and writes a fresh entry. The cache is an optimisation: every failure means "compile".
"""
from __future__ import annotations

import errno
import logging
import os
import stat
import struct
import threading
import time

try:    # the BLAKE2 that hashlib re-exports, without loading OpenSSL (see objects.new_hash)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - a Python without the builtin module
    from hashlib import blake2b as _blake2b
from _operator import _compare_digest as compare_digest     # what hmac.compare_digest is

log = logging.getLogger("tracejit")

MAGIC = b"TJOBJ3\n\0"
MAX_ENTRY_BYTES = 256 << 20        # an object file of a graph is KBs; libraries < 1 MB
KEY_NAME = ".key"
_KEY_BYTES = 32
_MAC_BYTES = 32
_PERSON = b"tracejit-obj-v3"
_HANDOVER_PERSON = b"tracejit-art-v1"
_HEADER = struct.Struct("<I")      # length of the header (cache key and symbol names)

# compiled/loaded: every module; graph_compiled: the modules of graphs (cacheable ones)
# compiled from their IR, what the disk cache and artifacts save (not entry thunks, libraries)
stats = {"compiled": 0, "loaded": 0, "corrupt": 0, "rejected": 0, "lib_compiled": 0,
         "lib_loaded": 0, "graph_compiled": 0}
_stats_lock = threading.Lock()     # the hot tier counts from a background thread
_warned: set = set()

_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
    getattr(os, "O_CLOEXEC", 0)
_O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
    getattr(os, "O_CLOEXEC", 0)


def count(name: str, n: int = 1) -> None:
    with _stats_lock:
        stats[name] += n


def _warn_once(directory, why):
    if directory not in _warned:
        _warned.add(directory)
        log.warning("tracejit: not using cache directory %s: %s", directory, why)


def _untrusted(st, regular: bool, mask: int = 0o022):
    """Why a file or directory is not trusted, or None (``mask``: permission bits it must not
    have; group/other write by default)."""
    if regular and not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if not regular and not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by the current user ({os.geteuid()})"
    if st.st_mode & mask:
        return f"mode {stat.S_IMODE(st.st_mode):o} gives group or others access"
    return None


def open_dir(directory: str, create: bool):
    """A file descriptor of a trusted cache directory (created 0700 if ``create``), or None.
    Entries are then opened relative to it, so the directory cannot be swapped after the
    check."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(directory, flags)
    except FileNotFoundError:
        if not create:
            return None
        try:
            parent = os.path.dirname(os.path.abspath(directory))
            os.makedirs(parent, exist_ok=True)
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
            fd = os.open(directory, flags)
        except OSError:
            return None                 # read-only location: the cache is just off
    except OSError as e:
        _warn_once(directory, e.strerror)
        return None
    why = _untrusted(os.fstat(fd), regular=False)
    if why is not None:
        os.close(fd)
        _warn_once(directory, why)
        return None
    return fd


def _read_bounded(fd, size: int) -> bytes:
    """Read at most ``size + 1`` bytes (one more than fstat said, to notice a file that grows)."""
    chunks, left = [], size + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _open_trusted(dfd, name, limit, mask=0o022):
    """(bytes, None) of a trusted regular file in the directory, (None, reason) for a refused
    one, (None, None) when there is none."""
    try:
        fd = os.open(name, _O_READ, dir_fd=dfd)
    except FileNotFoundError:
        return None, None
    except OSError as e:     # ELOOP: a symlink; EACCES, EISDIR...: anything else is refused
        return None, "symlink" if e.errno == errno.ELOOP else e.strerror
    try:
        st = os.fstat(fd)
        why = _untrusted(st, regular=True, mask=mask)
        if why is None and st.st_size > limit:
            why = f"{st.st_size} bytes, over the limit of {limit}"
        if why is not None:
            return None, why
        data = _read_bounded(fd, st.st_size)
        if len(data) != st.st_size:
            return None, "changed while read"
        return data, None
    except OSError as e:
        return None, e.strerror
    finally:
        os.close(fd)


def _remove(dfd, name) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except IsADirectoryError:
        try:
            os.rmdir(name, dir_fd=dfd)      # an empty directory in the way; a full one stays
        except OSError:
            pass
    except OSError:
        pass


def _temp_file(dfd, prefix, data: bytes):
    """A fresh 0600 temporary file in ``dfd`` holding ``data``: its name, or None (nothing is
    left behind on failure)."""
    tmp = f".{prefix}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(tmp, _O_CREATE, 0o600, dir_fd=dfd)
    except OSError:
        return None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return tmp
    except OSError:
        _remove(dfd, tmp)
        return None


def _write_new(dfd, name, data: bytes) -> bool:
    """Write ``data`` to a fresh 0600 temporary file and rename it to ``name``; the temporary
    file never survives a failure."""
    tmp = _temp_file(dfd, name, data)
    if tmp is None:
        return False
    try:
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True
    except OSError:
        return False
    finally:
        _remove(dfd, tmp)              # a no-op after a successful rename


def _secret(dfd, directory):
    """The directory's 32-byte key, created if missing; a key file that is not a trusted
    0600 regular file of the right size is replaced (entries made with it then fail
    authentication and are recompiled). None if no key can be had."""
    for attempt in range(50):
        data, why = _open_trusted(dfd, KEY_NAME, _KEY_BYTES, mask=0o077)
        if data is not None and len(data) == _KEY_BYTES:
            return data
        if data is not None:        # short: a writer without link() at work
            if attempt < 49:
                time.sleep(0.002)
                continue
            why = f"key file of {len(data)} bytes"
        if why is not None:
            count("rejected")
            log.warning("tracejit: replacing the key of cache directory %s: %s", directory, why)
            _remove(dfd, KEY_NAME)
        key = os.urandom(_KEY_BYTES)
        if _publish_key(dfd, key):
            return key
    return None


def _publish_key(dfd, key) -> bool:
    """Create ``.key`` atomically: write a 0600 temporary file, then ``link`` it (fails if
    another process won the race; its key is read on the next attempt)."""
    tmp = _temp_file(dfd, "key", key)
    if tmp is None:
        return False
    try:
        try:
            os.link(tmp, KEY_NAME, src_dir_fd=dfd, dst_dir_fd=dfd)
            return True
        except FileExistsError:
            return False
        except OSError:             # no hard links on this file system: O_EXCL create
            try:
                fd = os.open(KEY_NAME, _O_CREATE, 0o600, dir_fd=dfd)
            except OSError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(key)
            return True
    finally:
        _remove(dfd, tmp)


def _header(key: str, symbols) -> bytes:
    return "\0".join((key, *sorted(symbols or ()))).encode()


def _mac(secret, header: bytes, obj: bytes, person: bytes = _PERSON) -> bytes:
    h = _blake2b(key=secret, digest_size=_MAC_BYTES, person=person)
    h.update(_HEADER.pack(len(header)))
    h.update(header)
    h.update(obj)
    return h.digest()


def read_entry(path: str, key: str, symbols=None):
    """The object bytes of the entry at ``path`` written for ``key`` (and, when given, for
    exactly these defined ``symbols``), or None. A refused entry is counted and removed."""
    directory, name = os.path.split(path)
    dfd = open_dir(directory, create=False)
    if dfd is None:
        return None
    try:
        blob, why = _open_trusted(dfd, name, MAX_ENTRY_BYTES)
        if why is not None:
            count("rejected")
            _remove(dfd, name)
            return None
        if blob is None:
            return None
        secret = _secret(dfd, directory)
        obj = _check(blob, secret, key, symbols)
        if obj is None:
            count("corrupt")
            _remove(dfd, name)
        return obj
    finally:
        os.close(dfd)


def _check(blob: bytes, secret, key: str, symbols):
    """The object of an authenticated entry for ``key`` / ``symbols``, else None."""
    start = len(MAGIC) + _MAC_BYTES + _HEADER.size
    if secret is None or len(blob) < start or not blob.startswith(MAGIC):
        return None
    (n,) = _HEADER.unpack_from(blob, start - _HEADER.size)
    if n > len(blob) - start:
        return None
    header, obj = blob[start:start + n], blob[start + n:]
    mac = blob[len(MAGIC):len(MAGIC) + _MAC_BYTES]
    if not compare_digest(mac, _mac(secret, header, obj)):
        return None
    fields = header.decode("utf-8", "replace").split("\0")
    if fields[0] != key or (symbols is not None and fields[1:] != sorted(symbols)):
        return None
    return obj


def write_entry(path: str, key: str, symbols, obj: bytes) -> None:
    """Store ``obj`` as the entry for ``key`` (defining ``symbols``) at ``path``; silently
    nothing when the directory is not usable (read-only, untrusted)."""
    directory, name = os.path.split(path)
    dfd = open_dir(directory, create=True)
    if dfd is None:
        return
    try:
        secret = _secret(dfd, directory)
        if secret is None:
            return
        header = _header(key, symbols)
        blob = b"".join((MAGIC, _mac(secret, header, obj), _HEADER.pack(len(header)), header,
                         obj))
        _write_new(dfd, name, blob)
    finally:
        os.close(dfd)


def _directory_secret(directory: str):
    dfd = open_dir(directory, create=True)
    if dfd is None:
        return None
    try:
        return _secret(dfd, directory)
    finally:
        os.close(dfd)


def seal(directory: str, key: str, symbols, obj: bytes):
    """The MAC (hex) binding ``obj`` to ``key`` and ``symbols`` under the secret of the trusted
    cache directory ``directory``, or None when it has none."""
    secret = _directory_secret(directory) if directory else None
    if secret is None:
        return None
    return _mac(secret, _header(key, symbols), obj, _HANDOVER_PERSON).hex()


def authentic(directory: str, key: str, symbols, obj: bytes, mac) -> bool:
    """Whether ``mac`` (from ``seal``) authenticates ``obj`` for ``key`` and ``symbols`` under
    this side's secret of ``directory``."""
    expected = seal(directory, key, symbols, obj)
    return expected is not None and isinstance(mac, str) and \
        compare_digest(expected.encode(), mac.encode())
