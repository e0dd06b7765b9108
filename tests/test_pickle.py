"""Pickling traced functions and every derivative object (issue 17, item 2), and a real
distributed engine (item 3): Dask's LocalCluster with two worker processes.

By reference when the user's function is importable; otherwise the function by value (through
cloudpickle) with the artifacts of its compiled signatures, so that a fresh process runs them
with 0 traces and 0 compiles (``diskcache.stats['graph_compiled']``: graph modules compiled
from IR, the counter the disk cache and artifacts save)."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tracejit as tj

cloudpickle = pytest.importorskip("cloudpickle", reason="pickling lambdas and closures by "
                                  "value needs cloudpickle (an optional test dependency)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def loss(w, X, y):
    """Logistic regression: the mean negative log-likelihood (importable: by reference)."""
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / y.shape[0]


@tj.trace
def decorated(x):
    return np.sin(x) * 2.0


def _data(n=60, d=4, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.linspace(-1, 1, d)))).astype(float)
    return rng.normal(size=d), X, y


def _closures():
    """One object of each kind, built from a closure (not importable: pickled by value)."""
    lam = 0.25

    def penalised(w, X, y):
        z = X @ w
        return np.mean(np.logaddexp(0.0, z) - y * z) + lam * np.sum(np.tanh(w) ** 2)

    def model(w, X):
        return np.tanh(X @ w) * lam

    def scan_loss(w, X, y):                      # control flow in the graph
        def body(c, row):
            return c + np.log1p(np.exp(-row[1] * np.dot(row[0], w))), c
        total, _ = tj.scan(body, 0.0, (X, y))
        return total

    return {"trace": tj.trace(penalised), "grad": tj.grad(penalised),
            "value_and_grad": tj.value_and_grad(penalised, argnums=(0,)),
            "jacfwd": tj.jacfwd(model), "jacrev": tj.jacrev(model),
            "hessian": tj.hessian(penalised), "scan_grad": tj.grad(scan_loss),
            "vmap": tj.vmap(tj.grad(penalised), in_axes=(0, None, None)),
            "jit_grad": tj.jit(tj.grad(lambda w, X, y: penalised(w, X, y) * 2.0)),
            "jit_vmap": tj.jit(tj.vmap(model, in_axes=(None, 0)))}


def _args(name, w, X, y):
    if name in ("jacfwd", "jacrev"):
        return (w, X)
    if name == "vmap":
        return (np.stack([w, -w, 2 * w]), X, y)
    if name == "jit_vmap":
        return (w, X[:12].reshape(3, 4, -1))
    return (w, X, y)


_CHILD = r"""
import json, pickle, sys
import numpy as np
import tracejit as tj
from tracejit.backend.engine import diskcache
objs, args, want = pickle.loads(sys.stdin.buffer.read())
report = {}
for name, f in objs.items():
    got = tj.tree.tree_leaves(f(*args[name]))
    same = all(np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
               for a, b in zip(got, tj.tree.tree_leaves(want[name])))
    report[name] = [same, f.cache_info().traces, f.cache_info().misses]
