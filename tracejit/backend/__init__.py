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
                   compile, symbols), ``diskcache.py``, ``threads.py`` (the native pool).
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
                   type ``pyabi_dispatch.py``; ``tiers.py`` (the hot tier: math inlined, O1).
"""
from __future__ import annotations


def compile_graph(graph):
    """Compile ``graph`` to one native module (NumPy fallback for equations without lowering)."""
    from .runtime.executable import compile_graph as _compile
    return _compile(graph)


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
