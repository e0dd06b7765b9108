"""Minimise the Rosenbrock function with Newton steps using the dense Hessian from
tracejit.hessian (one batched, compiled computation per step)."""
import numpy as np

import tracejit as tj


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def main(n=10, steps=30):
    value = tj.trace(rosenbrock)
    gradient = tj.trace(tj.grad(rosenbrock))
    hess = tj.trace(tj.hessian(rosenbrock))
    x = np.full(n, -1.0)
    x[::2] = 1.2
    for k in range(steps):
        g, h = gradient(x), hess(x)
        step = np.linalg.solve(h + 1e-8 * np.eye(n), g)
        t = 1.0                                    # backtracking keeps the iteration stable
        while value(x - t * step) > value(x) and t > 1e-4:
            t *= 0.5
        x = x - t * step
        print(f"step {k:2d}: f = {float(value(x)):.3e}, |grad| = {np.linalg.norm(gradient(x)):.3e}")
        if np.linalg.norm(gradient(x)) < 1e-10:
            break
    print("minimiser:", np.round(x, 8))
    assert np.allclose(x, 1.0, atol=1e-6)


if __name__ == "__main__":
    main()
