"""The LLVM backend: graph -> fused, vectorised, multi-core native code.

Pipeline; each part imports only the parts listed before it (tests/test_import_layout.py):

- ``abi.py``       the contract of native code with Python: error bits, stack descriptors.
- ``plan/``        Graph -> Plan, pure data (no llvmlite). ``partition.py``: views
                   (broadcast/transpose/slice/rev/reshape/iota cost nothing; ``views.py``),
                   then one step per equation or group, each kind with its record and legality
                   test in ``steps.py`` (loop groups of elementwise chains + gathers + reduction
                   sinks, matmuls, scans, argmax, scatters, native control flow, NumPy
                   fallbacks; ``lowering.py`` names what the emitters can lower), view sinking
                   first (``sinkviews.py``), row and epilogue fusion last (``rowfuse.py``,
                   ``epilogue.py``); cycle-free joins, topological schedule, output aliasing.
                   ``buffers.py``: slots and one arena per call from liveness. ``verify.py``
                   checks both whenever ``config.check_ir`` is on (always under pytest).
- ``engine/``      ``jit.py`` (the only module that touches ``llvmlite.binding``: host target,
                   compile, symbols, one engine per graph module), ``objects.py`` (object
                   code as data: hashes, symbols, entries, hand-over), ``diskcache.py``,
                   ``threads.py`` (the native pool), ``loaded.py`` (modules freed with their
                   last executable), ``parallel.py`` / ``split.py`` / ``workers.py`` (large
                   modules compiled in parts on worker processes).
- ``mathlib/``     the vector math library;  ``matmul/``: tiled kernels and BLAS.
- ``emit/``        Plan -> LLVM IR, one emitter per step kind: ``loops.py`` (dim collapsing,
                   ``<VL x T>`` code, U-way interleave, masked tails, reductions in a documented
                   order, thread split), ``rowfuse.py``, ``scan.py``, ``arg.py``, ``scatter.py``,
                   ``control.py`` (cond/while/scan/while_record around sub-graph segments),
                   ``epilogue.py``; elementwise rules ``ops.py`` / ``complex.py`` (``rules.py``
                   picks one), ``memory.py``; ``segment.py``: ``i32 @seg(ptr slots)``, matmul
                   calls and the ``i32 @kernel(ptr bufs)`` wrapper (pyabi contract);
                   ``stacks.py`` (run-time leading dimensions), ``interrupt.py`` (Ctrl-C).
- ``runtime/``     ``executable.py``: ``compile_graph(graph) -> Executable`` (native or
                   hybrid runs, ``llvm_ir``, ``asm()``, ``memory_analysis()``, ``describe()``,
                   ``native_entry()``); ``control_fallback.py``, ``stack_arrays.py``; native
                   entries ``pyobj.py`` / ``pyabi.py`` / ``pyabi_reuse.py`` and the dispatch
                   type ``pyabi_dispatch.py``; ``tiers.py`` (the hot tier: math inlined, O1);
                   ``aot.py`` (``tj.export``: a shared library with a C header).
"""
from __future__ import annotations


def compile_graph(graph):
    """Compile ``graph`` to one native module (NumPy fallback for equations without lowering)."""
    from .runtime.executable import compile_graph as _compile
    return _compile(graph)


def compile_graph_with_objects(graph, trusted=None):
    """``(compile_graph(graph), object code)``: the object code of the graph's modules as
    compiled or loaded now, ``[(cache key, symbols, opt, bytes)]`` (empty for modules this
    process had loaded already), for an artifact. ``trusted`` (``trusted_objects``) is loaded
    instead of compiling a module whose cache key it holds."""
    from .engine import objects
    with objects.object_code(trusted) as record:
        exe = compile_graph(graph)
    return exe, list(record)


def sealed_objects(record) -> list:
    """Object code of ``compile_graph_with_objects`` as artifact records (dicts: key, symbols,
    opt, data, mac, and the host: cpu, features, llvmlite), each authenticated with this
    user's secret (``diskcache.seal``); none when there is no trusted cache directory."""
    from .engine import jit, objects
    out = []
    for key, symbols, opt, data in record:
        mac = objects.seal_object(key, symbols, data)
        if mac is not None:
            out.append(dict(jit.host_identity(), key=key, symbols=list(symbols), opt=opt,
                            data=data, mac=mac))
    return out


def trusted_objects(records) -> dict:
    """cache key -> (symbols, bytes) of the artifact records made for this host (CPU, features,
    llvmlite) whose MAC this user's secret verifies; the others are left out (their modules
    are compiled from the IR)."""
    from .engine import jit, objects
    host = jit.host_identity()
    out = {}
    for r in records:
        if all(r.get(k) == v for k, v in host.items()) and \
                objects.authentic_object(r["key"], r["symbols"], r["data"], r["mac"]):
            out[r["key"]] = (tuple(r["symbols"]), r["data"])
    return out


def describe_stage(compiled, stage: str) -> str:
    """Text of a backend stage for a ``Compiled`` entry: ``"fused"`` (the fusion plan) or
    ``"llvm"`` (the module)."""
    exe = compiled.executable
    if not hasattr(exe, "describe"):
        exe = compile_graph(compiled.graph)
    if stage == "fused":
        return exe.describe()
    if stage == "llvm":
        return exe.llvm_ir
    raise ValueError(f"unknown stage {stage!r}; use 'fused' or 'llvm'")
