"""Disk cache of user graphs: an Executable's module is cacheable (content-derived symbol names,
constants through a pointer table), so a second process loads a traced function's object code
instead of compiling it; a corrupt entry is recompiled. Library code (vector math, the thread
pool, the dispatch type) is cached separately in ``config.library_cache_dir``."""
import json
import os
import subprocess
import sys

SCRIPT = r"""
import json
import numpy as np
import tracejit as tj
from tracejit.backend.engine import jit
tj.config.cache_dir = {cache_dir!r}
W = np.linspace(-1.0, 1.0, 16)          # a captured constant array

def f(x):
    def step(i, v):
        return np.tanh(v) * W + 0.1 * np.sin(v)
    return np.sum(tj.fori_loop(0, 100, step, x) * W)

base = dict(jit.stats)
g = tj.jit(f, backend="llvm")
value = float(g(np.linspace(0.0, 2.0, 16)))
exe = g.lower(np.linspace(0.0, 2.0, 16)).executable
print(json.dumps({{"value": value, "native": exe.native,
                  **{{k: jit.stats[k] - base[k] for k in ("compiled", "loaded", "corrupt")}}}}))
"""


def _run(tmp_path):
    env = {**os.environ, "TRACEJIT_LIBRARY_CACHE_DIR": str(tmp_path / "lib")}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(cache_dir=str(tmp_path / "user"))],
                         capture_output=True, text=True, check=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_traced_function_loads_from_disk_in_a_second_process(tmp_path):
    first = _run(tmp_path)
    assert first["native"] and first["loaded"] == 0 and first["compiled"] >= 1
    files = [f for f in os.listdir(tmp_path / "user") if f.endswith(".o")]
    assert len(files) == 1                   # the graph's module (entries are not cached)
    second = _run(tmp_path)
    assert second["value"] == first["value"]
    assert second["loaded"] == 1 and second["compiled"] == first["compiled"] - 1
    with open(tmp_path / "user" / files[0], "r+b") as f:
        f.seek(60)
        f.write(b"\xff" * 16)
    third = _run(tmp_path)
    assert third["value"] == first["value"]
    assert third["corrupt"] == 1 and third["loaded"] == 0
    assert third["compiled"] == first["compiled"]
    assert _run(tmp_path)["loaded"] == 1


def test_library_code_is_cached(tmp_path):
    env = {**os.environ, "TRACEJIT_LIBRARY_CACHE_DIR": str(tmp_path)}
    code = ("import numpy as np, tracejit as tj, json\n"
            "from tracejit.backend.engine import jit\n"
            "f = tj.jit(lambda x: np.sum(np.sin(x) * np.exp(x)), backend='llvm')\n"
            "f(np.linspace(0, 1, 200_000))\n"
            "print(json.dumps({k: jit.stats[k] for k in ('lib_compiled', 'lib_loaded')}))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                      text=True, check=True, env=env, cwd=root)
                       .stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert runs[0]["lib_compiled"] >= 2 and runs[0]["lib_loaded"] == 0
    assert runs[1]["lib_compiled"] == 0 and runs[1]["lib_loaded"] == runs[0]["lib_compiled"]


def test_same_graph_twice_in_one_process_compiles_once():
    import numpy as np
    import tracejit as tj
    from tracejit.backend.engine import jit
    x = np.linspace(0.0, 1.0, 33)
    fn = lambda x: np.cos(x) * 3.0 + np.float64(0.25) * x  # noqa: E731
    tj.jit(fn, backend="llvm")(x)
    before = jit.stats["compiled"]
    g = tj.jit(fn, backend="llvm")
    np.testing.assert_allclose(g(x), np.cos(x) * 3.0 + 0.25 * x)
    assert jit.stats["compiled"] - before <= 1      # at most the entry module, not the graph