report["graph_compiled"] = diskcache.stats["graph_compiled"]
w, X, y = args["trace"]                      # a new signature traces (the function came along)
f = objs["trace"]
f(w[:3], X[:, :3], y)
report["new_signature_traces"] = f.cache_info().traces
print(json.dumps(report))
"""


def _run_child(payload):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TRACEJIT_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", _CHILD], input=payload, capture_output=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return json.loads(r.stdout.decode().splitlines()[-1])


@pytest.fixture(scope="module")
def compiled_objects():
    w, X, y = _data()
    objs = _closures()
    args = {name: _args(name, w, X, y) for name in objs}
    want = {name: f(*args[name]) for name, f in objs.items()}
    return objs, args, want


def test_unpickled_objects_run_without_tracing_or_compiling(compiled_objects):
    """In a fresh process, every kind of object (trace, grad, value_and_grad, jacfwd, jacrev,
    hessian, vmap, jit of grad and of vmap; a scan inside) gives bit-identical results for
    its known signatures with 0 traces and 0 graph compiles; a new signature traces once.
    The standard pickler (multiprocessing's): the closures go through cloudpickle inside it
    (cloudpickle's own pickler, Dask's, is the Dask test's)."""
    report = _run_child(pickle.dumps(compiled_objects))
    for name in compiled_objects[0]:
        same, traces, _ = report[name]
        assert same, name
        assert traces == 0, name
    assert report["graph_compiled"] == 0
    assert report["new_signature_traces"] == 1


def test_importable_functions_pickle_by_reference():
    w, X, y = _data()
    assert pickle.loads(pickle.dumps(decorated)) is decorated
    g = tj.grad(loss)
    g(w, X, y)
    data = pickle.dumps(g)
    assert b"manifest.json" not in data and len(data) < 400      # no artifact: a reference
    assert pickle.loads(data) is g                   # the same object (derivatives memoise)
    t = tj.trace(loss)
    t(w, X, y)
    back = pickle.loads(pickle.dumps(t))
    assert back is not t and back.fun is loss and back.cache_info().currsize == 0


def test_value_keyed_and_static_signatures_come_along():
    """Signatures keyed by a Python int's value (``range(n)``) and by static arguments are
    found again after unpickling (what the traces learned travels with them)."""
    scale = 1.5

    def f(x, n, mode):
        for _ in range(n):
            x = np.sin(x) * scale
        return x if mode == "raw" else x.sum()
    t = tj.trace(f, static_argnums=2)
    x = np.linspace(0, 1, 5)
    want = [t(x, 3, "raw"), t(x, 4, "sum")]
    back = pickle.loads(cloudpickle.dumps(t))
    np.testing.assert_array_equal(back(x, 3, "raw"), want[0])
    assert back(x, 4, "sum") == want[1]
    assert back.cache_info().traces == 0
    back(x, 5, "sum")
    assert back.cache_info().traces == 1


# -------------------------------------------------------------------------------------------
# Dask

def _graph_compiles():
    from tracejit.backend.engine import diskcache as dc
    return dc.stats["graph_compiled"]


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="Dask's distributed scheduler is "
                                      "an optional test dependency")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    client.wait_for_workers(2)
    yield client
    client.close()
    cluster.close()


def _partitions(n_parts=8):
    w, X, y = _data(n=800, d=5, seed=11)
    return w, X, y, [(w, X[i::n_parts].copy(), y[i::n_parts].copy()) for i in range(n_parts)]


def test_dask_data_parallel_gradient_by_value(dask_client):
    """A closure's gradient mapped over 8 partitions on 2 worker processes: the sum agrees
    with the single-process gradient, and the workers compile nothing (the compiled
    signatures travel with the function)."""
    w, X, y, parts = _partitions()
    rate = 1.0 / X.shape[0]

    def part_loss(w, X, y):
        z = X @ w
        return np.sum(np.logaddexp(0.0, z) - y * z) * rate

    g = tj.grad(part_loss)
    want = g(w, X, y)
    mine = sum(g(*p) for p in parts)                 # compiles the partitions' signature here
    before = dask_client.run(_graph_compiles)
    got = sum(dask_client.gather(dask_client.map(lambda p: g(*p), parts, pure=False)))
    after = dask_client.run(_graph_compiles)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got, mine)         # the same machine code, the same order
    assert all(after[k] - before[k] == 0 for k in after), (before, after)


def test_dask_data_parallel_gradient_by_reference(dask_client):
    """An importable loss goes by reference: each worker imports it and compiles its
    gradient at most once for the 4 partitions it gets."""
    w, X, y, parts = _partitions()
    want = tj.grad(loss)(w, X, y)
    before = dask_client.run(_graph_compiles)
    futures = dask_client.map(tj.grad(loss), [p[0] for p in parts], [p[1] for p in parts],
                              [p[2] for p in parts], pure=False)
    got = sum(dask_client.gather(futures)) / len(parts)
    after = dask_client.run(_graph_compiles)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    compiles = [after[k] - before[k] for k in after]
    assert all(c <= 1 for c in compiles) and sum(compiles) >= 1, compiles
