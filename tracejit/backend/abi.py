"""The contract between emitted code and the Python side: error bits and the stack descriptor.

Every slot array of a call points at one error cell ``{i32 error bits, i32 start}``. A native
step that fails ORs one of these bits into the cell and the segment returns after that step;
``runtime/executable.py`` (``_raise``) turns the bits into the exception the interpreter would
raise. A stack's slot points at a descriptor ``{ptr data, i64 length}`` of ``DESC_BYTES``.

Invariants: the bits are distinct powers of two; this module imports nothing (the planner, the
emitters, the matmul kernels and the runtime all read it).
"""

ERR_INDEX = 1              # a gather or scatter index out of range (IndexError)
ERR_WHILE_LIMIT = 2        # while_loop ran more than config.max_while_iterations bodies
ERR_NOMEM = 4              # malloc/realloc of a stack or scratch failed (MemoryError)
ERR_STACK_LENGTH = 8       # the stacks of a scan[length=None] differ in length
ERR_INTERRUPT = 16         # SIGINT arrived while the call ran (KeyboardInterrupt)
# a failed run-time check (``ops/elementwise.py``, ``check_p``): one bit per error name; the
# exception and message are ``elementwise.ERRORS[name]``
CHECK_BITS = {
    "negative_power": 32,  # an integer power with a negative exponent (ValueError)
    "singular_matrix": 64,         # numpy.linalg.solve / inv (LinAlgError)
    "not_positive_definite": 128,  # numpy.linalg.cholesky (LinAlgError)
}

DESC_BYTES = 16            # a stack descriptor: {ptr data, i64 length}
