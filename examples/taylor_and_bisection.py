"""Data-dependent Python loops and branches, compiled and differentiated as written.

Functions written the way people write them, with `while`, `for ... break`, `if` and an early
`return` on traced values: Taylor series summed until their terms are small, a bisection root
finder and Newton's method. tracejit converts their control flow into while_loop/cond (see the
printed IR), compiles them, differentiates through them and vmaps them (each lane stops at its
own iteration); each result is checked against plain Python and against the exact derivative.
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


def exp_taylor(x):
    """exp(x) = 1 + x + x^2/2! + ..., for at most 200 terms: `break` once they are negligible."""
    total, term = 1.0, 1.0
    for k in range(1, 200):
        term = term * x / k
        total = total + term
        if np.abs(term) < 1e-17 * total:
            break
    return total


def newton_sqrt(a):
    """sqrt(a) by Newton's method, returning from inside the loop once a step is tiny."""
    x = a
    for _ in range(100):
        x_next = 0.5 * (x + a / x)
        if np.abs(x_next - x) <= 1e-15 * x:
            return x_next
        x = x_next
    return x


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

    e, de = tj.trace(exp_taylor), tj.grad(exp_taylor)
    xs = np.array([-2.0, 0.5, 1.0, 3.0])
    for x in xs:
        assert e(x) == exp_taylor(x) and abs(e(x) - np.exp(x)) < 1e-13 * np.exp(x)
        assert abs(de(x) - np.exp(x)) < 1e-12 * np.exp(x), (de(x), np.exp(x))
    lanes = tj.vmap(exp_taylor)(xs)                 # each lane breaks at its own k
    assert np.array_equal(lanes, [exp_taylor(x) for x in xs])
    print(f"exp({xs}) = {lanes}")
    s = tj.trace(newton_sqrt)
    for a in (2.0, 10.0, 0.3):
        assert s(a) == newton_sqrt(a) and abs(tj.grad(newton_sqrt)(a) - 0.5 / np.sqrt(a)) < 1e-12
    print(tj.trace(exp_taylor).ir(1.0))     # the first term, then a while loop


if __name__ == "__main__":
    main()
