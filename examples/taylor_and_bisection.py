"""Data-dependent Python loops and branches, compiled and differentiated as written.

Two functions written the way people write them, with `while` and `if` on traced values:
a Taylor series summed until its terms are small, and a bisection root finder. tracejit
converts their control flow into while_loop/cond (see the printed IR), compiles them, and
differentiates through them; each result is checked against plain Python and against the
exact derivative.
"""
import numpy as np

import tracejit as tj


def sin_taylor(x):
    """sin(x) = x - x^3/3! + x^5/5! - ..., summed until a term is below 1e-16."""
    total, term, k = 0.0, x, 1
    while np.abs(term) > 1e-16:
        total = total + term
        term = -term * x * x / ((2 * k) * (2 * k + 1))
        k += 1
    return total


def cube_root(c, lo=0.0, hi=10.0):
    """The root of t**3 = c on [lo, hi] by bisection: the number of halvings depends on c."""
    while hi - lo > 1e-13:
        mid = 0.5 * (lo + hi)
        if mid ** 3 > c:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def main():
    f, df = tj.trace(sin_taylor), tj.grad(sin_taylor)
    for x in (0.1, 1.0, 2.5):
        assert abs(f(x) - sin_taylor(x)) < 1e-15 and abs(f(x) - np.sin(x)) < 1e-14
        assert abs(df(x) - np.cos(x)) < 1e-12, (df(x), np.cos(x))
        print(f"sin({x}) = {f(x):.15f}   d/dx = {df(x):.15f}   cos = {np.cos(x):.15f}")

    g = tj.trace(cube_root)
    for c in (2.0, 27.0, 500.0):
        assert abs(g(c) - cube_root(c)) < 1e-12 and abs(g(c) - c ** (1 / 3)) < 1e-11
        print(f"cbrt({c}) = {g(c):.12f}")
    # bisection's result is piecewise constant in c: its derivative is 0 almost everywhere,
    # which the gradient through the loop reproduces (an implicit-function rule would differ)
    assert tj.grad(cube_root)(2.0) == 0.0

    print(tj.trace(cube_root).ir(2.0))      # one while loop with a cond inside


if __name__ == "__main__":
    main()
