"""Train a 2-layer MLP (tanh, softmax cross-entropy) with value_and_grad and SGD.

Uses scikit-learn's bundled digits data set when scikit-learn is installed, else a synthetic
3-class spiral. Prints loss and accuracy per epoch.
"""
import sys
import time

import numpy as np

import tracejit as tj


def load_data(rng):
    try:
        from sklearn.datasets import load_digits
        d = load_digits()
        x = (d.data / 16.0).astype(np.float32)
        return x, d.target.astype(np.int64), "digits (scikit-learn)"
    except ImportError:
        n, k = 300, 3
        xs, ys = [], []
        for c in range(k):
            r = np.linspace(0.0, 1.0, n)
            t = np.linspace(c * 4, (c + 1) * 4, n) + rng.standard_normal(n) * 0.2
            xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
            ys.append(np.full(n, c))
        return np.concatenate(xs).astype(np.float32), np.concatenate(ys), "synthetic spiral"


def init(rng, d_in, d_hidden, d_out):
    f32 = np.float32
    return {"W1": (rng.standard_normal((d_in, d_hidden)) / np.sqrt(d_in)).astype(f32),
            "b1": np.zeros(d_hidden, f32),
            "W2": (rng.standard_normal((d_hidden, d_out)) / np.sqrt(d_hidden)).astype(f32),
            "b2": np.zeros(d_out, f32)}


def logits(p, x):
    return np.tanh(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]


def loss(p, x, onehot):
    z = logits(p, x)
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * logp, axis=1))


@tj.trace
def sgd_step(p, x, onehot, lr):
    value, g = tj.value_and_grad(loss)(p, x, onehot)
    return value, {k: p[k] - lr * g[k] for k in p}


@tj.trace
def accuracy(p, x, labels):
    return np.mean((np.argmax(logits(p, x), axis=1) == labels).astype(np.float32))


def main(epochs=20, batch=64, lr=0.5):
    rng = np.random.default_rng(0)
    x, labels, name = load_data(rng)
    k = int(labels.max()) + 1
    onehot = np.eye(k, dtype=np.float32)[labels]
    order = rng.permutation(len(x))
    split = int(0.8 * len(x))
    tr, te = order[:split], order[split:]
    p = init(rng, x.shape[1], 64, k)
    print(f"data: {name}, {len(tr)} training / {len(te)} test examples, {k} classes")
    for epoch in range(epochs):
        t0 = time.perf_counter()
        perm = rng.permutation(tr)
        losses = []
        for i in range(0, len(perm) - batch + 1, batch):
            idx = perm[i:i + batch]
            value, p = sgd_step(p, x[idx], onehot[idx], np.float32(lr))
            losses.append(float(value))
        print(f"epoch {epoch + 1:2d}: loss {np.mean(losses):.4f}  "
              f"train acc {float(accuracy(p, x[tr], labels[tr])):.3f}  "
              f"test acc {float(accuracy(p, x[te], labels[te])):.3f}  "
              f"({1e3 * (time.perf_counter() - t0):.1f} ms)", flush=True)
    final = float(accuracy(p, x[te], labels[te]))
    if final < 0.8:
        sys.exit(f"test accuracy {final:.3f} is too low")


if __name__ == "__main__":
    main()
