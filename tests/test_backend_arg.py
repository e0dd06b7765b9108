"""argmax / argmin over any axis natively (emit_arg: row walk with vector lanes): NumPy's first
occurrence on ties and first NaN rules, every real and bool dtype, axes before the last."""
import numpy as np
import pytest

import tracejit as tj


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("fnp", [np.argmax, np.argmin], ids=["argmax", "argmin"])
def test_arg_any_axis_matches_numpy(dt, fnp):
    rng = np.random.default_rng(0)
    for shape in ((5, 7), (3, 4, 6), (1, 9, 2), (6,), (4, 37), (3, 33, 5)):
        for axis in range(len(shape)):
            x = (rng.standard_normal(shape) * 2).astype(dt)
            if np.dtype(dt).kind == "f" and x.size > 4:
                x.reshape(-1)[[1, 3, x.size - 2]] = np.nan
            ties = np.round(x) if np.dtype(dt).kind == "f" else x
            f = tj.jit(lambda a: fnp(a, axis=axis), backend="llvm")
            for arr in (x, ties):
                np.testing.assert_array_equal(f(arr), fnp(arr, axis=axis))
            assert f.lower(x).executable.native


def test_arg_of_a_fused_value_is_one_kernel():
    x = np.random.default_rng(1).standard_normal((30, 40))
    f = tj.jit(lambda a: np.argmin(np.sin(a) * a, axis=0), backend="llvm")
    np.testing.assert_array_equal(f(x), np.argmin(np.sin(x) * x, axis=0))
    exe = f.lower(x).executable
    assert exe.native and "argmin[axis=0]" in exe.describe()
