"""The hot tier (``backend/runtime/tiers.py``): a math-heavy signature is recompiled with the math
bodies inlined at O1 once its calls have run long enough, and switches to that kernel without
changing a bit of any result (no fast-math; explicit fma in both tiers)."""
import gc
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.runtime import tiers
from tracejit.backend.engine import jit as jitmod


def jit(fun):
    return tj.jit(fun, backend="llvm")


def w1(x, y):
    return np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x)


def data(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(3 * rng.standard_normal(n)).astype(dtype) for _ in range(2)]


@pytest.fixture(autouse=True)
def hot_tier_on():
    saved = tj.config.hot_tier
    tj.config.hot_tier = True            # also when the suite runs with TRACEJIT_HOT_TIER=0
    yield
    tj.config.hot_tier = saved
    # leave nothing behind for the next test: no compile running, no cyclic garbage (IR
    # modules) whose collection later would move reference counts that a leak test watches
    assert tiers.wait_hot_compiles(120)
    gc.collect()


@pytest.fixture
def threads():
    saved = tj.config.num_threads
    yield
    tj.config.num_threads = saved


def both_tiers(f, *args, threads_list=(1, 2)):
    """Results at the base tier and at the hot tier, for each thread count."""
    exe = f.lower(*args).executable
    assert exe.tier == "base" and exe._tier_cell is not None, exe.describe()
    base = []
    for n in threads_list:
        tj.config.num_threads = n
        base.append((f(*args), f(*args)))          # interpreter path, then the native entry
    assert exe.tier_up() and exe.tier == "hot"
    hot = []
    for n in threads_list:
        tj.config.num_threads = n
        hot.append((f(*args), f(*args)))
    return exe, base, hot


