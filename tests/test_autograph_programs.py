"""Python written as in public example programs (autograd's examples: samplers, optimizers,
simulations), traced unmodified: loop integers behave as the Python ints they are, and every
transform, the low-level ``jvp``/``vjp``/``linearize`` included, converts Python control flow
on traced values (tracejit/autograph*.py); Python's ``print`` and NumPy's global random
functions in a traced function run each time the compiled code runs."""
import collections
import re
import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import ConcretizationError
from tracejit.test_util import check_grads, using_backend

BACKENDS = ["llvm", "interpret"]


def decay_schedule(x, n):
    # a float32 state updated with the loop integer, over a range with a traced bound
    s = x
    for i in range(1, n, 2):
        s = s * np.float32(0.75) + i * s - 2 * i
    return s


def damped_until(x):
    # a Taylor-style loop: the break depends on traced data, the update on the index
    total = x
    for i in range(30):
        total = total * 0.5 + x * i
        if np.abs(total).max() > 10:
            break
    return total


def countdown(x, n):
    for k in range(n, 0, -3):             # a negative step, traced start
        x = x + k * x.dtype.type(0.1)
    return x


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(1818)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_integer_of_a_converted_for_is_a_weak_python_int(backend, rng):
    with using_backend(backend):
        f, g, h = tj.trace(decay_schedule), tj.trace(damped_until), tj.trace(countdown)
        for shape in [(), (3,), (2, 4)]:
            for dtype in (np.float32, np.float64):
                x = rng.normal(size=shape).astype(dtype)
                for n in (0, 1, 6, 9):
                    want = decay_schedule(x, n)
                    got = f(x, np.asarray(n))          # an array: a traced bound
                    assert got.dtype == dtype, (got.dtype, dtype)
                    np.testing.assert_allclose(got, want, rtol=1e-6)
                    want = countdown(x, n)
                    got = h(x, np.asarray(n))
                    assert got.dtype == dtype
                    np.testing.assert_allclose(got, want, rtol=1e-6)
                got, want = g(x), damped_until(x)
                assert got.dtype == dtype
                np.testing.assert_allclose(got, want, rtol=1e-6)


