"""Run the benchmark workloads W1-W8 (+ pendulum W9, while-loop gradient W10, in-place loops
W11, compile scaling W12, loops and scaled products against jax and numba W13, numpy.linalg
and a Gaussian-process gradient against jax and autograd W14, numpy.fft W15) and write
bench/results.md and a chart.

    python bench/run.py [--quick] [--only W1,W4]

NumPy is always measured; jax, numba and torch columns appear when they are importable. Every
figure is min and median of several repeats in this one run, and ratios are against NumPy.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

# NumPy references run one thread like every other column: OpenBLAS with 2 threads on this
# shared 2-core VM collapses (W3 NumPy measured 48 ms instead of ~1.4 ms) when the other core
# is busy. Must be set before NumPy loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# jax (XLA:CPU) is asked for one thread too, but XLA still splits work over its own threads
# (measured: CPU time twice the wall time), so its rows are timed with the whole process pinned
# to one core (harness.one_core); tracejit's 2-thread rows are labelled as such.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, _ROOT)            # measure this checkout, not whatever tracejit is installed
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)      # also in fresh processes (W5)
from harness import fresh_process, machine, one_core, peer, timeit  # noqa: E402

import tracejit as tj  # noqa: E402

ROWS = []        # (workload, case, impl, min_s, median_s)
NOTES = []


def record(workload, case, impl, fn, pinned=False, **kw):
    """Time ``fn``; ``pinned``: with every thread of the process on one CPU (``one_core``)."""
    try:
        if pinned:
            with one_core():
                lo, med = timeit(fn, **kw)
        else:
            lo, med = timeit(fn, **kw)
    except Exception as e:  # noqa: BLE001 - a failing peer is reported, not fatal
        NOTES.append(f"{workload} {case} {impl}: failed ({type(e).__name__}: {str(e)[:120]})")
        return
    ROWS.append((workload, case, impl, lo, med))
    print(f"  {workload} {case} | {impl}: {_fmt(lo)} / {_fmt(med)}", file=sys.stderr, flush=True)


def with_threads(n, fn):
    def run():
        saved = tj.config.num_threads
        tj.config.num_threads = n
        try:
            return fn()
        finally:
            tj.config.num_threads = saved
    return run


# W1 ------------------------------------------------------------------------------------------
def expr(x, y):
    return np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x)


def w1(quick):
    jax, numba = peer("jax"), peer("numba")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)     # else jax silently computes f64 in f32
    for dt in (np.float64, np.float32):
        n = 10 ** 6
        x = np.random.default_rng(0).standard_normal(n).astype(dt)
        y = np.random.default_rng(1).standard_normal(n).astype(dt)
        case = f"fused expr n=1e6 {np.dtype(dt).name}"
        record("W1", case, "numpy", lambda: expr(x, y))
        f = tj.trace(expr)
        f(x, y)
        record("W1", case, "tracejit 1 thread", with_threads(1, lambda: f(x, y)))
        record("W1", case, "tracejit 2 threads", with_threads(2, lambda: f(x, y)))
        if jax is not None:
            import jax.numpy as jnp
            jf = jax.jit(lambda a, b: jnp.tanh(a) * jnp.exp(-0.5 * b * b) + a * b / (1 + a * a))
            jx, jy = jax.device_put(x), jax.device_put(y)
            jf(jx, jy).block_until_ready()
            record("W1", case, "jax.jit (1 core)", lambda: jf(jx, jy).block_until_ready(),
                   pinned=True)
        if numba is not None:
            nf = numba.njit(expr)
            nf(x, y)
            record("W1", case, "numba", lambda: nf(x, y))


# W2 ------------------------------------------------------------------------------------------
def w2(quick):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10000, 100))
    yv = np.sign(rng.standard_normal(10000))
    w = rng.standard_normal(100) * 0.01

    def loss(w, X, y):
        return np.mean(np.log1p(np.exp(-y * (X @ w)))) + 1e-3 * np.sum(w * w)

    def numpy_grad(w, X, y):
        z = -y * (X @ w)
        s = 1.0 / (1.0 + np.exp(-z))
        return X.T @ (-y * s) / X.shape[0] + 2e-3 * w

    case = "logistic grad X 10000x100 f64"
    record("W2", case, "numpy (hand-written)", lambda: numpy_grad(w, X, yv))
    g = tj.trace(tj.grad(loss))
    g(w, X, yv)
    record("W2", case, "tracejit 1 thread", with_threads(1, lambda: g(w, X, yv)))
    jax = peer("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jg = jax.jit(jax.grad(lambda w, X, y: jnp.mean(jnp.log1p(jnp.exp(-y * (X @ w))))
                              + 1e-3 * jnp.sum(w * w)))
        args = [jax.device_put(a) for a in (w, X, yv)]
        jg(*args).block_until_ready()
        record("W2", case, "jax.jit(grad) (1 core)", lambda: jg(*args).block_until_ready(),
               pinned=True)


# W3 ------------------------------------------------------------------------------------------
def w3(quick):
    rng = np.random.default_rng(0)
    f32 = np.float32
    params = {"W1": (rng.standard_normal((784, 512)) * 0.05).astype(f32),
              "b1": np.zeros(512, f32),
              "W2": (rng.standard_normal((512, 10)) * 0.05).astype(f32),
              "b2": np.zeros(10, f32)}
    x = rng.standard_normal((128, 784)).astype(f32)
    labels = rng.integers(0, 10, 128)
    onehot = np.eye(10, dtype=f32)[labels]

    def loss(p, x, t):
        h = np.tanh(x @ p["W1"] + p["b1"])
        z = h @ p["W2"] + p["b2"]
        z = z - np.max(z, axis=1, keepdims=True)
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(np.sum(t * logp, axis=1))

    def step(p, x, t):
        value, g = tj.value_and_grad(loss)(p, x, t)
        return value, {k: p[k] - f32(0.1) * g[k] for k in p}

    def numpy_step(p, x, t):
        a = x @ p["W1"] + p["b1"]
        h = np.tanh(a)
        z = h @ p["W2"] + p["b2"]
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        sm = e / e.sum(axis=1, keepdims=True)
        value = -np.mean(np.sum(t * np.log(sm), axis=1))
        dz = (sm - t) / x.shape[0]
        gW2, gb2 = h.T @ dz, dz.sum(0)
        da = (dz @ p["W2"].T) * (1 - h * h)
        gW1, gb1 = x.T @ da, da.sum(0)
        g = {"W1": gW1, "b1": gb1, "W2": gW2, "b2": gb2}
        return value, {k: p[k] - f32(0.1) * g[k] for k in p}

    case = "MLP step f32 128x784x512x10"
    record("W3", case, "numpy (hand-written)", lambda: numpy_step(params, x, onehot))
    s = tj.trace(step)
    s(params, x, onehot)
    record("W3", case, "tracejit 1 thread", with_threads(1, lambda: s(params, x, onehot)))


# W4 ------------------------------------------------------------------------------------------
def w4(quick):
    x1, y1 = np.random.default_rng(0).random(1), np.random.default_rng(1).random(1)
    f = tj.trace(lambda x, y: x * y + 1)
    f(x1, y1)
    f(1.5, 2.5)
    record("W4", "cached call f64[1] arrays", "numpy", lambda: x1 * y1 + 1)
    record("W4", "cached call f64[1] arrays", "tracejit", lambda: f(x1, y1))
    record("W4", "cached call Python floats", "python", lambda: 1.5 * 2.5 + 1)
    record("W4", "cached call Python floats", "tracejit", lambda: f(1.5, 2.5))
    numba, jax = peer("numba"), peer("jax")
    if numba is not None:
        nf = numba.njit(lambda x, y: x * y + 1)
        nf(x1, y1), nf(1.5, 2.5)
        record("W4", "cached call f64[1] arrays", "numba", lambda: nf(x1, y1))
        record("W4", "cached call Python floats", "numba", lambda: nf(1.5, 2.5))
    if jax is not None:
        jf = jax.jit(lambda x, y: x * y + 1)
        jf(x1, y1).block_until_ready()
        record("W4", "cached call f64[1] arrays", "jax.jit (1 core)",
               lambda: jf(x1, y1).block_until_ready(), pinned=True)


# W5 ------------------------------------------------------------------------------------------
W5_SRC = """
import time
t0 = time.perf_counter()
import numpy as np
import tracejit as tj
def g(x):
    for _ in range(50):
        x = x - 0.1 * np.sin(x) * np.cos(x) + 0.01 * x * x
    return np.sum(x)
