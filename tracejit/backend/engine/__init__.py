"""The process's native engine: the JIT (``jit``: target machine, compile, load, symbols; the
only module of tracejit that imports ``llvmlite.binding``), object code as data (``objects``:
hashes, symbols, cache entries, hand-over between processes), the on-disk object cache
(``diskcache``) and the native thread pool (``threads``) that parallel loops call.

Invariant: imports nothing of the backend but itself; every other native part builds on it.
"""
