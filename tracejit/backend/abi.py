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
    "histogram_range": 64,  # np.histogram of NaN/inf data with no range= (ValueError)
    "bincount_negative": 128,  # bincount of a negative value (ValueError)
    "nan_to_int": 256,  # a NaN scalar stored into an integer array (ValueError)
    "inf_to_int": 512,  # an infinite scalar stored into an integer array (OverflowError)
    "scalar_out_of_bounds": 1024,  # a scalar outside the integer array's range (OverflowError)
    "all_nan_slice": 2048,  # nanargmax/nanargmin of an all-NaN slice (ValueError)
    "singular_matrix": 4096,  # numpy.linalg.solve / inv (LinAlgError)
    "not_positive_definite": 8192,  # numpy.linalg.cholesky (LinAlgError)
    "mask_values": 16384,  # x[mask] = values: not one value per True of a traced mask (ValueError)
    "python_int_out_of_bounds": 32768,  # a computed Python int next to a narrower array
    "python_int_overflow": 65536,  # a Python-int computation beyond int64 (OverflowError)
    "python_int_zero_division": 131072,  # Python ints: k // 0, k % 0 (ZeroDivisionError)
    "python_int_negative_shift": 262144,  # Python ints: k << -1 (ValueError)
    "python_float_division": 2097152,  # Python floats: a / 0.0 (ZeroDivisionError)
    "python_float_floor_division": 4194304,  # Python floats: a // 0.0, a % 0.0, divmod
    "python_zero_power": 1048576,  # Python numbers: 0 ** -1, 0.0 ** -0.5 (ZeroDivisionError)
    "python_float_overflow": 16777216,  # Python floats: 1e308 ** 2.0 (OverflowError)
    "empty_selection": 8388608,  # x[mask].max() / .min() of no selected element (ValueError)
    "no_convergence": 33554432,  # LAPACK eigh / svd / eig failed (LinAlgError)
}

DESC_BYTES = 16            # a stack descriptor: {ptr data, i64 length}