def assert_same(a, b):
    for u, v in zip(np.atleast_1d(a) if not isinstance(a, tuple) else a,
                    np.atleast_1d(b) if not isinstance(b, tuple) else b):
        u, v = np.asarray(u), np.asarray(v)
        assert u.dtype == v.dtype and u.shape == v.shape
        assert u.tobytes() == v.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_w1_bit_identical(dtype, threads):
    x, y = data(200_000, dtype)
    f = jit(w1)
    exe, base, hot = both_tiers(f, x, y)
    for pair in base + hot:
        for r in pair:
            assert_same(r, base[0][0])
    assert re.search(r"declare .*@\"?tj_math_tanh_", exe.llvm_ir)     # base: the library's
    assert re.search(r"define internal .*@\"?tj_math_tanh_", exe._hot_code.llvm_ir)  # inlined
    assert exe._tier_cell.kernel == jitmod.function_address(exe._hot_code.kernel_name,
                                                            exe._hot_module.code)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reductions_bit_identical(dtype, threads):
    x, y = data(300_000, dtype, seed=1)
    f = jit(lambda x, y: (np.sum(np.exp(-x * x) * np.log1p(y * y)),
                          np.max(np.sin(x) * np.cosh(0.1 * y)),
                          np.sum(np.tanh(x.reshape(600, 500)), axis=0)))
    _, base, hot = both_tiers(f, x, y)
    for pair in base + hot:
        for r in pair:
            assert_same(r, base[0][0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradient_bit_identical(dtype, threads):
    x, y = data(100_000, dtype, seed=2)
    g = jit(tj.grad(lambda x, y: np.sum(w1(x, y) * np.log1p(x * x)), argnums=(0, 1)))
    _, base, hot = both_tiers(g, x, y)
    for pair in base + hot:
        for r in pair:
            assert_same(r, base[0][0])


def test_gradient_through_a_loop_bit_identical(threads):
    def pendulum(theta0, omega0):
        def step(i, s):
            th, om = s
            return th + 0.01 * om, om - 0.01 * (9.81 * np.sin(th) + 0.3 * np.tanh(om))
        th, _ = tj.fori_loop(0, 50, step, (theta0, omega0))
        return np.sum(np.exp(-th * th))
    x, w = np.linspace(-1, 1.5, 1000), np.linspace(0.5, 0.2, 1000)
    g = jit(tj.grad(pendulum, argnums=(0, 1)))
    _, base, hot = both_tiers(g, x, w, threads_list=(1,))
    assert_same(base[0][0], hot[0][0])
    assert_same(base[0][1], hot[0][1])


def test_automatic_tier_up(monkeypatch):
    """The countdown is shared by the interpreter path and the native entry; at zero the
    compile is queued, and later calls (both paths) run the hot kernel."""
    monkeypatch.setattr(tiers, "HOT_AFTER_NS", 1e6)
    x, y = data(100_000, np.float64, seed=3)
    f = jit(w1)
    want = f(x, y)
    exe = f.lower(x, y).executable
    calls = exe._tier_cell.countdown
    assert 1 <= calls < 100
    for _ in range(calls + 2):
        assert_same(f(x, y), want)
    assert tiers.wait_hot_compiles(60)
    assert exe.tier == "hot"
    assert exe._tier_cell.kernel == jitmod.function_address(exe._hot_code.kernel_name,
                                                            exe._hot_module.code)
    assert_same(f(x, y), want)                           # native entry, hot kernel
    assert_same(exe([x, y])[0], want)                    # interpreter path, hot kernel


def test_candidates_only():
    x = np.linspace(0, 1, 1000)
    cell = lambda f, *args: jit(f).lower(*args).executable._tier_cell  # noqa: E731
    assert cell(lambda x, y: x * y + 1, x, x) is not None                   # arithmetic too
    assert cell(lambda x: np.tanh(x) + 1, x[:1]) is not None   # a candidate, if a slow one
    assert cell(lambda x: x * 2.0, x[:1]).countdown > 10 ** 6                # tiny: never hot
    a = np.ones((64, 64))
    mm = jit(lambda a: np.tanh(a @ a)).lower(a).executable                # already O1
    assert mm.opt == 1 and mm._tier_cell is None and not mm.tier_up()


def test_dense_hessian_bit_identical(threads):
    """Arithmetic-only kernels tier up too (W6's Hessian: a long fused [100,100] body)."""
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x = np.random.default_rng(0).random(100)
    exe, base, hot = both_tiers(jit(tj.hessian(rosen)), x)
    assert "tj_math_" not in exe.llvm_ir
    for pair in base + hot:
        for r in pair:
            assert_same(r, base[0][0])


def test_config_switch():
    x = np.linspace(0, 1, 1000)
    saved = tj.config.hot_tier
    try:
        tj.config.hot_tier = False
        exe = jit(lambda x: np.exp(x) * 3.0).lower(x).executable
        assert exe._tier_cell is None and not exe.tier_up() and exe.tier == "base"
    finally:
        tj.config.hot_tier = saved
    code = ("import tracejit as tj; print(tj.config.hot_tier)")
    env = dict(os.environ, TRACEJIT_HOT_TIER="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_foreground_compiles_while_the_background_compiles(monkeypatch):
    monkeypatch.setattr(tiers, "HOT_AFTER_NS", 1.0)
    x, y = data(50_000, np.float64, seed=4)
    fs = [jit(lambda x, y, k=k: np.tanh(x * k) + np.exp(-y * y / k)) for k in range(1, 6)]
    wants = [f(x, y) for f in fs]                 # each one's first call queues its tier-up
    wants2 = [f(y, x) for f in fs]                # new signatures compiled meanwhile
    assert tiers.wait_hot_compiles(120)
    for f, want, want2 in zip(fs, wants, wants2):
        assert f.lower(x, y).executable.tier == "hot"
        assert_same(f(x, y), want)
        assert_same(f(y, x), want2)


_DISK = """
import numpy as np, tracejit as tj
from tracejit.backend.engine import jit as j
f = tj.jit(lambda x, y: np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x))
x = np.linspace(-2, 2, 5000)
r = f(x, x)
exe = f.lower(x, x).executable
assert exe.tier_up() and exe.tier == "hot"
assert f(x, x).tobytes() == r.tobytes()
print(j.stats["compiled"], j.stats["loaded"])
"""


def test_disk_cache_keeps_both_tiers(tmp_path):
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path), TRACEJIT_HOT_TIER="1")
    runs = [subprocess.run([sys.executable, "-c", _DISK], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (c0, l0), (c1, l1) = [map(int, r.stdout.split()) for r in runs]
    assert l0 == 0 and (c1, l1) == (c0 - 2, 2)     # base and hot stored, then both loaded
    assert len(list(tmp_path.glob("*.o"))) == 2


def test_hot_tier_key_differs():
    x = np.linspace(0, 1, 100)
    exe = jit(lambda x: np.exp(x) + 1).lower(x).executable
    hot = exe._emit(hot=True)
    assert hot.name != exe._emit(hot=False).name
    assert jitmod.cache_key(hot.llvm_ir, 1) != jitmod.cache_key(exe.llvm_ir, 0)
