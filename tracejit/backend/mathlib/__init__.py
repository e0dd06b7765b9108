"""Vector math functions as native library code: ``library`` (``call_math``, the shared module
compiled once per process and cached on disk) built from the polynomial kernels of ``emitter``
(f64), ``trig``, ``log`` and ``f32``.

Invariant: imports only ``engine/`` and itself; the results are fixed by the code (no libm
dependence except the functions ``library`` documents as calls).
"""
