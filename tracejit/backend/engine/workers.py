"""Compile workers: LLVM code generation of the parts of a large module in other processes.

llvmlite serialises every call into LLVM on one process-wide lock, so one process compiles on
one core. A large graph module is split into parts (``split.py``) and each part is compiled to
object code by a worker process (``jit.compile_object``: parse, the same pass pipeline, the
same target machine and options as in-process, so the same object bytes); the caller loads the
objects into its engine.

Invariants:
- the pool is started lazily (the first large module) and reused: ``os.cpu_count()`` processes,
  one thread each in the caller that feeds it jobs from one queue;
- a worker is a fresh interpreter (``subprocess``: fork + exec, no ``os.fork`` of a process whose
  threads may hold llvmlite's lock), started with ``-I -S`` and only the directories of llvmlite
  and tracejit on its path; it imports ``jit`` without tracejit's front end (the packages'
  ``__init__`` files are skipped: importing tracejit takes ~0.5 s, the worker needs ~50 ms),
  and never the user's ``__main__`` (which ``multiprocessing``'s spawn and forkserver re-import);
- jobs and results are length-prefixed bytes on the worker's stdin/stdout (``_BOOT`` is the
  worker's whole program);
- a worker that dies while compiling (LLVM's ``std::bad_alloc`` aborts, an ``RLIMIT_AS``, the
  OOM killer's SIGKILL) fails that job with ``WorkerDied`` and is replaced; its other jobs go to
  the other workers. The caller turns it into a ``MemoryError`` naming the part and module;
- a forked child forgets the parent's pool (its threads do not exist there) and starts its own.
"""
from __future__ import annotations

import atexit
import os
import queue
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future

from ... import forksafe

_HEAD = struct.Struct("<QQQi")      # a job: lengths of text, cpu, features; opt
_REPLY = struct.Struct("<cQd")      # a reply: b"o" ok / b"m" MemoryError / b"e", length, CPU s
# The worker runs this, not this module: it needs only the engine (``jit``), and importing this
# module would also load subprocess, concurrent.futures and tempfile (~0.1-0.3 s per worker on
# a loaded machine). The protocol gets its own descriptor; whatever LLVM or Python print goes
# to stderr.
_BOOT = """\
import os, struct, sys, time, types
root = sys.argv[1]
sys.path[:0] = sys.argv[2:]
for name in ("tracejit", "tracejit.backend", "tracejit.backend.engine"):
    package = types.ModuleType(name)
    package.__path__ = [os.path.join(root, *name.split("."))]
    sys.modules[name] = package
from tracejit.backend.engine import jit
head, reply = struct.Struct("<QQQi"), struct.Struct("<cQd")
stdin, stdout = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
while True:
    h = stdin.read(head.size)
    if len(h) < head.size:
        break
    n_text, n_cpu, n_features, opt = head.unpack(h)
    text, cpu, features = (stdin.read(n).decode() for n in (n_text, n_cpu, n_features))
    t0 = time.thread_time()
    try:
        kind, data = b"o", jit.compile_object(text, opt, cpu, features)
    except MemoryError as exc:
        kind, data = b"m", str(exc).encode()
    except Exception as exc:
        kind, data = b"e", f"{type(exc).__name__}: {exc}".encode()
    stdout.write(reply.pack(kind, len(data), time.thread_time() - t0) + data)
    stdout.flush()
"""


class WorkerDied(Exception):
    """The worker process compiling a job exited (``returncode``: negative for a signal)
    before answering; ``stderr`` is the end of what it wrote."""

    def __init__(self, returncode, stderr: str):
        super().__init__(returncode, stderr)
        self.returncode, self.stderr = returncode, stderr

    def why(self) -> str:
        """The exit in words: 'killed by SIGKILL' or 'exited with status 1'."""
        code = self.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"


def _exchange(proc, job):
    """Send ``(text, opt, cpu, features)`` to the worker and read its reply: (kind, payload,
    CPU seconds); EOFError when it died."""
    text, opt, cpu, features = job[0].encode(), job[1], job[2].encode(), job[3].encode()
    proc.stdin.write(_HEAD.pack(len(text), len(cpu), len(features), opt))
    for data in (text, cpu, features):
        proc.stdin.write(data)
    proc.stdin.flush()
    head = proc.stdout.read(_REPLY.size)
    if len(head) < _REPLY.size:
        raise EOFError
    kind, n, seconds = _REPLY.unpack(head)
    payload = proc.stdout.read(n)
    if len(payload) < n:
        raise EOFError
    return kind, payload, seconds


