"""The LLVM backend: graph -> fused, vectorised, multi-core native code.

Pipeline (one module per stage, imports flow downwards):

- ``fuse.py``      partition: views (broadcast/transpose/slice/rev/reshape/iota cost nothing),
                   loop groups (elementwise chains + take + reduction sinks, one loop nest each),
                   matmul steps, scan steps, copy groups (concatenate/pad), NumPy fallbacks;
                   cycle-free joins, topological schedule, output aliasing.
- ``buffers.py``   slots (inputs, outputs, constants, temporaries, fallback results) and one
                   temporary arena per call planned from liveness.
- ``emit_ops.py``  elementwise lowering table keyed by primitive name (real and complex).
- ``emit_loops.py`` one loop nest per group: dim collapsing, explicit <VL x T> vector code,
                   U-way interleave, masked tails, reductions (documented order), thread split.
- ``emit_memory.py`` loads/stores/gathers/scatters, complex pairs, bounds-checked take,
                   argmax/argmin accumulators.
- ``emit_scan.py`` cumsum/cumprod. ``emit_steps.py`` segments ``i32 @seg(ptr slots)``, matmul
                   calls (``matmul.py``), the ``i32 @kernel(ptr bufs)`` wrapper (pyabi contract).
- ``control.py``   cond/while/scan/while_record as native loops with compiled sub-graphs;
                   ``control_fallback.py`` the same driven from Python (sub-graphs compiled).
- ``stacks.py``    stacks (run-time leading dimension): descriptors, the growable tape of a
                   while_record, ownership, NumPy arrays in and out.
- ``executable.py`` ``compile_graph(graph) -> Executable``: compile, run (native or hybrid),
                   ``llvm_ir``, ``asm()``, ``memory_analysis()``, ``describe()``,
                   ``native_entry()`` (a pyabi METH_FASTCALL entry for ``FastDispatch``).
- ``tiers.py``     the hot tier: math-heavy signatures recompiled (math inlined, O1) in a
                   background thread once their calls have run long enough.

Only ``jit.py`` touches ``llvmlite.binding``.
"""
from __future__ import annotations


def compile_graph(graph):
    """Compile ``graph`` to one native module (NumPy fallback for equations without lowering)."""
    from .executable import compile_graph as _compile
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
