"""tracejit in one page: trace, print the IR, retrace on a new shape.

The worked example of the seed notes: u = a*b, v = u + c, y = v**2 with a=2, b=3, c=1 gives
u=6, v=7, y=49.
"""
import numpy as np

import tracejit as tj


@tj.trace
def y(a, b, c):
    u = a * b
    v = u + c
    return v ** 2


print("y(2, 3, 1) =", y(2.0, 3.0, 1.0))
print("its IR:")
print(y.ir(2.0, 3.0, 1.0))

# The same function on arrays: a new signature, so it is traced again (once).
a = np.array([1.0, 2.0, 3.0])
print("y(a, 3, 1) =", y(a, 3.0, 1.0))
print(y.ir(a, 3.0, 1.0))
y(a + 1, 3.0, 1.0)                      # same signature: no retrace
print("cache:", y.cache_info())

# Plain NumPy code traces unchanged; the micro-autograd example of the seeds: (x + 2) * 3.
g = tj.trace(lambda x: (x + 2) * 3)
print("(x + 2) * 3 at x = 1:", g(1.0))
print(g.ir(np.ones(4, np.float32)))
