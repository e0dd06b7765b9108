"""Large modules compile in parts on compile worker processes (``engine/parallel.py``,
``split.py``, ``workers.py``): bit-identical results and object code, each part cached under
its own key, a worker out of memory is a MemoryError, and evicted machine code is freed
(``engine/loaded.py``)."""
import gc
import json
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.engine import diskcache, jit, loaded, parallel, split, workers
from tracejit.test_util import using_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H = 8


def _rnn(T):
    """The gradient of a small tanh RNN written as a Python loop (matmul kernels: O1)."""
    def loss(W, xs):
        h = np.zeros(H)
        total = 0.0
        for t in range(T):
            h = np.tanh(W @ h + xs[t])
            total = total + np.sum(h * h)
        return total
    return tj.jit(tj.grad(loss))


def _chain(n):
    """A long elementwise chain with a reduction (fused loops: opt 0)."""
    def f(x):
        for k in range(n):
            x = np.sin(x) * (1.0 + 0.01 * k) + np.sum(x) * 1e-3
        return x
    return tj.jit(f)


def _while():
    def f(x):
        def cond(c):
            return c[1] < 5.0

        def body(c):
            return np.cos(c[0]) + 0.5 * c[0], c[1] + 1.0
        return np.sum(tj.while_loop(cond, body, (x, 0.0))[0] ** 2) + x
    return tj.jit(f)


def _cases():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((H, H)) * 0.3
    xs = rng.standard_normal((10, H))
    x = rng.standard_normal(37)
    return [("rnn", lambda: _rnn(10), (W, xs)), ("chain", lambda: _chain(40), (x,)),
            ("while", _while, (x,))]


def _fresh(make, args):
    """Results of a new jitted function; its module is freed before returning (the next
    compile of the same graph compiles again instead of reusing it)."""
    f = make()
    out = [np.array(f(*args))]
    del f
    gc.collect()
    loaded.drain()
    return out


