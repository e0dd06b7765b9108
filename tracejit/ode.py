"""``odeint``: adaptive Dormand–Prince (RK45) integration of ODEs, with JAX's signature and
step control (``jax.experimental.ode.odeint``), written with tracejit ops.

Invariants:
- The state is one flat vector (a pytree ``y0`` is raveled; ``func`` sees the pytree).
- A ``scan`` over the output times ``t[1:]`` carries the solver state; for each output time a
  ``while_loop`` takes steps (accepted when the scaled error estimate is <= 1, as JAX) until
  the step passes that time, then a 4th-order dense-output polynomial (JAX's Dormand–Prince
  fit) gives ``y`` there. So the whole solve is one native loop nest on the llvm backend, vmap
  gives each lane its own step count, and reverse mode differentiates the computed solution
  through the while-loop tape (discretise-then-differentiate).
- Step sizes carry no derivative (``stop_gradient``): the derivative is that of the RK map
  along the chosen steps, which converges to the ODE's sensitivity as the tolerances shrink
  and differs from the derivative of the computed solution only by the (tolerance-sized)
  effect of moving the steps; differentiating the controller would also give NaNs where the
  error estimate is exactly zero (its ``err ** -1/5``).
"""
from __future__ import annotations

import functools

import numpy as np

from . import tree
from .api import jit
from .control import scan, while_loop
from .ad import vjp
from .custom import custom_vjp, stop_gradient
from .numpy import take

__all__ = ["odeint"]