x = np.linspace(0, 1, 1000)
t1 = time.perf_counter()
f = {wrap}
f(x)
print(time.perf_counter() - {start})
"""


def w5(quick):
    rep = 2 if quick else 3
    # Measure an installed package: byte-code compiled (pip does this at install time). The
    # fresh processes run with PYTHONDONTWRITEBYTECODE=1, so without this every run would
    # compile all of tracejit's sources (~60 ms) and the import row would measure that instead.
    import compileall
    compileall.compile_dir(os.path.dirname(tj.__file__), quiet=1)
    for case, wrap, start in (("first call 50-step, n=1000", "tj.trace(g)", "t1"),
                              ("first call of its grad", "tj.trace(tj.grad(g))", "t1"),
                              ("import tracejit", "(lambda x: None)", "t0")):
        try:
            lo, med = fresh_process(W5_SRC.format(wrap=wrap, start=start), repeat=rep)
            ROWS.append(("W5", case, "tracejit", lo, med))
        except Exception as e:  # noqa: BLE001
            NOTES.append(f"W5 {case}: failed ({str(e)[-200:]})")


# W6 ------------------------------------------------------------------------------------------
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def w6(quick):
    x = np.random.default_rng(0).random(100)
    v = np.random.default_rng(1).random(100)
    h = tj.trace(tj.hessian(rosen))
    h(x)
    record("W6", "Rosenbrock n=100 dense Hessian", "tracejit", lambda: h(x))
    hvp = tj.trace(lambda x, v: tj.jvp(tj.grad(rosen), (x,), (v,))[1])
    hvp(x, v)
    record("W6", "Rosenbrock n=100 HVP", "tracejit", lambda: hvp(x, v))
    jax = peer("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jr = lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)  # noqa
        jh = jax.jit(jax.hessian(jr))
        jhv = jax.jit(lambda x, v: jax.jvp(jax.grad(jr), (x,), (v,))[1])
        jx, jv = jax.device_put(x), jax.device_put(v)
        jh(jx).block_until_ready(), jhv(jx, jv).block_until_ready()
        record("W6", "Rosenbrock n=100 dense Hessian", "jax.jit (1 core)",
               lambda: jh(jx).block_until_ready(), pinned=True)
        record("W6", "Rosenbrock n=100 HVP", "jax.jit (1 core)",
               lambda: jhv(jx, jv).block_until_ready(), pinned=True)


# W7 ------------------------------------------------------------------------------------------
def w7(quick):
    n = 10 ** 6
    x = np.random.default_rng(0).standard_normal(n)
    y = np.random.default_rng(1).standard_normal(n)

    def loss(x, y):
        return np.sum(np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x))

    f = tj.trace(loss)
    g = tj.trace(tj.grad(loss, argnums=(0, 1)))
    f(x, y), g(x, y)
    record("W7", "loss n=1e6 f64", "tracejit 1 thread", with_threads(1, lambda: f(x, y)))
    record("W7", "grad n=1e6 f64", "tracejit 1 thread", with_threads(1, lambda: g(x, y)))
    record("W7", "loss n=1e6 f64", "numpy", lambda: loss(x, y))


# W8 ------------------------------------------------------------------------------------------
def w8(quick):
    rng = np.random.default_rng(0)
    for dt in (np.float64, np.float32):
        for (m, k, n) in ((512, 512, 512), (128, 784, 512)):
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            case = f"matmul {m}x{k}x{n} {np.dtype(dt).name}"
            record("W8", case, "numpy", lambda: a @ b)
            f = tj.trace(lambda a, b: a @ b)
            f(a, b)
            record("W8", case, "tracejit 1 thread", with_threads(1, lambda: f(a, b)))
            record("W8", case, "tracejit 2 threads", with_threads(2, lambda: f(a, b)))


# W9 ------------------------------------------------------------------------------------------
PEND_N, PEND_STEPS, PEND_DT, PEND_GL = 1000, 1000, 0.01, 9.81


def pendulum_final(theta0, omega0, damping, checkpoint_every=None):
    def step(state, _):
        theta, omega = state
        return (theta + PEND_DT * omega,
                omega - PEND_DT * (PEND_GL * np.sin(theta) + damping * omega)), None
    (theta, _), _ = tj.scan(step, (theta0, omega0), None, length=PEND_STEPS,
                            checkpoint_every=checkpoint_every)
    return np.sum(theta)


def pendulum_numpy(theta, omega, damping):
    for _ in range(PEND_STEPS):
        theta, omega = (theta + PEND_DT * omega,
                        omega - PEND_DT * (PEND_GL * np.sin(theta) + damping * omega))
    return np.sum(theta)


def pendulum_numpy_grad(theta0, omega0, damping):
    """Hand-written reverse mode: store every state, then walk back."""
    thetas, omegas = [theta0], [omega0]
    theta, omega = theta0, omega0
    for _ in range(PEND_STEPS):
        theta, omega = (theta + PEND_DT * omega,
                        omega - PEND_DT * (PEND_GL * np.sin(theta) + damping * omega))
        thetas.append(theta)
        omegas.append(omega)
    t_bar, o_bar, d_bar = np.ones_like(theta0), np.zeros_like(omega0), 0.0
    for k in range(PEND_STEPS - 1, -1, -1):
        th, om = thetas[k], omegas[k]
        d_bar -= PEND_DT * np.dot(o_bar, om)
        t_bar, o_bar = (t_bar - PEND_DT * PEND_GL * np.cos(th) * o_bar,
                        PEND_DT * t_bar + (1 - PEND_DT * damping) * o_bar)
    return t_bar, o_bar, d_bar


def w9(quick):
    rng = np.random.default_rng(0)
    th, om = rng.uniform(-1.0, 1.0, PEND_N), rng.uniform(-0.5, 0.5, PEND_N)
    case_f = f"pendulum fwd {PEND_N}x{PEND_STEPS} steps f64"
    case_g = f"pendulum grad {PEND_N}x{PEND_STEPS} steps f64"
    record("W9", case_f, "numpy loop", lambda: pendulum_numpy(th, om, 0.3), repeat=3)
    f = tj.trace(pendulum_final)
    f(th, om, 0.3)
    record("W9", case_f, "tracejit 1 thread", with_threads(1, lambda: f(th, om, 0.3)))
    record("W9", case_g, "numpy loop (hand-written reverse)",
           lambda: pendulum_numpy_grad(th, om, 0.3), repeat=3)
    argnums = (0, 1, 2)
    g = tj.trace(tj.grad(pendulum_final, argnums=argnums))
    gc = tj.trace(tj.grad(lambda a, b, c: pendulum_final(a, b, c, "sqrt"), argnums=argnums))
    g(th, om, 0.3), gc(th, om, 0.3)
    record("W9", case_g, "tracejit 1 thread", with_threads(1, lambda: g(th, om, 0.3)))
    record("W9", case_g, "tracejit 1 thread, checkpoint_every='sqrt'",
           with_threads(1, lambda: gc(th, om, 0.3)))
    for label, fn in (("plain", g), ("checkpoint_every='sqrt'", gc)):
        mem = fn.memory_analysis(th, om, 0.3)
        NOTES.append(f"W9 {case_g} residual/temporary bytes, {label}: arena "
                     f"{mem['temp_bytes']:,} + loop scratch {mem['loop_scratch_bytes']:,}")


# W10 -----------------------------------------------------------------------------------------
# A while loop with a data-dependent trip count: damped pendulums integrated until their mean
# energy falls below a threshold; gradient of the final angles' sum through the loop (its tape).
WL_N, WL_ENERGY = 100, 0.05


def _energy(theta, omega):
    return np.mean(0.5 * omega * omega + PEND_GL * (1.0 - np.cos(theta)))


def _pend_step(theta, omega, damping):
    return (theta + PEND_DT * omega,
            omega - PEND_DT * (PEND_GL * np.sin(theta) + damping * omega))


def while_pendulum(theta0, omega0, damping, energy):
    def body(s):
        return _pend_step(s[0], s[1], damping)
    theta, _ = tj.while_loop(lambda s: _energy(*s) > energy, body, (theta0, omega0))
    return np.sum(theta)


def fori_pendulum(theta0, omega0, damping, steps):
    theta, _ = tj.fori_loop(0, steps, lambda i, s: _pend_step(s[0], s[1], damping),
                            (theta0, omega0))
    return np.sum(theta)


def while_pendulum_numpy_grad(theta0, omega0, damping, energy):
    """Hand-written reverse mode through the data-dependent loop: store every state."""
    states = [(theta0, omega0)]
    while _energy(*states[-1]) > energy:
        states.append(_pend_step(*states[-1], damping))
    t_bar, o_bar, d_bar = np.ones_like(theta0), np.zeros_like(omega0), 0.0
    for th, om in reversed(states[:-1]):
        d_bar -= PEND_DT * np.dot(o_bar, om)
        t_bar, o_bar = (t_bar - PEND_DT * PEND_GL * np.cos(th) * o_bar,
                        PEND_DT * t_bar + (1 - PEND_DT * damping) * o_bar)
    return t_bar, o_bar, d_bar, len(states) - 1


def w10(quick):
    rng = np.random.default_rng(1)
    th, om = rng.uniform(-1.0, 1.0, WL_N), rng.uniform(-0.5, 0.5, WL_N)
    for damping in ((0.5,) if quick else (0.5, 0.2)):
        *ref, steps = while_pendulum_numpy_grad(th, om, damping, WL_ENERGY)
        case = f"while-loop grad, {WL_N} pendulums, {steps} steps (data-dependent) f64"
        record("W10", case, "numpy loop (hand-written reverse)",
               lambda: while_pendulum_numpy_grad(th, om, damping, WL_ENERGY), repeat=3)
        g = tj.trace(tj.grad(while_pendulum, argnums=(0, 1, 2)))
        got = g(th, om, damping, WL_ENERGY)
        if not all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(got, ref)):
            NOTES.append(f"W10 {case}: tracejit gradient differs from the hand-written one")
        record("W10", case, "tracejit 1 thread, while_loop (tape)",
               with_threads(1, lambda: g(th, om, damping, WL_ENERGY)))
        gf = tj.trace(tj.grad(fori_pendulum, argnums=(0, 1, 2)), static_argnums=(3,))
        gf(th, om, damping, steps)
        record("W10", case, "tracejit 1 thread, fori_loop with the trip count known",
               with_threads(1, lambda: gf(th, om, damping, steps)))
        NOTES.append(f"W10 {case}: tape {tj.residual_bytes(while_pendulum, th, om, damping, WL_ENERGY):,} "
                     f"bytes ({steps} steps)")


# W11 -----------------------------------------------------------------------------------------
# Loops that update arrays in place (issue 19): one element of a carried 8 MB array per
# iteration, an 8 MB carry the body never changes, a Jacobi stencil time loop writing into its
# arguments (unmodified NumPy code), an element-wise Cholesky in fori_loop.
def carry_update(a, n):
    return tj.fori_loop(0, n, lambda i, a: a.at[i, 0].set(a[i, 1] * 2.0 + 1.0), a)


def carry_update_numpy(a, n):
    a = a.copy()
    for i in range(n):
        a[i, 0] = a[i, 1] * 2.0 + 1.0
    return a


def carry_unchanged(a, n):
    return tj.fori_loop(0, n, lambda i, c: (c[0], c[1] + c[0][i, 0]), (a, 0.0))[1]


def carry_unchanged_numpy(a, n):
    s = 0.0
    for i in range(n):
        s += a[i, 0]
    return s


def jacobi_1d(a, b, steps):
    for _ in range(steps):
        b[1:-1] = 0.33 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33 * (b[:-2] + b[1:-1] + b[2:])


def cholesky_fori(a):
    return cholesky_generic(a, np, tj.fori_loop)


def cholesky_numpy(a):
    a = a.copy()
    for i in range(a.shape[0]):
        for j in range(i):
            a[i, j] -= np.dot(a[i, :j], a[j, :j])
            a[i, j] /= a[j, j]
        a[i, i] -= np.dot(a[i, :i], a[i, :i])
        a[i, i] = np.sqrt(a[i, i])
    return np.tril(a)


def w11(quick):
    rng = np.random.default_rng(11)
    big = rng.standard_normal((1000, 1000))
    for name, f, ref in (("1000 x A.at[i, 0].set on a carried f64[1000,1000]", carry_update,
                          carry_update_numpy),
                         ("1000 iterations carrying an unchanged f64[1000,1000]",
                          carry_unchanged, carry_unchanged_numpy)):
        t = tj.trace(f)
        if not np.allclose(t(big, 1000), ref(big, 1000)):
            NOTES.append(f"W11 {name}: tracejit differs from NumPy")
        record("W11", name, "numpy loop", lambda: ref(big, 1000), repeat=5)
        record("W11", name, "tracejit 1 thread, fori_loop",
               with_threads(1, lambda: t(big, 1000)), repeat=5)
    n, steps = (2_000, 20) if quick else (20_000, 100)
    a, b = rng.random(n), rng.random(n)
    case = f"Jacobi 1-d stencil on its arguments, n={n}, {steps} steps (unmodified NumPy)"
    record("W11", case, "numpy", lambda: jacobi_1d(a, b, steps), repeat=5)
    t = tj.trace(jacobi_1d, static_argnums=(2,))
    record("W11", case, "tracejit 1 thread", with_threads(1, lambda: t(a, b, steps)), repeat=5)
    n = 60 if quick else 200
    m = rng.standard_normal((n, n))
    spd = m @ m.T + n * np.eye(n)
    case = f"element-wise Cholesky in fori_loop, f64[{n},{n}]"
    t = tj.trace(cholesky_fori)
    if not np.allclose(t(spd), np.linalg.cholesky(spd)):
        NOTES.append(f"W11 {case}: tracejit differs from np.linalg.cholesky")
    record("W11", case, "numpy loop (npbench style)", lambda: cholesky_numpy(spd), repeat=3)
    record("W11", case, "tracejit 1 thread", with_threads(1, lambda: t(spd)), repeat=5)


def w12(quick):
    """First call against graph size (compile scaling): bench/compile_rows.py; its log-log plot
    goes to bench/results.png (with matplotlib)."""
    import compile_rows
    points = compile_rows.measure(quick, lambda case, impl, lo, med: ROWS.append(
        ("W12", case, impl, lo, med)), NOTES.append)
    compile_rows.plot(points, os.path.join(os.path.dirname(__file__), "results.png"))


# W13 -----------------------------------------------------------------------------------------
# Issue 19 rows against jax and numba: a stencil time loop, an element-wise Cholesky and a
# tridiagonal (Thomas) solve in fori_loop, and scaled products (alpha * A @ B + beta * C,
# alpha * A @ x + beta * y) next to the bare product, 1000^2 and 4000^2. jax runs pinned to one
# core. numba pins its own llvmlite, which must never shadow ours: its column is timed only in
# a subprocess whose one extra path is BENCH_NUMBA_PATH (a directory holding numba and its
# llvmlite), and is absent without it.
def jacobi_fori(a, b, steps, xp=np, fori=tj.fori_loop):
    """The Jacobi stencil time loop written functionally (``.at[].set`` on loop carries)."""
    def body(_, ab):
        a, b = ab
        b = b.at[1:-1].set(0.33 * (a[:-2] + a[1:-1] + a[2:]))
        return a.at[1:-1].set(0.33 * (b[:-2] + b[1:-1] + b[2:])), b
    return fori(0, steps, body, (a, b))


def cholesky_generic(a, xp, fori):
    """Element-wise Cholesky in nested ``fori`` loops over a carried ``low`` (``xp``: the NumPy
    namespace the loops trace with, ``tj``'s or jax's)."""
    n = a.shape[0]

    def row(i, low):
        def col(j, low):
            s = xp.sum(xp.where(xp.arange(n) < j, low[i] * low[j], 0.0))
            v = xp.where(i == j, xp.sqrt(xp.abs(a[i, i] - s)), (a[i, j] - s) / low[j, j])
            return low.at[i, j].set(xp.where(j <= i, v, 0.0))
        return fori(0, n, col, low)
    return fori(0, n, row, xp.zeros_like(a))


def thomas_fori(lo, di, up, rhs, xp=np, fori=tj.fori_loop):
    """Tridiagonal solve (sub-diagonal ``lo``, diagonal ``di``, super-diagonal ``up``), one
    element per iteration: forward sweep, then back substitution."""
    n = di.shape[0]

    def fwd(i, cd):
        c, d = cd
        m = 1.0 / (di[i] - lo[i] * c[i - 1])
        return c.at[i].set(up[i] * m), d.at[i].set((rhs[i] - lo[i] * d[i - 1]) * m)
    c0 = xp.zeros_like(di).at[0].set(up[0] / di[0])
    d0 = xp.zeros_like(di).at[0].set(rhs[0] / di[0])
    c, d = fori(1, n, fwd, (c0, d0))

    def back(k, x):
        i = n - 2 - k
        return x.at[i].set(d[i] - c[i] * x[i + 1])
    return fori(0, n - 1, back, d)


def thomas_numpy(lo, di, up, rhs):
    n = di.shape[0]
    c, d = np.empty(n), np.empty(n)
    c[0], d[0] = up[0] / di[0], rhs[0] / di[0]
    for i in range(1, n):
        m = 1.0 / (di[i] - lo[i] * c[i - 1])
        c[i] = up[i] * m
        d[i] = (rhs[i] - lo[i] * d[i - 1]) * m
    for i in range(n - 2, -1, -1):
        d[i] -= c[i] * d[i + 1]
    return d


def _gemm(A, B, C, alpha, beta):
    return alpha * A @ B + beta * C


def _bare(A, B, C, alpha, beta):
    return A @ B


def _w13_cases(quick):
    """(case name, spec) of every W13 case; ``spec[0]`` names the kernel, the rest sizes it
    (``_w13_args(spec)`` makes its arguments)."""
    n_st, steps = (2_000, 20) if quick else (20_000, 100)
    n_ch = 60 if quick else 200
    n_th = 2_000 if quick else 20_000
    sizes = (1000,) if quick else (1000, 4000)
    cases = [(f"Jacobi 1-d stencil fori_loop, n={n_st}, {steps} steps", ("jacobi", n_st, steps)),
             (f"element-wise Cholesky in fori_loop, f64[{n_ch},{n_ch}]", ("cholesky", n_ch)),
             (f"tridiagonal (Thomas) solve in fori_loop, n={n_th}", ("thomas", n_th))]
    for n in sizes:
        cases += [(f"A @ B {n}^2 f64 (bare product)", ("bare", n)),
                  (f"alpha*A@B + beta*C {n}^2 f64", ("gemm", n)),
                  (f"A @ x {n}^2 f64 (bare product)", ("barev", n)),
                  (f"alpha*A@x + beta*y {n}^2 f64", ("gemv", n))]
    return cases


def _w13_args(spec):
    rng = np.random.default_rng(12)
    kind = spec[0]
    if kind == "jacobi":
        return rng.random(spec[1]), rng.random(spec[1]), spec[2]
    if kind == "cholesky":
        m = rng.standard_normal((spec[1], spec[1]))
        return (m @ m.T + spec[1] * np.eye(spec[1]),)
    if kind == "thomas":
        n = spec[1]
        return (rng.random(n), 4.0 + rng.random(n), rng.random(n), rng.random(n))
    n = spec[1]
    A = rng.standard_normal((n, n))
    if kind in ("bare", "gemm"):
        return A, rng.standard_normal((n, n)), rng.standard_normal((n, n)), 1.5, 1.2
    return A, rng.standard_normal(n), rng.standard_normal(n), 1.5, 1.2


W13_NUMBA = """
import sys
import numpy as np
import numba
sys.path.insert(0, {bench!r})
from harness import timeit

