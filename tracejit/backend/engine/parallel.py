"""Compile a graph's module into its ``jit.Code``: in-process when it is small, in parts on the
compile workers (``workers.py``) when it is large.

Invariants:
- a module whose estimated LLVM time is under ``PARALLEL_MIN_SECONDS`` (measured per line of
  text and opt level: ``SECONDS_PER_LINE``) compiles exactly as before, in-process
  (``jit.compile_ir``): nothing is added to the common case;
- a larger one is split (``split.py``, deterministic) into parts of about ``PART_LINES``
  lines, at least two per worker so that the workers stay busy until the end; each part is an
  object of its own in the disk cache and in ``object_code`` records (its cache key: the
  part's text, host, versions and opt level), so a part found there is not compiled again;
  the others are compiled by the workers (``jit.compile_object``: the same bytes as
  in-process), then every object is loaded into the Code together;
- a worker that dies compiling a part (LLVM aborts on ``std::bad_alloc``; a memory limit or
  the OOM killer ends it) is a ``MemoryError`` naming the part's functions and the module's
  size; the calling process is unharmed and the pool replaces the worker. Large modules go
  through a worker even on a single CPU for that reason;
- a module the splitter does not handle compiles whole, in one worker.
"""
from __future__ import annotations

from . import jit, split, workers
from .objects import keep_object

# LLVM seconds per line of module text (tests/test_parallel_compile.py, the RNN gradient):
# the O1 pipeline and full code generation of matmul modules, FastISel at opt 0
SECONDS_PER_LINE = {0: 25e-6, 1: 90e-6}
PARALLEL_MIN_SECONDS = 0.3      # a worker round trip and the split cost a few ms; a pool ~0.1 s
PART_LINES = 2000
PRESTART_EQNS = 1000            # a graph this large emits a module well over the threshold


def expect(equations: int) -> None:
    """A graph of ``equations`` is about to be planned and emitted: start the workers now when
    its module will compile on them (their start-up, ~0.1-0.3 s of CPU each, then overlaps
    with planning and emission)."""
    if equations >= PRESTART_EQNS:
        workers.start()


def estimated_seconds(text: str, opt: int) -> float:
    """Estimated single-core LLVM time of compiling the module ``text`` at ``opt``."""
    per_line = SECONDS_PER_LINE[min(max(opt, 0), 1)]
    return split.line_count(text) * per_line


def compile_module(code: jit.Code, text: str, opt: int, cacheable: bool) -> None:
    """Compile the module ``text`` at ``opt`` into ``code`` (see the module docstring);
    ``cacheable``: its names are derived from its content (disk cache, object_code records).
    Raises MemoryError when a compile worker runs out of memory."""
    if estimated_seconds(text, opt) < PARALLEL_MIN_SECONDS:
        jit.compile_ir(text, opt=opt, cacheable=cacheable, code=code)
        return
    lines = split.line_count(text)
    nworkers = workers.size()
    count = min(max(2 * nworkers, lines // PART_LINES), 16 * nworkers)
    parts = split.split(text, count) or [split.Part(text, tuple(jit.defined_symbols(text)))]
    jit.check_externals(text)
    found = [jit.cached_object(p.text, opt) if cacheable else None for p in parts]
    cpu, features = jit.host_cpu()
    futures = {k: workers.submit(p.text, opt, cpu, features)
               for k, (p, c) in enumerate(zip(parts, found)) if c is None or c.obj is None}
    objects = []
    try:
        for k, part in enumerate(parts):
            obj = found[k].obj if k not in futures else _result(futures[k], k, parts, lines)
            if cacheable:
                keep_object(found[k], opt, obj)
            objects.append(obj)
    finally:
        for f in futures.values():
            f.cancel()
    code.add_objects(objects)


def _result(future, k, parts, lines) -> bytes:
    """The object of part ``k``; MemoryError when its worker died."""
    try:
        return future.result()
    except (workers.WorkerDied, MemoryError) as exc:
        if isinstance(exc, workers.WorkerDied):
            tail = exc.stderr.strip().splitlines()[-1:]
            why = f"its compile worker {exc.why()}" + (f" ({tail[0]})" if tail else "")
        else:
            why = f"its compile worker raised MemoryError ({exc})"
        names = parts[k].functions
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise MemoryError(
            f"tracejit: LLVM ran out of memory compiling part {k + 1} of {len(parts)} "
            f"(functions {shown}; {split.line_count(parts[k].text)} lines) of a module of "
            f"{lines} lines of LLVM IR: {why}; free memory or raise the memory limit, or make "
            "the function smaller (a loop instead of unrolled Python steps: tj.scan, "
            "tj.fori_loop)") from None
