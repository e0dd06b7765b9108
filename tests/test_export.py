"""Ahead-of-time export to a C library (issue 17, item 4): ``tj.export`` writes ``<name>.so``
and ``<name>.h``; a C program compiled with the system ``cc`` against them gives the results
of tracejit in Python (to 1 ulp; in practice bit for bit), and the library needs nothing but
the C runtime (``ldd``)."""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracejit as tj

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("ldd") is None,
                                reason="needs a C compiler (cc) and ldd")


def logistic(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / y.shape[0] + 0.1 * np.sum(np.tanh(w) ** 2)


def field(x, t):
    """float32, 2**18 elements: the thread pool splits it."""
    return np.exp(-x * x) * np.sin(t * x) + np.log1p(x * x)


def _c_array(name, a):
    ctype = {"float64": "double", "float32": "float"}[a.dtype.name]
    body = ", ".join(float(v).hex() for v in a.ravel())
    return f"static const {ctype} {name}[{max(a.size, 1)}] = {{{body}}};"


def _run_c(directory, name, decls, body):
    src = os.path.join(directory, "main.c")
    with open(src, "w") as f:
        f.write("\n".join(["#include <stdio.h>", "#include <stdlib.h>", f'#include "{name}.h"',
                           *decls, "int main(void) {", body, "return 0; }", ""]))
    exe = os.path.join(directory, "main")
    r = subprocess.run(["cc", "-O1", "-o", exe, src, f"-I{directory}",
                        os.path.join(directory, f"{name}.so"), f"-Wl,-rpath,{directory}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def _ulps(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return np.max(np.abs(got - want) / np.spacing(np.abs(want).astype(want.dtype)), initial=0)


def _only_the_c_runtime(so):
    out = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
    libs = {m.group(1) for m in re.finditer(r"^\s*(\S+)", out, re.M)}
    allowed = re.compile(r"(linux-vdso|libc|libm|libpthread|libmvec|ld-linux[-\w]*)\.so")
    assert all(allowed.match(os.path.basename(lib)) for lib in libs), out


def test_function_and_gradient_from_c(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(64, 5))
    w, y = rng.normal(size=5), (rng.random(64) < .5).astype(float)
    so, h = tj.export(logistic, w, X, y, name="model", derivatives=("grad", "hessian"),
                      directory=str(tmp_path))
    header = open(h).read()
    assert "int32_t model_grad(const double *a0, const double *a1, const double *a2, " \
           "double *out0);" in header
    _only_the_c_runtime(so)
    out = _run_c(str(tmp_path), "model", [_c_array("w", w), _c_array("X", X), _c_array("y", y)],
                 "double v, g[5], H[25]; int rc = model(w, X, y, &v);"
                 " rc |= model_grad(w, X, y, g); rc |= model_hessian(w, X, y, H);"
                 ' printf("%d %a", rc, v); for (int i = 0; i < 5; i++) printf(" %a", g[i]);'
                 ' for (int i = 0; i < 25; i++) printf(" %a", H[i]); printf("\\n");')
    assert out[0] == "0"
    got = np.array([float.fromhex(t) for t in out[1:]])
    assert _ulps(got[0], tj.jit(logistic)(w, X, y)) <= 1
    assert _ulps(got[1:6], tj.grad(logistic)(w, X, y)) <= 1
    assert _ulps(got[6:], tj.hessian(logistic)(w, X, y).ravel()) <= 1


def test_threaded_float32_kernel_from_c(tmp_path):
    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32)
    so, _ = tj.export(field, x, 2.5, name="fieldlib", directory=str(tmp_path))
    _only_the_c_runtime(so)
    np.save(tmp_path / "x.npy", x)
    x.tofile(tmp_path / "x.bin")
    out = _run_c(str(tmp_path), "fieldlib", [],
                 f"static float x[{x.size}], y[{x.size}]; double t = 2.5;"
                 f' FILE *f = fopen("{tmp_path}/x.bin", "rb");'
                 f" if (fread(x, sizeof(float), {x.size}, f) != {x.size}) return 1; fclose(f);"
                 " int rc = fieldlib(x, &t, y);"
                 f' f = fopen("{tmp_path}/y.bin", "wb"); fwrite(y, sizeof(float), {x.size}, f);'
                 ' fclose(f); printf("%d\\n", rc);')
    assert out == ["0"]
    got = np.fromfile(tmp_path / "y.bin", dtype=np.float32)
    assert _ulps(got, tj.jit(field)(x, 2.5)) <= 1


def test_what_cannot_be_exported_is_named(tmp_path):
    x = np.ones(3)
    with pytest.raises(tj.InputError, match="unknown derivative"):
        tj.export(logistic, x, np.ones((2, 3)), np.ones(2), derivatives=("curl",),
                  directory=str(tmp_path))
    with pytest.raises(tj.InputError, match="not a C identifier"):
        tj.export(np.sin, x, name="my-model", directory=str(tmp_path))
    with pytest.raises(tj.InputError, match="value .or range. of a Python int"):
        tj.export(lambda z, n: z[:n] * 2, x, 2, name="m", directory=str(tmp_path))
    with pytest.raises(tj.UnsupportedError, match="not fully native"):    # a NumPy fallback
        tj.export(lambda z: np.arcsinh(z) * 2, x.astype(complex), name="m",
                  directory=str(tmp_path))


def test_sort_from_c(tmp_path):
    """The native sort library is linked in (stable argsort, sort, searchsorted)."""
    def ranks(x):
        return np.sort(x)[::8] + np.searchsorted(np.sort(x), x[:5]) + \
            np.argsort(x, kind="stable")[:5]
    x = np.random.default_rng(0).integers(0, 20, 40).astype(np.float64)
    so, _ = tj.export(ranks, x, name="ranks", directory=str(tmp_path))
    _only_the_c_runtime(so)
    want = np.sort(x)[::8] + np.searchsorted(np.sort(x), x[:5]) + \
        np.argsort(x, kind="stable")[:5]
    out = _run_c(str(tmp_path), "ranks", [_c_array("x", x)],
                 "double out[5]; if (ranks(x, out)) return 1;\n"
                 'for (int k = 0; k < 5; k++) printf("%a\\n", out[k]);')
    assert np.array_equal([float.fromhex(v) for v in out], want)


def test_fft_from_c(tmp_path):
    """The native FFT library and its tables are linked in (real and complex transforms)."""
    def spectrum(x):
        return np.abs(np.fft.rfft(x)) ** 2 + np.fft.fft(x[:8] + 0j).real.sum()
    x = np.random.default_rng(0).standard_normal(64)
    so, _ = tj.export(spectrum, x, name="spec", directory=str(tmp_path))
    _only_the_c_runtime(so)
    want = tj.jit(spectrum)(x)
    out = _run_c(str(tmp_path), "spec", [_c_array("x", x)],
                 "double out[33]; if (spec(x, out)) return 1;\n"
                 'for (int k = 0; k < 33; k++) printf("%a\\n", out[k]);')
    assert _ulps([float.fromhex(v) for v in out], want) <= 1
