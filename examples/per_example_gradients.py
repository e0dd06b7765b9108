"""Per-example gradients with vmap(grad(loss)): one batched computation instead of a Python
loop, checked against the loop."""
import time

import numpy as np

import tracejit as tj


def loss(w, x, y):
    """Logistic loss of one example."""
    return np.log1p(np.exp(-y * np.dot(x, w)))


def main():
    rng = np.random.default_rng(0)
    n, d = 256, 20
    X = rng.standard_normal((n, d))
    y = np.sign(rng.standard_normal(n))
    w = rng.standard_normal(d) * 0.1

    per_example = tj.trace(tj.vmap(tj.grad(loss), in_axes=(None, 0, 0)))
    t0 = time.perf_counter()
    G = per_example(w, X, y)
    t1 = time.perf_counter()
    single = tj.trace(tj.grad(loss))
    loop = np.stack([single(w, X[i], y[i]) for i in range(n)])
    t2 = time.perf_counter()
    print(f"per-example gradients: shape {G.shape} (first call incl. compile "
          f"{1e3 * (t1 - t0):.1f} ms; Python loop of {n} cached calls {1e3 * (t2 - t1):.1f} ms)")
    assert np.allclose(G, loop, rtol=1e-12, atol=1e-14)
    print("vmap(grad) agrees with the loop; max |difference| =", np.abs(G - loop).max())
    norms = np.linalg.norm(G, axis=1)
    print(f"gradient norms: min {norms.min():.4f}, median {np.median(norms):.4f}, "
          f"max {norms.max():.4f}")


if __name__ == "__main__":
    main()
