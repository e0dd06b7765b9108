"""A tiny neural ODE: dy/dt = MLP(y), a two-layer tanh network, fitted by gradient descent so
that tj.odeint's trajectory from y(0) follows a damped spiral. The gradient flows through the
adaptive Dormand-Prince solver's loops (tj.grad of tj.odeint, one compiled function), and the
example checks that the loss goes down and that the gradient agrees with finite differences.
"""
import time

import numpy as np

import tracejit as tj

T = np.linspace(0.0, 2.0, 9)
Y0 = np.array([2.0, 0.0])
A_TRUE = np.array([[-0.1, 2.0], [-2.0, -0.1]])          # the spiral the network should learn


def mlp(y, t, params):
    w1, b1, w2, b2 = params
    return np.tanh(y @ w1 + b1) @ w2 + b2


def loss(params, target):
    ys = tj.odeint(mlp, Y0, T, params, rtol=1e-6, atol=1e-6)
    return np.mean((ys - target) ** 2)


def main():
    rng = np.random.default_rng(0)
    # the reference trajectory: y(t) = expm(A t) y0 through an eigendecomposition
    vals, vecs = np.linalg.eig(A_TRUE)
    coef = np.linalg.solve(vecs, Y0)
    target = np.real((vecs[None] * np.exp(vals[None] * T[:, None])[:, None, :]) @ coef)
    hidden = 16
    params = [0.5 * rng.standard_normal((2, hidden)), np.zeros(hidden),
              0.5 * rng.standard_normal((hidden, 2)) / np.sqrt(hidden), np.zeros(2)]

    step = tj.jit(tj.value_and_grad(loss))
    start = time.perf_counter()
    value, grads = step(params, target)
    print(f"compiled value_and_grad in {time.perf_counter() - start:.2f} s")

    # the gradient against a central difference along a random direction
    direction = [rng.standard_normal(p.shape) for p in params]
    eps = 1e-6
    plus = loss([p + eps * d for p, d in zip(params, direction)], target)
    minus = loss([p - eps * d for p, d in zip(params, direction)], target)
    fd = (plus - minus) / (2 * eps)
    ad = sum(np.sum(g * d) for g, d in zip(grads, direction))
    print(f"directional derivative: grad {ad:.8f}, finite differences {fd:.8f}")
    assert abs(ad - fd) <= 1e-5 * max(1.0, abs(fd)), (ad, fd)

    losses = [float(value)]
    lr = 0.1
    start = time.perf_counter()
    for it in range(60):
        params = [p - lr * g for p, g in zip(params, grads)]
        value, grads = step(params, target)
        losses.append(float(value))
        if it % 10 == 9:
            print(f"step {it + 1:3d}  loss {value:.5f}")
    print(f"60 steps in {time.perf_counter() - start:.2f} s; "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    assert losses[-1] < 0.5 * losses[0], losses


if __name__ == "__main__":
    main()