def test_weak_loop_integer_derivatives_and_vmap(rng):
    x = rng.normal(size=3)
    check_grads(damped_until, (x,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: decay_schedule(x, np.asarray(7)), (x,), order=2,
                modes=("fwd", "rev"))
    xs = (rng.normal(size=(4, 3)) * [[1], [5], [0.1], [20]]).astype(np.float32)
    got = tj.vmap(damped_until)(xs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.stack([damped_until(v) for v in xs]), rtol=1e-6)


def test_jvp_vjp_linearize_and_jacobians_convert_control_flow(rng):
    # called on arrays, outside any trace: they retry with conversion as grad and jit do
    for x in (rng.normal(size=3), 5 * rng.normal(size=3)):
        out, vjp_fn = tj.vjp(damped_until, x)
        np.testing.assert_allclose(out, damped_until(x), rtol=1e-12)
        jac = tj.jacfwd(damped_until)(x)
        np.testing.assert_allclose(tj.jacrev(damped_until)(x), jac, rtol=1e-12)
        ct = rng.normal(size=3)
        np.testing.assert_allclose(vjp_fn(ct)[0], ct @ jac, rtol=1e-12)
        t = rng.normal(size=3)
        p, tan = tj.jvp(damped_until, (x,), (t,))
        np.testing.assert_allclose(p, damped_until(x), rtol=1e-12)
        np.testing.assert_allclose(tan, jac @ t, rtol=1e-12)
        _, f_jvp = tj.linearize(damped_until, x)
        np.testing.assert_allclose(f_jvp(t), jac @ t, rtol=1e-12)
        eps = 1e-6
        fd = (damped_until(x + eps * t) - damped_until(x - eps * t)) / (2 * eps)
        np.testing.assert_allclose(tan, fd, rtol=1e-5, atol=1e-8)


def test_gradient_of_a_one_element_output(rng):
    # acquisition functions and flattened objectives return shape (1,) (np.atleast_2d inputs)
    w = rng.normal(size=(3, 1))

    def acquisition(x):
        x = np.atleast_2d(x)
        return np.sin(x @ w).ravel() + np.sum(x ** 2)

    x = rng.normal(size=3)
    value, g = tj.value_and_grad(acquisition)(x)
    assert value.shape == (1,)
    np.testing.assert_allclose(value, acquisition(x), rtol=1e-12)
    np.testing.assert_allclose(g, np.cos(x @ w[:, 0]) * w[:, 0] + 2 * x, rtol=1e-12)
    check_grads(lambda x: acquisition(x)[0], (x,), order=2, modes=("rev",))
    with pytest.raises(tj.InputError, match="scalar output"):
        tj.grad(lambda x: x * 2)(np.ones(2))


def test_a_numpy_generator_made_before_the_trace_does_not_crash_it():
    # NumPy's own C code calls np.empty while the creation functions are wrapped: it must get
    # NumPy's function (a tracer handed to Cython was a segfault)
    rs = np.random.RandomState(0)
    gen = np.random.default_rng(0)

    def f(x):
        return x * rs.randn(4, 3).sum(0) + gen.normal(size=3) + rs.uniform(size=(2, 3))[0]

    out = tj.trace(f)(np.ones(3))
    assert out.shape == (3,) and np.isfinite(out).all()


def _svi_objective(D, num_samples, rs):
    # black-box variational inference as written with NumPy: a generator made outside the
    # traced function, drawn from inside it on every evaluation
    def objective(params, t):
        mean, log_std = params[:D], params[D:]
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        return -np.mean(-0.5 * np.sum(samples ** 2, axis=1)) - np.sum(log_std) + 0 * t
    return objective


def _svi_gradient_numpy(params, z):
    D = z.shape[1]
    mean, log_std = params[:D], params[D:]
    y = z * np.exp(log_std) + mean
    return np.concatenate([y.mean(0), (y * z * np.exp(log_std)).mean(0) - 1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_draws_from_a_numpy_generator_run_each_call_as_in_numpy(backend, rng):
    D, n = 3, 7
    with using_backend(backend):
        for make in (np.random.RandomState, np.random.default_rng):
            rs, twin = make(5), make(5)
            draw = (lambda g: g.randn(n, D)) if make is np.random.RandomState else \
                (lambda g: g.standard_normal((n, D)))
            if make is not np.random.RandomState:
                def objective(params, t, rs=rs):
                    mean, log_std = params[:D], params[D:]
                    z = rs.standard_normal((n, D))
                    y = z * np.exp(log_std) + mean
                    return -np.mean(-0.5 * np.sum(y ** 2, axis=1)) - np.sum(log_std)
            else:
                objective = _svi_objective(D, n, rs)
            grad = tj.grad(objective)
            params = rng.normal(size=2 * D)
            for step in range(4):           # the compiled gradient draws anew every call
                g = grad(params, step)
                np.testing.assert_allclose(g, _svi_gradient_numpy(params, draw(twin)),
                                           rtol=1e-12)
                params = params - 0.1 * g
            # the generator is where the NumPy program leaves it
            np.testing.assert_array_equal(draw(rs), draw(twin))
            assert "numpy_draw" in str(grad.ir(params, 0))


def test_a_draw_with_traced_arguments_is_refused_with_advice():
    rs = np.random.RandomState(0)

    def f(mu):
        return np.sum(rs.normal(mu, 1.0))
    with pytest.raises((tj.UnsupportedError, ConcretizationError)):
        tj.grad(f)(np.zeros(3))             # (NumPy's C code asks for the array: refused)
    from tracejit.autograph import numpy_draw
    with pytest.raises(tj.UnsupportedError, match="concrete arguments"):
        tj.trace(lambda mu: numpy_draw(rs.normal, mu, 1.0))(np.zeros(3))


SMOKE = np.random.default_rng(7).uniform(size=(6, 5))     # an image loaded with NumPy


def semi_lagrangian(vx, vy):
    # advection as in a fluid simulation: a NumPy array read at indices computed from traced
    # velocities (NumPy's own indexing would ask for their values)
    rows, cols = SMOKE.shape
    ys, xs = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    cx, cy = (xs - vx).ravel(), (ys - vy).ravel()
    left, top = np.floor(cx).astype(int), np.floor(cy).astype(int)
    rw, bw = cx - left, cy - top
    left, top = np.mod(left, cols), np.mod(top, rows)
    right, bot = np.mod(left + 1, cols), np.mod(top + 1, rows)
    out = (1 - rw) * ((1 - bw) * SMOKE[top, left] + bw * SMOKE[bot, left]) + \
        rw * ((1 - bw) * SMOKE[top, right] + bw * SMOKE[bot, right])
    return np.sum(out.reshape(rows, cols)[1:, ::2] ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_numpy_array_indexed_by_traced_indices(backend, rng):
    vx, vy = rng.uniform(-2, 2, size=(2,) + SMOKE.shape)
    with using_backend(backend):
        np.testing.assert_allclose(tj.trace(semi_lagrangian)(vx, vy), semi_lagrangian(vx, vy),
                                   rtol=1e-12)
    g = tj.grad(semi_lagrangian, argnums=(0, 1))(vx, vy)
    t = rng.normal(size=vx.shape)
    eps = 1e-6
    fd = (semi_lagrangian(vx + eps * t, vy) - semi_lagrangian(vx - eps * t, vy)) / (2 * eps)
    np.testing.assert_allclose(np.sum(g[0] * t), fd, rtol=1e-5)


def _hmm_log_partition(natural_params, data):
    # an HMM's forward recursion over several sequences, written as in an EM example
    if isinstance(data, list):
        return sum(_hmm_log_partition(natural_params, seq) for seq in data)
    from tracejit.scipy.special import logsumexp
    log_pi, log_A, log_B = natural_params
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def test_gradient_of_a_long_recursion_compiles():
    # ~300 steps: sinking the views of its derivative through the chain overflowed Python's
    # recursion in fusion planning (backend/plan/sinkviews.py); ~20 s of compile on one core
    from scipy.special import logsumexp
    rng = np.random.default_rng(0)
    S, O = 6, 11
    params = [np.log(rng.dirichlet(np.ones(S))), np.log(rng.dirichlet(np.ones(S), size=S)),
              np.log(rng.dirichlet(np.ones(O), size=S))]
    data = [rng.integers(0, O, size=60 + k) for k in range(5)]
    value, g = tj.value_and_grad(_hmm_log_partition)(params, data)

    def reference(p):
        total = 0.0
        for seq in data:
            a = p[0]
            for y in seq:
                a = logsumexp(a[:, None] + p[1], axis=0) + p[2][:, y]
            total += logsumexp(a)
        return total
    np.testing.assert_allclose(value, reference(params), rtol=1e-12)
    t = rng.normal(size=S)
    eps = 1e-6
    fd = (reference([params[0] + eps * t] + params[1:]) -
          reference([params[0] - eps * t] + params[1:])) / (2 * eps)
    np.testing.assert_allclose(np.dot(g[0], t), fd, rtol=1e-6)


def taylor_sine(x):
    # a Taylor series printing its progress, as an example program does: the loop becomes a
    # while_loop (its break depends on x), its print a run-time print
    term = x
    total = term
    for i in range(100):
        print(i, end=" ")
        term = -term * x ** 2 / ((2 * i + 3) * (2 * i + 2))
        total = total + term
        if np.abs(term) < 0.2:
            break
    print("terms")
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_a_converted_loop_prints_on_every_call_as_python_does(backend, capsys):
    with using_backend(backend):
        f, d, dd = tj.trace(taylor_sine), tj.grad(taylor_sine), tj.grad(tj.grad(taylor_sine))
        for x in (3.0, -1.5, 0.25, 6.0, 3.0):
            value = taylor_sine(x)
            want = capsys.readouterr().out
            assert want.startswith("0 ") and want.endswith("terms\n")
            got = f(x)
            assert capsys.readouterr().out == want        # (no stray line of the first trace)
            np.testing.assert_allclose(got, value, rtol=1e-12)
            eps = 1e-6
            fd = (taylor_sine(x + eps) - taylor_sine(x - eps)) / (2 * eps)
            capsys.readouterr()
            np.testing.assert_allclose(d(x), fd, rtol=1e-6, atol=1e-9)
            assert capsys.readouterr().out == want
            fd2 = (d(x + eps) - d(x - eps)) / (2 * eps)
            capsys.readouterr()
            np.testing.assert_allclose(dd(x), fd2, rtol=1e-5, atol=1e-8)
            assert capsys.readouterr().out == want        # once per evaluation, not per order


def _same_print(got, want):
    """The same printed text, its floats equal to rounding (the compiled code may sum in
    another order than NumPy)."""
    number = r"-?\d+\.\d+(?:e[-+]?\d+)?"
    assert re.sub(number, "#", got) == re.sub(number, "#", want), (got, want)
    np.testing.assert_allclose([float(v) for v in re.findall(number, got)],
                               [float(v) for v in re.findall(number, want)], rtol=1e-12)


def simulate(x, steps):
    # a simulation that reports as it goes (no control flow on traced values here)
    print("Running simulation...", x.shape)
    for _ in range(steps):
        x = 0.5 * x + np.sin(x)
    print("mean", np.mean(x), sep=": ")
    return np.sum(x ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_a_traced_function_prints_on_every_call(backend, capsys, rng):
    with using_backend(backend):
        vg = tj.value_and_grad(simulate)
        for shape in [(3,), (2, 2), (3,)]:
            x = rng.normal(size=shape)
            value = simulate(x, 4)
            want = capsys.readouterr().out
            got, g = vg(x, 4)
            _same_print(capsys.readouterr().out, want)
            np.testing.assert_allclose(got, value, rtol=1e-12)
        check_grads(lambda x: simulate(x, 4), (x,), order=1, modes=("rev",))


def test_a_side_effect_in_a_traced_loop_warns_once_naming_its_line():
    sizes = collections.deque()

    def halve_until_small(x):
        while np.max(np.abs(x)) > 1:
            x = x / 2
            sizes.append(x.size)            # runs once, while tracing
        return x

    line = halve_until_small.__code__.co_firstlineno + 3
    x = np.array([3.0, -20.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        f = tj.trace(halve_until_small)
        np.testing.assert_allclose(f(x), x / 32, rtol=0)
        f(np.ones(3) * 9)                   # another signature: the same line, no new warning
    msgs = [w for w in seen if issubclass(w.category, tj.TracerWarning)]
    assert len(msgs) == 1, [str(w.message) for w in msgs]
    assert (msgs[0].filename, msgs[0].lineno) == (__file__, line)
    assert "deque.append" in str(msgs[0].message) and "`while` loop" in str(msgs[0].message)


def noisy(x):
    return x + np.random.normal(size=x.shape) * np.random.uniform() + \
        np.random.randint(0, 5, size=x.shape)


def reseeded(x):
    np.random.seed(11)
    return x * np.random.randn(*x.shape)


def random_walk(x):
    # converted: a draw per iteration of a loop on traced values
    np.random.seed(2)
    while np.sum(x) < 5:
        x = x + np.random.uniform(size=x.shape)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_global_random_functions_draw_when_the_compiled_code_runs(backend, rng):
    # each call draws anew from NumPy's global state: the same numbers, and the same state
    # afterwards, as running the function as NumPy code
    x = rng.normal(size=(2, 3))
    for fn in (noisy, reseeded, random_walk):
        np.random.seed(3)
        want = [fn(x) for _ in range(3)] + [np.random.rand()]
        with using_backend(backend):
            np.random.seed(3)
            f = tj.trace(fn)
            got = [f(x) for _ in range(3)] + [np.random.rand()]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    np.random.seed(4)
    g = tj.grad(lambda x: np.sum(x * np.random.normal(size=x.shape)))(x)
    np.random.seed(4)
    np.testing.assert_array_equal(g, np.random.normal(size=x.shape))
    with pytest.raises(tj.UnsupportedError, match="traced argument"):
        tj.trace(lambda mu: np.random.normal(mu))(x)