class _Worker:
    """One worker process and the thread of the caller that feeds it."""

    def __init__(self, pool):
        import llvmlite
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        paths = [os.path.dirname(os.path.dirname(os.path.abspath(llvmlite.__file__)))]
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _BOOT, root, *paths],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, close_fds=True)
        self.pool = pool
        self.cpu_seconds = 0.0
        self.thread = threading.Thread(target=self._run, name="tracejit-compile-feeder",
                                       daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            item = self.pool.jobs.get()
            if item is None:
                self._close()
                return
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            if self.proc.poll() is not None:     # died idle (killed): not this job's fault
                self.pool.jobs.put((job, _Requeued(future)))
                self.err.close()
                self.pool.replace(self)
                return
            try:
                kind, payload, seconds = _exchange(self.proc, job)
            except (OSError, EOFError):
                future.set_exception(self._died())
                self.pool.replace(self)
                return
            self.cpu_seconds += seconds
            message = payload.decode("utf-8", "replace") if kind != b"o" else ""
            if kind == b"o":
                future.set_result(payload)
            elif kind == b"m":
                future.set_exception(MemoryError(message))
            else:
                future.set_exception(RuntimeError(message))

    def _died(self) -> WorkerDied:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.err.seek(0, os.SEEK_END)
        self.err.seek(max(0, self.err.tell() - 2000))
        tail = self.err.read().decode("utf-8", "replace")
        self.err.close()
        return WorkerDied(code, tail)

    def _close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.err.close()


class _Requeued:
    """A future already marked running, handed to the next worker."""

    def __init__(self, future):
        self.future = future

    def set_running_or_notify_cancel(self):
        return True

    def __getattr__(self, name):
        return getattr(self.future, name)


class _Pool:
    def __init__(self, size: int):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.workers = [_Worker(self) for _ in range(size)]

    def replace(self, dead):
        """A worker died: start another in its place (its thread then ends)."""
        with self.lock:
            if dead in self.workers and not _closing:
                self.workers[self.workers.index(dead)] = _Worker(self)

    def close(self):
        with self.lock:
            for _ in self.workers:
                self.jobs.put(None)
            workers, self.workers = self.workers, []
        for w in workers:
            w.thread.join(timeout=10)


_pool = None
_pool_lock = threading.Lock()
_closing = False


def size() -> int:
    """Worker processes of the pool: one per CPU (``os.cpu_count()``)."""
    return max(1, os.cpu_count() or 1)


def _get_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool(size())
        return _pool


def start() -> None:
    """Start the pool now (when a large module is coming: the workers start while the caller
    plans and emits it)."""
    _get_pool()


def submit(text: str, opt: int, cpu: str, features: str) -> Future:
    """Compile one module to object bytes in a worker: a Future of the bytes, failing with
    ``WorkerDied`` (the worker exited: out of memory, killed), ``MemoryError`` or
    ``RuntimeError`` (LLVM rejected the module)."""
    future: Future = Future()
    _get_pool().jobs.put(((text, opt, cpu, features), future))
    return future


def pids() -> list:
    """Process ids of the running workers (tests apply resource limits to them)."""
    with _pool_lock:
        pool = _pool
    if pool is None:
        return []
    with pool.lock:
        return [w.proc.pid for w in pool.workers]


def cpu_seconds() -> float:
    """CPU time the live workers spent compiling (benchmarks: CPU against wall clock)."""
    with _pool_lock:
        pool = _pool
    return 0.0 if pool is None else sum(w.cpu_seconds for w in pool.workers)


def shutdown() -> None:
    """Stop the pool (at exit; a later large compile starts a new one)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def _at_exit():
    global _closing
    _closing = True
    shutdown()


def _forget_in_child():
    # the parent's feeder threads do not exist here; its workers are the parent's business
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


atexit.register(_at_exit)
forksafe.in_child(_forget_in_child)
