"""The one module that imports ``llvmlite.binding``: host target machine, optimisation pipeline,
one process-wide MCJIT engine, symbol registration and assembly printing.

Invariants (llvmlite 0.50 / LLVM 22 pitfalls, see shared/reference notes):
- never call ``llvm.initialize()`` (it raises); only the native target and asm printer are set up;
- one execution engine per TargetMachine: the engine owns ``_engine_tm``; pass building and asm
  printing use separate TargetMachines;
- every entry point name is unique (the engine silently keeps the latest definition of a name);
- every external declaration must resolve before code runs (an unresolved symbol segfaults on the
  first call), so ``compile_ir`` checks them.

Object code of a process's own graphs can also be handed over (``objects.object_code``): inside
the block, the cacheable modules compiled or loaded on the calling thread are recorded (for an
artifact: ``tracejit/artifact.py``), and objects the caller authenticated (an artifact's, see
``diskcache.seal``) are loaded instead of compiled when their cache key is the module's.

The on-disk object cache (``config.cache_dir`` / TRACEJIT_CACHE_DIR) keys object code by
``cache_key(ir_text)``: a hash of the LLVM IR, the host CPU name and features, the llvmlite and
tracejit versions and the optimisation level, so a stale entry is never looked up; library code
(``compile_library``) is kept in ``config.library_cache_dir`` the same way. What is loaded is
trusted like compiled code, so ``diskcache.py`` accepts only entries in directories of the
current user, opened without following links or blocking, authenticated with a per-directory
secret key and bound to their cache key and defined symbols; anything else is counted, removed
and recompiled.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading

import llvmlite
import llvmlite.binding as llvm

from ...config import config
from ... import forksafe
from . import diskcache
from .diskcache import stats
from .objects import Cached, defined_symbols, handover_state, keep_object, new_hash
from .objects import handed_over as _handed_over, read_entry as _read_entry, \
    write_entry as _write_entry


llvm.initialize_native_target()
llvm.initialize_native_asmprinter()


_lock = threading.RLock()
_engine = None
_counter = 0

# fork safety (``tracejit.forksafe``): before fork the forking thread takes every process-wide
# lock of the backend (the registered ones, outermost first, then ``_lock``, then llvmlite's own
# lock, which every call into LLVM holds: no thread is inside LLVM at fork; then the disk
# cache's counter lock), and releases them in parent and child after it.


def register_fork_lock(lock) -> None:
    """Have ``os.fork`` take ``lock`` before forking and release it after, in the parent and
    the child. For module-level locks that may be held around calls into this module (they are
    taken in registration order, before ``_lock``; none may be taken while holding a later
    one). Every process-wide lock of the backend is registered."""
    forksafe.register(lock, forksafe.BACKEND)


forksafe.register(_lock, forksafe.ENGINE)
forksafe.register(diskcache._stats_lock, forksafe.LEAF)


_host = None


def host_cpu():
    """(cpu name, feature string) of the host, used for target machines and cache keys (asked
    once per process: LLVM rebuilds the feature map on every call, ~0.3 ms)."""
    global _host
    if _host is None:
        _host = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    return _host


def _target_machine(opt=3):
    cpu, features = host_cpu()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


_pass_tm = None
_asm_tm = None


def triple():
    return llvm.get_process_triple()


_data_layout = None


def data_layout():
    """The host data layout (from the opt-0 TargetMachine, which the default tier needs anyway;
    every TargetMachine of the host has the same layout)."""
    global _data_layout
    if _data_layout is None:
        _data_layout = str(_fast_tm().target_data)
    return _data_layout


def _new_engine():
    """An MCJIT engine with a TargetMachine of its own (an engine owns and frees its TM)."""
    empty = llvm.parse_assembly("")
    empty.triple = triple()
    engine = llvm.create_mcjit_compiler(empty, _target_machine())
    engine.set_object_cache(_cache_notify, _cache_getbuffer)
    return engine


def _get_engine():
    """The process engine: library code and modules compiled outside a ``Code``."""
    global _engine
    if _engine is None:
        _engine = _new_engine()
    return _engine


class Code:
    """The machine code of one graph's module and of the modules compiled into it later (its
    native entries: ``into``), in an MCJIT engine of its own, so that it can be freed:
    ``close()`` disposes of the engine with its code, data and symbol table (the process
    engine keeps everything until exit). Symbols resolve within the engine first, then in
    the process (``add_symbol``, libraries). The owner must guarantee that nothing calls the
    code after ``close()``."""

    def __init__(self):
        self._engine = None
        self.closed = False

    def engine(self):
        if self.closed:
            raise RuntimeError("tracejit: compiled code used after it was freed")
        if self._engine is None:
            _get_engine()            # symbol lookup needs the process engine to exist
            self._engine = _new_engine()
        return self._engine

    def add_objects(self, objects) -> None:
        """Load object files (bytes) into the engine and resolve them together."""
        with _lock:
            engine = self.engine()
            for obj in objects:
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()

    def close(self) -> None:
        with _lock:
            if self._engine is not None and not self.closed:
                self._engine.close()
            self._engine, self.closed = None, True


_into = threading.local()      # this thread's ``into`` block: the Code compile_ir adds to


@contextlib.contextmanager
def into(code: Code):
    """Inside the block, ``compile_ir`` and ``function_address`` without a ``code`` use
    ``code`` (a native entry is compiled next to the kernel it calls, and freed with it)."""
    previous = getattr(_into, "code", None)
    _into.code = code
    try:
        yield code
    finally:
        _into.code = previous


def _engine_of(code):
    code = code if code is not None else getattr(_into, "code", None)
    return code.engine() if code is not None else _get_engine()


# ---------------------------------------------------------------------------------------------
# on-disk object cache (the trust model, file handling and authentication: diskcache.py)

# module name -> (path, key, symbols, cached object or None, object_code record or None, opt)
_pending: dict[str, tuple] = {}


def host_identity() -> dict:
    """What object code depends on besides its IR: host CPU name and features, llvmlite."""
    cpu, features = host_cpu()
    return {"cpu": cpu, "features": features, "llvmlite": llvmlite.__version__}


def cache_key(llvm_ir_text: str, opt: int = 1) -> str:
    """Content key of a module's object code on this host and these versions."""
    from ...version import __version__
    cpu, features = host_cpu()
    h = new_hash()
    for part in (llvm_ir_text, cpu, features, llvmlite.__version__, __version__, str(opt)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _cache_getbuffer(module):
    pending = _pending.get(module.name)
    return pending[3] if pending is not None else None


def _cache_notify(module, obj: bytes):
    pending = _pending.get(module.name)
    if pending is not None and pending[3] is None:
        path, key, symbols, _, record, opt = pending
        if path:
            _write_entry(path, obj, key, symbols)
        if record is not None:
            record.append((key, tuple(symbols), opt, bytes(obj)))


def compile_library(name: str, build, source: str, opt: int = 1) -> bool:
    """Add tracejit's own library code (vector math, the thread pool) to the process.

    ``build()`` returns the module (``ir.Module`` or text) and is called only on a cache miss;
    ``source`` identifies the generating code (``source_key``). The object code is kept in
    ``config.library_cache_dir`` keyed by name, source, host CPU and features, libc, llvmlite
    and tracejit versions and opt level, and loaded with ``add_object_file`` (about 1 ms instead
    of 20-100 ms of codegen). Returns True when the object came from the cache."""
    from ...version import __version__
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else ""
    cpu, features = host_cpu()
    h = new_hash()
    for part in (name, source, cpu, features, libc or "", llvmlite.__version__, __version__,
                 str(opt)):
        h.update(part.encode())
        h.update(b"\0")
    directory = config.library_cache_dir
    key = f"{name}-{h.hexdigest()[:24]}"
    path = os.path.join(directory, key + ".o") if directory else None
    with _lock:
        def emit():
            text = str(build())
            mod = parse(text)
            mod.triple = triple()
            mod.data_layout = data_layout()
            optimize(mod, opt)
            return _object_tm().emit_object(mod), defined_symbols(text)

        # the symbols of library code are known only after build(): an entry is bound to its
        # key (name, source hash, host, versions), and records its symbols
        return _add_object(_get_engine(), path, key, None, emit, "lib_")


def cached_object(text: str, opt: int) -> Cached:
    """The object code of the cacheable module ``text`` at ``opt`` handed over to this
    thread's ``object_code`` block or in the disk cache (authenticated), if any."""
    key, symbols = cache_key(text, opt), defined_symbols(text)
    state = handover_state()
    path = os.path.join(config.cache_dir, key + ".o") if config.cache_dir else None
    obj = _handed_over(state, key, symbols)
    if obj is None and path:
        obj = _read_entry(path, key, symbols)
    return Cached(key, symbols, path, obj)


def _add_object(engine, path, key, symbols, emit, counter="", state=None, opt=0, graph=False):
    """Add object code to the engine: the object handed over for ``key`` and ``symbols`` in
    ``state`` (an object_code block's), else the authenticated entry at ``path``, else
    ``emit()`` -> (object, symbols), written to ``path`` and recorded in ``state``.
    Counts ``{counter}loaded`` / ``{counter}compiled`` (and ``graph_compiled`` for a
    ``graph``'s module); returns whether it was loaded."""
    obj = _handed_over(state, key, symbols)
    if obj is None and path:
        obj = _read_entry(path, key, symbols)
    loaded = obj is not None
    if not loaded:
        obj, symbols = emit()
        if path:
            _write_entry(path, obj, key, symbols)
        if graph:
            diskcache.count("graph_compiled")
    if state is not None:
        state[0].append((key, tuple(symbols), opt, bytes(obj)))
    diskcache.count(counter + ("loaded" if loaded else "compiled"))
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return loaded


_obj_tm = None


def _object_tm():
    """A TargetMachine like the engine's (JIT code model) for emitting library objects."""
    global _obj_tm
    if _obj_tm is None:
        _obj_tm = _target_machine()
    return _obj_tm


def unique_name(prefix: str) -> str:
    """A process-unique symbol name (MCJIT keeps only the latest definition of a name)."""
    global _counter
    with _lock:
        _counter += 1
        return f"{prefix}_{_counter}"


def add_symbol(name: str, address: int) -> None:
    """Make ``name`` resolve to ``address`` for modules compiled after this call."""
    llvm.add_symbol(name, address)


def address_of_symbol(name: str):
    _get_engine()
    return llvm.address_of_symbol(name)


def optimize(mod, level: int = 1, tm=None) -> None:
    """Run the new-pass-manager pipeline at ``level`` (O1 is enough for explicit vector IR)."""
    global _pass_tm
    if level <= 0:
        return
    if tm is None:
        if _pass_tm is None:
            _pass_tm = _target_machine()
        tm = _pass_tm
    pto = llvm.create_pipeline_tuning_options(level)
    pto.loop_vectorization = level >= 2
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def parse(llvm_ir: str):
    mod = llvm.parse_assembly(str(llvm_ir))
    mod.verify()
    return mod


def compile_ir(llvm_ir, opt: int = 1, cacheable: bool = False, code: Code | None = None):
    """Parse, verify, optimise and add an LLVM module to the engine of ``code`` (default: the
    ``into`` block's, else the process engine).

    ``llvm_ir`` is an ``llvmlite.ir.Module`` or its text. Returns the binding module (no longer
    owned by the engine: its code stays loaded, its IR is freed with it), None for a ``code``
    (compiled in a private LLVM context by ``compile_object``: a module parsed into the
    process context leaves its constants and types there for good, ~60 KB per graph, and a
    Code is meant to be freed). Raises RuntimeError naming any external symbol that does not
    resolve.
    ``cacheable``: the module's symbol names are derived from its content (not from a process
    counter), so its object code may be stored in and loaded from ``config.cache_dir``.
    ``opt=0`` is the fast tier: no optimisation pipeline and FastISel code generation (the
    explicit vector IR of fused loops runs as fast as at O1, and compiles 3-5x faster).
    """
    text = str(llvm_ir)
    code = code if code is not None else getattr(_into, "code", None)
    if code is not None:
        _compile_into(code, text, opt, cacheable)
        return None
    with _lock:
        engine = _get_engine()
        mod = parse(text)
        mod.triple = triple()
        mod.data_layout = data_layout()
        cached = None
        state = handover_state() if cacheable else None
        if cacheable and (config.cache_dir or state) and opt > 0:
            # MCJIT asks _cache_getbuffer for the object while adding the module: it gets the
            # entry read and authenticated here, so a refused one is recompiled optimised
            key = cache_key(text, opt)
            mod.name = key
            path = os.path.join(config.cache_dir, key + ".o") if config.cache_dir else None
            symbols = defined_symbols(text)
            cached = _handed_over(state, key, symbols)
            if cached is None and path:
                cached = _read_entry(path, key, symbols)
            record = state[0] if state else None
            if cached is not None and record is not None:
                record.append((key, tuple(symbols), opt, cached))
            _pending[key] = (path, key, symbols, cached, record, opt)
        if cached is None:
            optimize(mod, opt)           # a cached object skips the pipeline and codegen
        for fn in mod.functions:
            if fn.is_declaration and not fn.name.startswith("llvm."):
                if llvm.address_of_symbol(fn.name) is None:
                    raise RuntimeError(f"tracejit: unresolved external function {fn.name!r}")
        for gv in mod.global_variables:
            if gv.is_declaration and llvm.address_of_symbol(gv.name) is None:
                raise RuntimeError(f"tracejit: unresolved external global {gv.name!r}")
        if opt <= 0:
            return _add_fast(engine, mod, text, state if cacheable else None, cacheable)
        try:
            engine.add_module(mod)
            engine.finalize_object()
        finally:
            _pending.pop(mod.name, None)
        diskcache.count("compiled" if cached is None else "loaded")
        if cacheable and cached is None:
            diskcache.count("graph_compiled")
        engine.run_static_constructors()
        # The machine code stays loaded (MCJIT's memory manager owns it and the symbols stay
        # in its table), but the IR need not: removing the module returns it to Python, which
        # frees it with the ModuleRef (measured: 102 -> 54 KB per module of 200 instructions).
        engine.remove_module(mod)
        return mod


def _add_fast(engine, mod, text, state, cacheable):
    """opt 0, the fast tier: no pipeline, FastISel codegen (``emit_object`` with an opt-0
    TargetMachine) and ``add_object_file``; the object is cached (and recorded in an
    object_code ``state``) like any other."""
    path = key = symbols = None
    if cacheable and (config.cache_dir or state):
        key = cache_key(text, 0)
        path = os.path.join(config.cache_dir, key + ".o") if config.cache_dir else None
        symbols = defined_symbols(text)
    _add_object(engine, path, key, symbols, lambda: (_fast_tm().emit_object(mod), symbols),
                state=state, graph=cacheable)
    return mod


_EXTERNAL = re.compile(r'^(declare) [^@]*@"?([^"(\s]+)"?\(|^@"?([^"\s]+)"? = external global',
                       re.M)
_private = threading.local()       # per thread: {(optimised, cpu, features): TargetMachines}


def _thread_tms(opt: int, cpu: str, features: str):
    """This thread's (pass, object) TargetMachines for ``opt`` on ``cpu`` / ``features`` (a
    TargetMachine is not shared between threads that run LLVM without ``_lock``)."""
    tms = getattr(_private, "tms", None)
    if tms is None:
        tms = _private.tms = {}
    key = (opt > 0, cpu, features)
    if key not in tms:
        target = llvm.Target.from_default_triple()
        make = lambda level: target.create_target_machine(  # noqa: E731
            cpu=cpu, features=features, opt=level, jit=True)
        tms[key] = (make(3), make(3)) if opt > 0 else (None, make(0))
    return tms[key]


def check_externals(text: str, code: Code | None = None) -> None:
    """RuntimeError naming an external of the module ``text`` that does not resolve in the
    process or in the engine of ``code`` (where an entry finds its kernel): an unresolved
    symbol would segfault on the first call."""
    _get_engine()                       # symbol lookup needs an engine
    own = code.engine() if code is not None else None
    # from the text: walking the module would be a few ctypes calls per function, and each
    # one re-takes the GIL (up to 5 ms when the foreground is busy)
    for kind, fn_name, gv_name in set(_EXTERNAL.findall(text)):
        name = fn_name or gv_name
        if name.startswith("llvm.") or llvm.address_of_symbol(name) is not None:
            continue
        with _lock:
            found = own is not None and (own.get_function_address(name) if kind else
                                         own.get_global_value_address(name))
        if not found:
            what = "function" if kind else "global"
            raise RuntimeError(f"tracejit: unresolved external {what} {name!r}")


def compile_object(text: str, opt: int, cpu: str | None = None,
                   features: str | None = None) -> bytes:
    """Object code of the module ``text``: parsed into a private LLVM context, optimised at
    ``opt`` (the pipeline of ``optimize``; none at 0) and code-generated for the host (or
    ``cpu`` / ``features``) with the JIT's settings (opt 0: FastISel), without ``_lock``.
    The same text and arguments give the same bytes in any process (compile workers,
    ``workers.py``, run this)."""
    if cpu is None:
        cpu, features = host_cpu()
    pass_tm, obj_tm = _thread_tms(opt, cpu, features)
    context, mod = llvm.create_context(), None
    try:
        mod = llvm.parse_assembly(text, context=context)
        mod.verify()
        mod.triple = triple()
        mod.data_layout = str(obj_tm.target_data)
        if opt > 0:
            optimize(mod, opt, pass_tm)
        return obj_tm.emit_object(mod)
    finally:
        if mod is not None:
            mod.close()                 # before its context
        context.close()


def _compile_into(code: Code, text: str, opt: int, cacheable: bool) -> None:
    """``compile_ir`` into a Code: the object comes from the cache (``cached_object``) or from
    ``compile_object`` (the same bytes as a compile worker's), without ``_lock``: only adding
    it to the engine takes it. So a foreground compile waits for one LLVM call at most
    (llvmlite serialises its calls with a lock of its own) while a background thread (the hot
    tier, ``tiers.py``) compiles, not for its whole compile."""
    cached = cached_object(text, opt) if cacheable else None
    obj = cached.obj if cached is not None else None
    if obj is None:
        check_externals(text, code=code)
        obj = compile_object(text, opt)
    if cached is not None:
        keep_object(cached, opt, obj)
    else:
        diskcache.count("compiled")
    code.add_objects([obj])


_fast_tm_ = None


def _fast_tm():
    global _fast_tm_
    if _fast_tm_ is None:
        _fast_tm_ = _target_machine(opt=0)
    return _fast_tm_


def function_address(name: str, code: Code | None = None) -> int:
    """Address of a compiled function (after ``compile_ir``) in ``code`` (default: the
    ``into`` block's, else the process engine)."""
    with _lock:
        addr = _engine_of(code).get_function_address(name)
    if not addr:
        raise RuntimeError(f"tracejit: no compiled function named {name!r}")
    return addr


def global_address(name: str, code: Code | None = None) -> int:
    with _lock:
        return _engine_of(code).get_global_value_address(name)


def emit_assembly(llvm_ir, opt: int = 1) -> str:
    """Assembly text for a module (compiled separately; nothing is added to the engine)."""
    global _asm_tm
    if _asm_tm is None:
        _asm_tm = _target_machine()
    mod = parse(llvm_ir)
    mod.triple = triple()
    mod.data_layout = data_layout()
    optimize(mod, opt)
    return (_fast_tm() if opt <= 0 else _asm_tm).emit_assembly(mod)


def emit_relocatable(llvm_ir, opt: int = 1) -> bytes:
    """Object code of a module for linking into a shared library (position independent, the
    default code model; the host CPU and features): ahead-of-time export."""
    cpu, features = host_cpu()
    tm = llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=max(opt, 1), reloc="pic", codemodel="default")
    mod = parse(llvm_ir)
    mod.triple = triple()
    mod.data_layout = str(tm.target_data)
    optimize(mod, opt, tm)
    return tm.emit_object(mod)


def optimized_ir(llvm_ir, opt: int = 1) -> str:
    mod = parse(llvm_ir)
    mod.triple = triple()
    mod.data_layout = data_layout()
    optimize(mod, opt)
    return str(mod)
