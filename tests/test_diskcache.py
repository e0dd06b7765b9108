"""The on-disk object cache: a second process loads instead of compiling; a corrupt entry is
recompiled; concurrent writers leave a valid entry."""
import os
import subprocess
import sys

SCRIPT = r"""
import ctypes, json
from llvmlite import ir
import tracejit
from tracejit.backend.engine import jit
tracejit.config.cache_dir = {cache_dir!r}
m = ir.Module()
f = ir.Function(m, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), "tj_test_cache_sq")
b = ir.IRBuilder(f.append_basic_block())
b.ret(b.fadd(b.fmul(f.args[0], f.args[0]), ir.Constant(ir.DoubleType(), 0.5)))
base = dict(jit.stats)
jit.compile_ir(m, cacheable=True)
fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(jit.function_address("tj_test_cache_sq"))
print(json.dumps({{"value": fn(3.0), "compiled": jit.stats["compiled"] - base["compiled"],
                  "loaded": jit.stats["loaded"] - base["loaded"],
                  "corrupt": jit.stats["corrupt"] - base["corrupt"]}}))
"""


def _run(cache_dir):
    import json
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(cache_dir=str(cache_dir))],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_and_corrupt_entry_recovers(tmp_path):
    first = _run(tmp_path)
    assert first == {"value": 9.5, "compiled": 1, "loaded": 0, "corrupt": 0}
    files = [f for f in os.listdir(tmp_path) if f.endswith(".o")]
    assert len(files) == 1
    second = _run(tmp_path)
    assert second == {"value": 9.5, "compiled": 0, "loaded": 1, "corrupt": 0}
    with open(tmp_path / files[0], "r+b") as f:
        f.seek(40)
        f.write(b"\xff" * 16)
    third = _run(tmp_path)
    assert third == {"value": 9.5, "compiled": 1, "loaded": 0, "corrupt": 1}
    assert _run(tmp_path)["loaded"] == 1


def test_concurrent_writers(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT.format(cache_dir=str(tmp_path))],
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, _ = p.communicate()
        assert p.returncode == 0 and '"value": 9.5' in out
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []
    assert _run(tmp_path)["loaded"] == 1
