"""Matrix products: register-tiled kernels (``kernel``), the emitters of whole, row-range and
batched products (``tiled``), and OpenBLAS discovery and calls (``blas``).

Invariant: imports only ``abi``, ``engine/``, ``plan.lowering`` (the dtypes it handles, checked
against its own table) and itself; the segment emitter (``emit/segment.py``) calls it.
"""
