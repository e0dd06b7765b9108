"""Emission: a Plan -> LLVM IR (``llvmlite.ir`` only: nothing here compiles or runs code).

``segment.SegmentEmitter`` emits ``i32 @seg(ptr slots)`` for a run of native steps, one call per
step into the emitter of its kind: ``loops`` (a fused loop nest; elementwise bodies from ``ops``
/ ``complex`` through ``rules``, memory access from ``memory``), ``rowfuse``, the matmul kernels
(``matmul/``, with ``epilogue``), ``scan``, ``arg``, ``scatter``, ``control`` (native branches
and loops around sub-graph segments); ``stacks`` and ``interrupt`` emit the run-time-length
descriptors and the Ctrl-C polls; ``segment.emit_kernel`` wraps a native program in the pyabi
contract ``i32 @kernel(ptr bufs)``.

Invariants: the emitters carry out the plan and never change it (what is materialised, where,
and in which order is the planner's); they import ``plan/``, ``abi``, ``engine/`` (symbols and
the host CPU), ``mathlib/`` and ``matmul/``, never ``runtime/``.
"""
