"""The NPBench-like kernels (tests/kernels/npbench_like.py) run unmodified under ``tracejit.trace``
on the llvm backend: the returned values and the final contents of every argument match NumPy's
(same dtype and shape; float64 to rtol 1e-10, float32 to rtol 1e-5, integers exactly), on the
first call (trace + compile) and on a second call with fresh inputs (the cached path).

Kernels that fail today are ``xfail(strict=True, raises=<the error they raise>)``: one that starts
passing, or fails differently (another exception, or wrong values: an AssertionError), is
reported. ``python tests/kernels/run_kernels.py`` gives the full table on both backends.
"""
import copy
import inspect
import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tracejit as tj  # noqa: E402
from tracejit.errors import ConcretizationError, UnsupportedError  # noqa: E402
from tests.kernels.npbench_like import KERNELS, NAMES  # noqa: E402
from tests.kernels.run_kernels import compare_results  # noqa: E402

# Smaller inputs than run_kernels.py for the loop-heavy kernels (unrolled loops: trace and
# compile time grow with the trip count), to keep this file fast.
SIZES = {
    "cholesky": dict(N=7),
    "lu": dict(N=7),
    "ludcmp": dict(N=7),
    "symm": dict(M=6, N=5),
    "trmm": dict(M=6, N=5),
    "gramschmidt": dict(M=6, N=5),
    "seidel_2d": dict(TSTEPS=3, N=7),
    "adi": dict(TSTEPS=3, N=7),
    "scattering_self_energies": dict(NE=2),
    "lenet": dict(N=1),
}

_CONTROL = "Python control flow (if/while) on a traced value"
XFAIL = {
    # x[mask] selections (numpy/selection.py) cover elementwise use, reductions and stores; the
    # compaction Z = Z[I] that later iterations use as an array of its own length cannot be
    "mandelbrot2": (ConcretizationError, "N_[Xi[I], Yi[I]] = i + 1 with a traced mask I "
                                         "(data-dependent shape)"),
}


def _params():
    out = []
    for name in NAMES:
        marks = []
        if name in XFAIL:
            exc, reason = XFAIL[name]
            marks.append(pytest.mark.xfail(strict=True, raises=exc, reason=reason))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def _call(f, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(*args)


@pytest.mark.parametrize("name", _params())
def test_kernel_matches_numpy(name):
    fun, init = KERNELS[name]
    base = init(**SIZES.get(name, {}))
    arg_names = list(inspect.signature(fun).parameters)
    ref_args = copy.deepcopy(base)
    ref_ret = _call(fun, ref_args)

    traced = tj.trace(fun, backend="llvm")
    for call in ("first call", "second call"):
        got_args = copy.deepcopy(base)
        got_ret = _call(traced, got_args)
        problems = compare_results(got_ret, ref_ret, got_args, ref_args, arg_names)
        assert not problems, f"{name} ({call}): " + "; ".join(f"{w}: {d}" for w, d in problems)