{shared}
jacobi_1d = numba.njit(jacobi_1d)

def jacobi(a, b, steps):
    a, b = a.copy(), b.copy()
    jacobi_1d(a, b, steps)
    return a

fns = dict(jacobi=jacobi, cholesky=cholesky_numpy, thomas=thomas_numpy, gemm=_gemm, bare=_bare,
           gemv=_gemm, barev=_bare)
spec = {spec!r}
f = numba.njit(fns[spec[0]])
args = _w13_args(spec)
f(*args)
lo, med = timeit(lambda: f(*args), repeat={repeat}, min_time={min_time}, warmup=0)
print(lo, med)
"""


def _numba_subprocess(spec, repeat, min_time):
    """(min, median) of the numba version of case ``spec`` timed in a process whose only
    extra path is BENCH_NUMBA_PATH (its numba and llvmlite never meet ours; it imports
    neither tracejit nor this module: the shared NumPy-only functions are passed as source)."""
    import inspect
    import subprocess
    shared = "\n".join(inspect.getsource(f) for f in (_w13_args, thomas_numpy, _gemm, _bare,
                                                      jacobi_1d, cholesky_numpy))
    code = W13_NUMBA.format(bench=os.path.dirname(os.path.abspath(__file__)), spec=spec,
                            repeat=repeat, min_time=min_time, shared=shared)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.environ["BENCH_NUMBA_PATH"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd="/")
    if out.returncode != 0:
        raise RuntimeError((out.stderr.strip().splitlines() or ["?"])[-1][:200])
    lo, med = map(float, out.stdout.split()[-2:])
    return lo, med


def _interleaved(fa, fb, rounds):
    """((min, median), (min, median)) seconds of ``fa`` and ``fb`` timed alternately, one call
    each per round, so that a load change on this shared machine hits both."""
    import statistics
    ta, tb = [], []
    for _ in range(rounds):
        for f, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
    return (min(ta), statistics.median(ta)), (min(tb), statistics.median(tb))


def w13(quick):
    jax = peer("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        jfns = {"cholesky": jax.jit(lambda a: cholesky_generic(a, jnp, jax.lax.fori_loop)),
                "thomas": jax.jit(lambda *a: thomas_fori(*a, xp=jnp, fori=jax.lax.fori_loop)),
                "gemm": jax.jit(_gemm), "gemv": jax.jit(_gemm),
                "bare": jax.jit(_bare), "barev": jax.jit(_bare)}
    tfns = {"jacobi": tj.trace(lambda a, b, steps: jacobi_fori(a, b, steps)[0],
                               static_argnums=(2,)),
            "cholesky": tj.trace(lambda a: cholesky_generic(a, np, tj.fori_loop)),
            "thomas": tj.trace(thomas_fori), "gemm": tj.trace(_gemm),
            "gemv": tj.trace(_gemm), "bare": tj.trace(_bare), "barev": tj.trace(_bare)}

    def np_jacobi(a, b, steps):
        a, b = a.copy(), b.copy()
        jacobi_1d(a, b, steps)
        return a
    nfns = {"jacobi": np_jacobi, "cholesky": cholesky_numpy, "thomas": thomas_numpy,
            "gemm": _gemm, "gemv": _gemm, "bare": _bare, "barev": _bare}
    if not os.environ.get("BENCH_NUMBA_PATH"):
        NOTES.append("W13: no numba column (set BENCH_NUMBA_PATH to a numba install)")
    for case, spec in _w13_cases(quick):
        kind = spec[0]
        big = kind in ("gemm", "bare") and spec[1] > 2000        # ~1-3 s per call
        repeat = 3 if big or kind in ("cholesky", "thomas") else 7
        # every implementation has run once before it is timed (the reference, the check, the
        # compiling call): no further warm-up call
        kw = dict(repeat=repeat, min_time=0.0 if big else 0.02, warmup=0)
        args = _w13_args(spec)
        ref = nfns[kind](*args)
        record("W13", case, "numpy", lambda: nfns[kind](*args), **kw)
        t = tfns[kind]
        if not np.allclose(t(*args), ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max()):
            NOTES.append(f"W13 {case}: tracejit differs from NumPy")
        record("W13", case, "tracejit 1 thread", with_threads(1, lambda: t(*args)), **kw)
        if kind in ("gemm", "gemv"):
            bare = tfns["bare" if kind == "gemm" else "barev"]
            (b_lo, b_med), (s_lo, s_med) = with_threads(1, lambda: _interleaved(
                lambda: bare(*args), lambda: t(*args), 3 if big else 9))()
            NOTES.append(f"W13 {case}: tracejit bare / scaled product time, interleaved "
                         f"rounds: {b_lo / s_lo:.3f} (min), {b_med / s_med:.3f} (median)")
        if jax is not None:
            if kind == "jacobi":       # the step count is static: one jit per case
                jf = jax.jit(lambda a, b, s=spec[2]: jacobi_fori(a, b, s, jnp,
                                                                 jax.lax.fori_loop)[0])
                jargs = [jax.device_put(a) for a in args[:2]]
            else:
                jf = jfns[kind]
                jargs = [jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args]
            jf(*jargs).block_until_ready()
            record("W13", case, "jax.jit (1 core)", lambda: jf(*jargs).block_until_ready(),
                   pinned=True, **kw)
        if os.environ.get("BENCH_NUMBA_PATH"):
            try:
                lo, med = _numba_subprocess(spec, repeat, kw["min_time"])
                ROWS.append(("W13", case, "numba (subprocess)", lo, med))
                print(f"  W13 {case} | numba: {_fmt(lo)} / {_fmt(med)}", file=sys.stderr,
                      flush=True)
            except Exception as e:  # noqa: BLE001 - a failing peer is reported, not fatal
                NOTES.append(f"W13 {case} numba: failed ({str(e)[:160]})")


def w14(quick):
    """numpy.linalg (solve, cholesky, eigh, svd) and a GP gradient: bench/linalg_bench.py."""
    import linalg_bench
    linalg_bench.measure(quick, lambda case, impl, lo, med: _add("W14", case, impl, lo, med),
                         NOTES.append)


def _add(workload, case, impl, lo, med):
    ROWS.append((workload, case, impl, lo, med))
    print(f"  {workload} {case} | {impl}: {_fmt(lo)} / {_fmt(med)}", file=sys.stderr, flush=True)


# W15 ------------------------------------------------------------------------------------------
def w15(quick):
    """numpy.fft.fft / rfft under tracejit (the native FFT, one thread) against NumPy's pocketfft
    and jax: one long transform at n = 2^10, 2^16, 2^20 and a batch of 1000 rows of 256."""
    rng = np.random.default_rng(0)
    jax = peer("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
    shapes = [(1 << 10,), (1 << 16,)] + ([] if quick else [(1 << 20,)]) + [(1000, 256)]
    for shape in shapes:
        z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        for name, x in (("fft", z), ("rfft", z.real.copy())):
            fn = getattr(np.fft, name)
            case = f"{name} {'x'.join(map(str, shape))} {x.dtype.name}"
            record("W15", case, "numpy", lambda: fn(x))
            f = tj.trace(fn)
            f(x)
            record("W15", case, "tracejit 1 thread", with_threads(1, lambda: f(x)))
            if jax is not None:
                jf, jx = jax.jit(getattr(jnp.fft, name)), jax.device_put(x)
                jf(jx).block_until_ready()
                record("W15", case, "jax.jit (1 core)", lambda: jf(jx).block_until_ready(),
                       pinned=True)


WORKLOADS = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6, "W7": w7, "W8": w8,
             "W9": w9, "W10": w10, "W11": w11, "W12": w12, "W13": w13, "W14": w14, "W15": w15}


def write_results(path):
    lines = ["# Benchmark results", "", f"Machine: {machine()}", "",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Times are min / median "
             f"over repeats in one run; the ratio is the reference time (NumPy or plain Python; "
             f"for W5 none) divided by this implementation's min time (> 1 means faster).", ""]
    by_case = {}
    for w, case, impl, lo, med in ROWS:
        by_case.setdefault((w, case), []).append((impl, lo, med))
    lines += ["| workload | case | implementation | min | median | speed-up vs reference |",
              "|---|---|---|---:|---:|---:|"]
    for (w, case), impls in by_case.items():
        ref = next((lo for impl, lo, _ in impls if impl.startswith(("numpy", "python"))), None)
        for impl, lo, med in impls:
            ratio = f"{ref / lo:.2f}x" if ref else "-"
            lines.append(f"| {w} | {case} | {impl} | {_fmt(lo)} | {_fmt(med)} | {ratio} |")
    if NOTES:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in NOTES]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return by_case


def _fmt(s):
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.2f} µs"
    return f"{s * 1e9:.0f} ns"


def chart(by_case, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - the chart is optional
        return False
    labels, values = [], []
    for (w, case), impls in by_case.items():
        ref = next((lo for impl, lo, _ in impls if impl.startswith(("numpy", "python"))), None)
        if not ref:
            continue
        for impl, lo, _ in impls:
            if not impl.startswith(("numpy", "python")):
                labels.append(f"{w} {case}\n{impl}")
                values.append(ref / lo)
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(labels) + 1))
    ax.barh(range(len(values)), values, color=["C0" if "tracejit" in l else "C7" for l in labels])
    ax.set_yticks(range(len(values)), labels, fontsize=6)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("speed-up vs NumPy / Python (log scale, > 1 is faster)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    for name in names:
        t0 = time.time()
        try:
            WORKLOADS[name](args.quick)
        except Exception as e:  # noqa: BLE001 - report and continue with the others
            NOTES.append(f"{name}: failed ({type(e).__name__}: {str(e)[:200]})")
        print(f"{name} done in {time.time() - t0:.1f}s", file=sys.stderr)
    here = os.path.dirname(__file__)
    by_case = write_results(os.path.join(here, "results.md"))
    chart(by_case, os.path.join(here, "speedups.png"))
    print(open(os.path.join(here, "results.md")).read())


if __name__ == "__main__":
    main()
