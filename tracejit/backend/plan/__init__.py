"""Planning: Graph -> Plan, pure data (no llvmlite, no emitter, no machine state but one number).

``partition.partition(graph, vector_bytes)`` sinks views into producers (``sinkviews``), assigns
every equation to a step (``steps``: one record and one legality test per step kind, reading
the names and dtypes of ``lowering``), fuses matrix-vector pairs row-wise (``rowfuse``) and
elementwise consumers into matmul kernels (``epilogue``), and fixes the execution order;
``buffers.plan_buffers(plan)`` gives every materialised value one slot and the temporaries one
arena. ``verify`` checks both (under pytest: ``config.check_ir``).

Invariant: nothing here imports ``llvmlite`` or another part of the backend except ``abi``;
``emit/`` and ``runtime/`` import this package, never the reverse.
"""
