"""Newton's method in a tolerance-driven while_loop, with the Jacobian from jacfwd, solving

    x0**2 + x1**2 = p        (a circle of radius sqrt(p))
    x0 * x1       = 1        (a hyperbola)

and the gradient of the solution with respect to the parameter p *through the loop* (reverse
mode through a while_loop with a data-dependent trip count), checked against the implicit
function theorem and against finite differences. The forward pass records each step's
residuals on a tape that grows with the trip count; the backward pass walks it in reverse.
"""
import numpy as np

import tracejit as tj


def residual(x, p):
    return np.stack([x[0] ** 2 + x[1] ** 2 - p, x[0] * x[1] - 1.0])


def solve2(a, b):
    """Solve the 2x2 system a @ x = b (Cramer's rule)."""
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    return np.stack([(b[0] * a[1, 1] - a[0, 1] * b[1]) / det,
                     (a[0, 0] * b[1] - b[0] * a[1, 0]) / det])


def newton(p, x0=np.array([2.0, 0.3]), tol=1e-12, max_iter=50):
    jac = tj.jacfwd(residual)

    def keep_going(state):
        x, k = state
        r = residual(x, p)
        return (np.sum(r * r) > tol * tol) & (k < max_iter)

    def step(state):
        x, k = state
        return x - solve2(jac(x, p), residual(x, p)), k + 1

    x, iterations = tj.while_loop(keep_going, step, (x0, 0))
    return x, iterations


def first_root(p):
    return newton(p)[0][0]


def main():
    p = 4.0
    solve = tj.trace(newton)
    x, iterations = solve(p)
    print(f"solution x = {x}, after {int(iterations)} Newton steps; residual {residual(x, p)}")
    dx_dp = tj.trace(tj.grad(first_root))(p)
    # implicit function theorem: J dx/dp = -dF/dp = (1, 0)
    j = tj.jacfwd(residual)(x, p)
    expected = np.linalg.solve(j, np.array([1.0, 0.0]))[0]
    eps = 1e-6
    fd = (first_root(p + eps) - first_root(p - eps)) / (2 * eps)
    print(f"d x0 / d p through the loop: {float(dx_dp):.10f}")
    print(f"implicit function theorem:   {expected:.10f}")
    print(f"finite differences:          {float(fd):.10f}")
    assert np.isclose(dx_dp, expected, rtol=1e-8) and np.isclose(dx_dp, fd, rtol=1e-5)
    print("all three agree")
    # reverse mode recorded each Newton step's residuals on a tape as the loop ran
    print(f"tape kept for the backward pass: {tj.residual_bytes(first_root, p)} bytes for "
          f"{int(iterations)} steps")


if __name__ == "__main__":
    main()