# Dormand–Prince 5(4): nodes, tableau rows, 5th-order weights, and their difference from the
# embedded 4th-order weights (the error estimate)
_ALPHA = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_BETA = ((1 / 5,),
         (3 / 40, 9 / 40),
         (44 / 45, -56 / 15, 32 / 9),
         (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
         (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
         (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_C_SOL = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_C_ERR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0)
# the dense-output midpoint weights (halved: the midpoint of the step)
_C_MID = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
          -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
          -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)


def _combine(weights, k):
    """sum_i weights[i] * k[i], skipping zero weights (exact, and fewer operations)."""
    out = None
    for w, ki in zip(weights, k):
        if w != 0.0:
            out = w * ki if out is None else out + w * ki
    return out


def _norm(x):
    return np.sqrt(np.sum(x * x))


def _rk_step(fun, y0, f0, t0, dt):
    """One Dormand–Prince step: (y1, f1, error estimate, the seven stages)."""
    k = [f0]
    for alpha, beta in zip(_ALPHA, _BETA):
        k.append(fun(y0 + dt * _combine(beta, k), t0 + dt * alpha))
    y1 = dt * _combine(_C_SOL, k) + y0
    return y1, k[-1], dt * _combine(_C_ERR, k), k


def _interp_fit(y0, y1, k, dt):
    """Coefficients (highest power first) of the quartic through the step (JAX's fit)."""
    y_mid = y0 + dt * _combine(_C_MID, k)
    dy0, dy1 = k[0], k[-1]
    a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
    b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
    c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
    return np.stack([a, b, c, dt * dy0, y0])


def _error_ratio(err, rtol, atol, y0, y1):
    tol = atol + rtol * np.maximum(np.abs(y0), np.abs(y1))
    return np.sqrt(np.mean((err / tol) ** 2))


def _next_step(dt, ratio, safety=0.9, ifactor=10.0, dfactor=0.2, order=5.0):
    dfactor = np.where(ratio < 1.0, 1.0, dfactor)
    safe = np.where(ratio == 0.0, 1.0, ratio)      # no 0 ** -0.2 in the unused branch
    factor = np.minimum(ifactor, np.maximum(safe ** (-1.0 / order) * safety, dfactor))
    return np.where(ratio == 0.0, dt * ifactor, dt * factor)


def _initial_step(fun, t0, y0, order, rtol, atol, f0):
    """Hairer, Nørsett & Wanner, Solving ODEs I, Sec. II.4 (as JAX and SciPy)."""
    scale = atol + np.abs(y0) * rtol
    d0, d1 = _norm(y0 / scale), _norm(f0 / scale)
    h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6,
                  0.01 * d0 / np.where(d1 == 0.0, 1.0, d1))
    f1 = fun(y0 + h0 * f0, t0 + h0)
    d2 = _norm((f1 - f0) / scale) / h0
    big = np.maximum(d1, d2)
    h1 = np.where((d1 <= 1e-15) & (d2 <= 1e-15), np.maximum(1e-6, h0 * 1e-3),
                  (0.01 / np.where(big == 0.0, 1.0, big)) ** (1.0 / (order + 1.0)))
    return np.minimum(100.0 * h0, h1)


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _ravel(y0):
    """(flat vector, treedef): the pytree ``y0`` as one float vector (leaves C-order)."""
    leaves, treedef = tree.flatten(y0)
    if not leaves:
        raise ValueError("odeint: y0 has no arrays")
    dtype = np.result_type(*[_dtype_of(x) for x in leaves], np.float32)
    if dtype.kind != "f":
        raise TypeError(f"odeint: y0 must hold real floating-point arrays, got {dtype}")
    flat = np.concatenate([np.reshape(np.asarray(x, dtype) if not hasattr(x, "astype")
                                      else x.astype(dtype), (-1,)) for x in leaves])
    return flat, treedef


def _unravel(v, like, leading=()):
    """The pytree of ``like`` from the flat ``v`` (with ``leading`` axes kept in front)."""
    leaves, treedef = tree.flatten(like)
    out, start = [], 0
    for x in leaves:
        shape = tuple(np.shape(x))
        size = int(np.prod(shape, dtype=np.int64))
        out.append(np.reshape(v[..., start:start + size], tuple(leading) + shape))
        start += size
    return tree.unflatten(treedef, out)


def _solve(func, rtol, atol, mxstep, hmax, adjoint, y0, ts, *args):
    """``odeint`` on a pytree ``y0`` (traced once per signature by ``_solve_jit``)."""
    flat0, y_tree = _ravel(y0)
    dtype = flat0.dtype
    ts = ts.astype(np.result_type(ts.dtype, dtype))     # times at least as precise as y

    def flat_func(y, t, *a):
        flat, tree_ = _ravel(func(_unravel(y, y0), t, *a))
        if tree_ != y_tree:
            raise ValueError(f"odeint: func returned a value of structure {tree_}, but y0 "
                             f"has structure {y_tree}")
        return flat.astype(dtype)

    solve = _adjoint(flat_func, rtol, atol, mxstep, hmax) if adjoint else \
        functools.partial(_dopri, flat_func, rtol, atol, mxstep, hmax)
    return _unravel(solve(flat0, ts, *args), y0, leading=(ts.shape[0],))


def _dopri(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The solution of ``dy/dt = func(y, t, *args)`` (``y`` a flat vector) at the times
    ``ts``, as rows."""
    dtype = y0.dtype

    def fun(y, t):
        return func(y, t, *args)

    def clip(dt):
        return stop_gradient(np.minimum(np.maximum(dt, 0.0), hmax)).astype(ts.dtype)

    def advance(carry, target):
        def cond(state):
            i, _, _, t, dt, _, _ = state
            go = (t < target) & (dt > 0.0)
            return go & (i < mxstep) if mxstep != np.inf else go

        def body(state):
            i, y, f, t, dt, last_t, coeff = state
            h = dt.astype(dtype)
            y1, f1, err, k = _rk_step(fun, y, f, t, h)
            ratio = _error_ratio(err, rtol, atol, y, y1)
            accept = ratio <= 1.0
            new_coeff = _interp_fit(y, y1, k, h)
            return (i + 1,
                    np.where(accept, y1, y), np.where(accept, f1, f),
                    np.where(accept, t + dt, t), clip(_next_step(dt, ratio)),
                    np.where(accept, t, last_t), np.where(accept, new_coeff, coeff))

        _, y, f, t, dt, last_t, coeff = while_loop(cond, body, (0,) + carry)
        s = ((target - last_t) / (t - last_t)).astype(dtype)
        out = coeff[0]
        for c in range(1, 5):
            out = out * s + coeff[c]
        return (y, f, t, dt, last_t, coeff), out

    t0 = ts[0]
    f0 = fun(y0, t0)
    dt0 = clip(_initial_step(fun, t0, y0, 4, rtol, atol, f0))
    coeff0 = np.stack([y0] * 5)
    _, ys = scan(advance, (y0, f0, t0, dt0, t0, coeff0), ts[1:])
    return np.concatenate([y0[None], ys])


def _adjoint(func, rtol, atol, mxstep, hmax):
    """``_dopri`` whose reverse mode solves the adjoint ODE backwards in time instead of
    reading a tape (JAX's method: Chen et al. 2018, appendix C): memory independent of the
    number of steps; the gradient is that of the ODE, to the solver's tolerance."""
    solve = custom_vjp(functools.partial(_dopri, func, rtol, atol, mxstep, hmax))

    def fwd(y0, ts, *args):
        ys = _dopri(func, rtol, atol, mxstep, hmax, y0, ts, *args)
        return ys, (ys, ts, args)

    def aug_dynamics(state, t, *args):
        y, y_bar = state[0], state[1]
        # time runs backwards (the adjoint is integrated over -t, increasing)
        y_dot, vjp_fn = vjp(func, y, -t, *args)
        y_ct, t_ct, *args_ct = vjp_fn(y_bar)
        return -y_dot, y_ct, t_ct, tuple(args_ct)

    def bwd(res, g):
        ys, ts, args = res

        def step(carry, i):
            # take: a residual may be a constant NumPy array, which a traced i cannot index
            y_i, t_i, g_i = (take(x, i, axis=0) for x in (ys, ts, g))
            y_bar, t0_bar, args_bar = carry
            t_bar = np.sum(func(y_i, t_i, *args) * g_i)   # moving the output time
            state = (y_i, y_bar, t0_bar - t_bar, args_bar)
            _, y_bar, t0_bar, args_bar = _solve(
                aug_dynamics, rtol, atol, mxstep, hmax, False, state,
                np.stack([-t_i, -take(ts, i - 1, axis=0)]), *args)
            y_bar, t0_bar, args_bar = tree.tree_map(lambda x: x[1], (y_bar, t0_bar, args_bar))
            return (y_bar + take(g, i - 1, axis=0), t0_bar, args_bar), t_bar

        init = (g[-1], np.zeros((), ts.dtype), tree.tree_map(np.zeros_like, args))
        n = ts.shape[0]
        (y_bar, t0_bar, args_bar), rev_ts_bar = scan(step, init, np.arange(n - 1, 0, -1))
        ts_bar = np.concatenate([t0_bar[None], rev_ts_bar[::-1]])
        return (y_bar, ts_bar, *args_bar)

    solve.defvjp(fwd, bwd)
    return solve


@functools.cache
def _solve_jit():
    """The traced solver (made on first use: tracing machinery is not ready at import)."""
    return jit(_solve, static_argnums=(0, 1, 2, 3, 4, 5))


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf,
           adjoint=False):
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; return ``y`` at every
    time in ``t`` (JAX's ``jax.experimental.ode.odeint``).

    ``y0`` is an array or a pytree of float arrays; the result has ``y0``'s structure with a
    leading axis of ``len(t)``. ``t`` must be increasing. Adaptive Dormand–Prince (RK45)
    steps with JAX's step control: a step is accepted when the RMS of ``error / (atol + rtol *
    max(|y|, |y_new|))`` is <= 1; ``mxstep`` bounds the steps between two output times (when
    reached, the result there is extrapolated, as JAX), ``hmax`` the step size.

    Differentiable (forward and reverse mode, through the loops; step sizes carry no
    derivative) and vmappable (each lane takes its own steps). ``adjoint=True``: reverse mode
    solves the adjoint ODE backwards instead (JAX's method; memory independent of the number
    of steps, no forward mode, ``func`` must not close over traced values: pass them in
    ``args``). ``func``, ``rtol``, ``atol``, ``mxstep``, ``hmax`` and ``adjoint`` are static:
    a new ``func`` object (a fresh lambda) traces again.
    """
    t = np.asarray(t) if not hasattr(t, "ty") else t
    if len(np.shape(t)) != 1 or np.shape(t)[0] < 1:
        raise ValueError(f"odeint: t must be a 1-d array of at least one time, got shape "
                         f"{np.shape(t)}")
    return _solve_jit()(func, float(rtol), float(atol), float(mxstep), float(hmax),
                        bool(adjoint), y0, t, *args)