@pytest.fixture
def in_parts(monkeypatch):
    """Every module compiles in parts on the workers (small parts: several per module)."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "PART_LINES", 60)


@pytest.mark.parametrize("name,make,args", _cases(), ids=[c[0] for c in _cases()])
def test_parts_give_bit_identical_results(name, make, args, monkeypatch):
    whole = _fresh(make, args)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "PART_LINES", 60)
    before = diskcache.stats["compiled"]
    parts = _fresh(make, args)
    assert diskcache.stats["compiled"] - before >= 2        # it did compile in parts
    assert workers.pids()
    for a, b in zip(whole, parts):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b), name
    with using_backend("interpret"):
        ref = make()(*args)
    np.testing.assert_allclose(parts[0], ref, rtol=1e-12, atol=1e-12)


def test_worker_object_code_is_the_in_process_object_code():
    rng = np.random.default_rng(1)
    W, xs = rng.standard_normal((H, H)), rng.standard_normal((4, H))
    text = _rnn(4).lower(W, xs).executable.llvm_ir
    parts = split.split(text, 3)
    assert parts is not None and len(parts) == 3
    assert sorted(n for p in parts for n in p.functions) == sorted(
        n for n in jit.defined_symbols(text) if not n.endswith("_consts"))
    cpu, features = jit.host_cpu()
    for opt in (0, 1):
        futures = [workers.submit(p.text, opt, cpu, features) for p in parts]
        for p, fut in zip(parts, futures):
            assert fut.result() == jit.compile_object(p.text, opt)


def test_split_refuses_what_it_does_not_understand():
    text = ('@"g" = global {i32, i32} {i32 1, i32 2}\n'
            'define i32 @"a"() {\n  ret i32 1\n}\n\ndefine i32 @"b"() {\n  ret i32 2\n}\n')
    assert split.split(text, 2) is None
    assert split.split(text.splitlines(True)[1], 2) is None     # a single function


def test_parts_are_cached_separately(in_parts, tmp_path, monkeypatch):
    monkeypatch.setattr(tj.config, "cache_dir", str(tmp_path))
    make, args = _cases()[0][1:]
    s0 = dict(diskcache.stats)
    ref = _fresh(make, args)
    entries = sorted(p for p in os.listdir(tmp_path) if p.endswith(".o"))
    compiled = diskcache.stats["graph_compiled"] - s0["graph_compiled"]
    assert compiled >= 2 and len(entries) == compiled
    s1 = dict(diskcache.stats)
    again = _fresh(make, args)                  # every part from the cache
    assert diskcache.stats["graph_compiled"] == s1["graph_compiled"]
    assert diskcache.stats["loaded"] - s1["loaded"] >= len(entries)
    assert np.array_equal(ref[0], again[0])
    victim = tmp_path / entries[0]               # a byte changed without the key: refused
    blob = bytearray(victim.read_bytes())
    blob[-1] ^= 1
    victim.write_bytes(bytes(blob))
    s2 = dict(diskcache.stats)
    third = _fresh(make, args)
    assert diskcache.stats["corrupt"] - s2["corrupt"] == 1
    assert diskcache.stats["graph_compiled"] - s2["graph_compiled"] == 1
    assert np.array_equal(ref[0], third[0])


def _vm_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs resource.prlimit (Linux)")
def test_worker_out_of_memory_is_a_memory_error(in_parts):
    make, args = _cases()[0][1:]
    ref = _fresh(make, args)                     # starts the pool
    workers.shutdown()
    workers.submit("", 0, *jit.host_cpu()).result()     # a fresh pool, every worker started
    for pid in workers.pids():
        resource.prlimit(pid, resource.RLIMIT_AS, (_vm_bytes(pid) + (1 << 20),) * 2)
    with pytest.raises(MemoryError, match=r"out of memory compiling part \d+ of \d+ .*lines"):
        _fresh(make, args)
    workers.shutdown()                           # the limited workers go; the process lives
    assert np.array_equal(_fresh(make, args)[0], ref[0])


def test_a_killed_idle_worker_is_replaced(in_parts):
    make, args = _cases()[1][1:]
    ref = _fresh(make, args)
    for pid in workers.pids():
        os.kill(pid, signal.SIGKILL)
    assert np.array_equal(_fresh(make, args)[0], ref[0])


def test_a_worker_killed_while_compiling_is_a_memory_error():
    cpu, features = jit.host_cpu()
    body = "\n".join(f"  %v{k} = fmul double %v{k - 1}, 1.5" for k in range(1, 200000))
    text = f"define double @big(double %v0) {{\n{body}\n  ret double %v199999\n}}\n"
    workers.shutdown()
    workers.submit("", 0, cpu, features).result()
    futures = [workers.submit(text, 1, cpu, features) for _ in workers.pids()]
    # the jobs reach the workers through a queue: a worker killed before it took its job is
    # replaced and the job then succeeds, so kill them well inside their compiles (each takes
    # seconds on this 2*10^5-instruction function)
    time.sleep(1.0)
    assert not any(f.done() for f in futures)
    for pid in workers.pids():
        os.kill(pid, signal.SIGKILL)
    for fut in futures:
        with pytest.raises(workers.WorkerDied) as died:
            fut.result()
        assert died.value.why() == "killed by SIGKILL"


RSS = r"""
import gc, json, os
import numpy as np
import tracejit as tj
from tracejit.backend.engine import loaded
tj.config.cache_size = 4

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def code_maps():               # anonymous executable mappings: where MCJIT puts machine code
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.split()[1].startswith("r-x") and
                   len(line.split()) < 6)

f = tj.jit(lambda x: np.tanh(x) * 2.0 + x.sum())
x = np.ones(7)

def evict(i):                  # a new shape: traced, compiled, the oldest evicted
    f.lower(np.ones(i + 1))

def clear(i):
    f.clear_cache()
    f.lower(x)

out = {}
for name, cycle in (("evict", evict), ("clear", clear)):
    for i in range(40):
        cycle(i)
    gc.collect()
    r0, m0 = rss(), code_maps()
    for i in range(40, 40 + {n}):
        cycle(i)
    gc.collect()
    loaded.drain()
    out[name] = (rss() - r0) / {n} / 1024
    out[name + "_maps"] = code_maps() - m0
    out[name + "_loaded"] = loaded.count()
print(json.dumps(out))
"""


def test_evicted_machine_code_is_freed():
    """Executables evicted from the per-function cache and ``clear_cache()`` free their
    machine code (one engine per module, closed with its last user): the executable mappings
    of JIT code do not grow over hundreds of trace/evict cycles (they grew by one or more per
    module when the process engine kept all code), and neither does memory when the same
    signature is retraced. A new signature per cycle still grows by 25-50 KB (measured; 71 KB
    before): not machine code, and 5 KB when each cycle is a new function instead."""
    out = subprocess.run([sys.executable, "-c", RSS.replace("{n}", "200")], cwd=ROOT,
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["evict_loaded"] <= 4 and res["clear_loaded"] <= 1, res
    assert res["evict_maps"] <= 8 and res["clear_maps"] <= 8, res
    assert res["clear"] < 10 and res["evict"] < 80, res
