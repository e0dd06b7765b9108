"""Reliability (issue #11): the on-disk cache trusts only what this user wrote (planted, copied,
corrupted and hostile files are refused and recompiled), fork while compiling, threads sharing a
signature cache, memory on eviction, config validation.

Out-of-process cases run in a subprocess; a test that could hang has a timeout.
"""
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.engine import diskcache, jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
OTHER_UID = 12345


def _python(code, env=None, timeout=120):
    """Run ``code`` in a fresh interpreter; the last stdout line is JSON."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, env={**os.environ, **(env or {})}, cwd=ROOT,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# 1. cache trust model

USER = """
import json, sys
import numpy as np
import tracejit as tj
from tracejit.backend.engine import jit
tj.config.cache_dir = {cache_dir!r}
base = dict(jit.stats)
x = np.arange(5.0)
f = tj.jit(lambda x: x * 2.0 + 1.0)
g = tj.jit(lambda x: np.sin(x) * 3.0 - x)
exe_f, exe_g = f.lower(x).executable, g.lower(x).executable
out = {{"f": f(x).tolist(), "g": g(x).tolist(), "f_name": exe_f.kernel_name[:-7],
       "g_name": exe_g.kernel_name[:-7], "f_ir": exe_f.llvm_ir, "g_ir": exe_g.llvm_ir,
       "opt": exe_f.opt}}
out.update({{k: jit.stats[k] - base[k] for k in ("compiled", "loaded", "corrupt", "rejected")}})
print(json.dumps(out))
"""
X = np.arange(5.0)
F_RIGHT = (X * 2.0 + 1.0).tolist()
G_RIGHT = (np.sin(X) * 3.0 - X).tolist()


def _user(cache_dir):
    return _python(USER.format(cache_dir=str(cache_dir)))


def _entry_of(cache_dir, name_ir):
    """File name of the entry of a module whose IR text is ``name_ir``."""
    return os.path.join(cache_dir, jit.cache_key(name_ir, 0) + ".o")


def _malicious_object(first, victim_name):
    """Object code that defines the victim's symbols (f = x*2+1) with the code of x*100+1: what
    an attacker who can write to the cache directory would plant."""
    evil = tj.jit(lambda x: x * 100.0 + 1.0).lower(X).executable
    text = evil.llvm_ir.replace(evil.kernel_name[:-7], victim_name)
    mod = jit.parse(text)
    mod.triple, mod.data_layout = jit.triple(), jit.data_layout()
    return jit._fast_tm().emit_object(mod), evil


def test_planted_entry_with_a_valid_checksum_is_not_run(tmp_path):
    first = _user(tmp_path)
    assert first["f"] == F_RIGHT and first["opt"] == 0 and first["compiled"] >= 2
    path = _entry_of(tmp_path, first["f_ir"])
    assert os.path.exists(path)
    obj, _ = _malicious_object(first, first["f_name"])
    # the old format: magic + a plain hash anyone can recompute + object
    with open(path, "wb") as fh:
        fh.write(b"TJOBJ2\n" + jit.new_hash(obj).digest() + obj)
    second = _user(tmp_path)
    assert second["f"] == F_RIGHT and second["corrupt"] == 1 and second["loaded"] == 1
    # the current format with every field right except the secret (a key the attacker chose)
    header = diskcache._header(os.path.basename(path)[:-2], jit.defined_symbols(first["f_ir"]))
    mac = diskcache._mac(b"k" * 32, header, obj)
    with open(path, "wb") as fh:
        fh.write(diskcache.MAGIC + mac + diskcache._HEADER.pack(len(header)) + header + obj)
    third = _user(tmp_path)
    assert third["f"] == F_RIGHT and third["corrupt"] == 1 and third["loaded"] == 1
    fourth = _user(tmp_path)              # the refused entry was replaced by a valid one
    assert fourth["f"] == F_RIGHT and fourth["loaded"] == 2 and fourth["corrupt"] == 0


def test_entry_copied_to_another_functions_name_is_refused(tmp_path):
    first = _user(tmp_path)
    f_path, g_path = _entry_of(tmp_path, first["f_ir"]), _entry_of(tmp_path, first["g_ir"])
    with open(f_path, "rb") as src, open(g_path, "wb") as dst:
        dst.write(src.read())           # a valid, authenticated entry, at the wrong name
    for _ in range(2):                  # before the fix: RuntimeError in every later process
        second = _user(tmp_path)
        assert second["f"] == F_RIGHT and second["g"] == G_RIGHT
    assert second["loaded"] == 2 and second["corrupt"] == 0


@pytest.fixture
def cache(tmp_path):
    """A trusted cache directory with one valid entry ``k1.o`` (key 'k1', symbols a and b)."""
    d = tmp_path / "cache"
    diskcache.write_entry(str(d / "k1.o"), "k1", ["b", "a"], b"object code" * 100)
    assert diskcache.read_entry(str(d / "k1.o"), "k1", ["a", "b"]) == b"object code" * 100
    return d


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_files_and_directories_are_private(cache):
    assert _mode(cache) == 0o700
    assert _mode(cache / "k1.o") == 0o600 and _mode(cache / ".key") == 0o600
    assert len((cache / ".key").read_bytes()) == 32
    assert sorted(os.listdir(cache)) == [".key", "k1.o"]


def _counts():
    return dict(diskcache.stats)


def _delta(before, name):
    return diskcache.stats[name] - before[name]


@pytest.mark.parametrize("key, symbols", [("k2", ["a", "b"]), ("k1", ["a"]),
                                          ("k1", ["a", "b", "c"]), ("k1", ["a", "x"])])
def test_entry_bound_to_its_key_and_symbols(cache, key, symbols):
    before = _counts()
    assert diskcache.read_entry(str(cache / "k1.o"), key, symbols) is None
    assert _delta(before, "corrupt") == 1 and not (cache / "k1.o").exists()


def test_any_flipped_byte_is_refused(cache):
    blob = (cache / "k1.o").read_bytes()
    for pos in range(0, len(blob), 37):
        bad = bytearray(blob)
        bad[pos] ^= 0x40
        (cache / "k1.o").write_bytes(bytes(bad))
        os.chmod(cache / "k1.o", 0o600)
        assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) is None, pos
    (cache / "k1.o").write_bytes(blob[:-1])
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) is None


def test_entry_writable_by_others_is_refused(cache):
    os.chmod(cache / "k1.o", 0o666)
    before = _counts()
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) is None
    assert _delta(before, "rejected") == 1 and not (cache / "k1.o").exists()


@pytest.mark.skipif(not IS_ROOT, reason="chown to another user needs root")
def test_entry_of_another_user_is_refused(cache):
    os.chown(cache / "k1.o", OTHER_UID, OTHER_UID)
    before = _counts()
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) is None
    assert _delta(before, "rejected") == 1 and not (cache / "k1.o").exists()


@pytest.mark.parametrize("how", ["mode", "owner"])
def test_untrusted_directory_is_not_used(tmp_path, how, caplog):
    d = tmp_path / f"shared-{how}"
    diskcache.write_entry(str(d / "k1.o"), "k1", [], b"obj")
    if how == "mode":
        os.chmod(d, 0o777)
    elif IS_ROOT:
        os.chown(d, OTHER_UID, OTHER_UID)
    else:
        pytest.skip("chown to another user needs root")
    assert diskcache.read_entry(str(d / "k1.o"), "k1", []) is None
    diskcache.write_entry(str(d / "k2.o"), "k2", [], b"obj")
    assert sorted(os.listdir(d)) == [".key", "k1.o"]     # nothing read, written or removed
    assert "not using cache directory" in caplog.text


@pytest.mark.parametrize("how", ["mode", "owner", "size", "symlink"])
def test_untrusted_key_file_is_replaced(cache, tmp_path, how):
    key = cache / ".key"
    if how == "mode":
        os.chmod(key, 0o644)
    elif how == "owner":
        if not IS_ROOT:
            pytest.skip("chown to another user needs root")
        os.chown(key, OTHER_UID, OTHER_UID)
    elif how == "size":
        key.write_bytes(b"short")
    else:
        (tmp_path / "planted").write_bytes(b"K" * 32)
        os.chmod(tmp_path / "planted", 0o600)
        key.unlink()
        key.symlink_to(tmp_path / "planted")
    before = _counts()
    # the entry was made with the old key: whatever it was, it is not trusted any more
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) is None
    assert _delta(before, "rejected") == 1
    assert not key.is_symlink() and _mode(key) == 0o600 and len(key.read_bytes()) == 32
    assert key.read_bytes() != b"K" * 32
    diskcache.write_entry(str(cache / "k1.o"), "k1", ["a", "b"], b"new")
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", ["a", "b"]) == b"new"


def test_concurrent_key_creation_agrees(tmp_path):
    """Processes racing to create the key of a new directory all end up with the same key."""
    d = tmp_path / "race"
    code = f"""
    import json, os
    from tracejit.backend.engine import diskcache
    name = "k%d.o" % os.getpid()
    diskcache.write_entry(os.path.join({str(d)!r}, name), name[:-2], [], b"x")
    print(json.dumps(name))
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for _ in range(6)]
    names = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    for name in names:
        assert diskcache.read_entry(str(d / name), name[:-2], []) == b"x"
    assert [n for n in os.listdir(d) if n.endswith(".tmp")] == []


# ---------------------------------------------------------------------------------------------
# 2. hostile files at an entry's path

def _read_with_timeout(path, timeout=10.0):
    box = []
    t = threading.Thread(target=lambda: box.append(diskcache.read_entry(str(path), "k1", [])),
                         daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the loader blocked"
    return box[0]


def test_fifo_at_entry_path_does_not_block(cache):
    (cache / "k1.o").unlink()
    os.mkfifo(cache / "k1.o", 0o600)
    before = _counts()
    assert _read_with_timeout(cache / "k1.o") is None
    assert _delta(before, "rejected") == 1 and not (cache / "k1.o").exists()


@pytest.mark.parametrize("target", ["/dev/zero", "valid-entry"])
def test_symlink_at_entry_path_is_not_followed(cache, tmp_path, target):
    if target == "valid-entry":         # even to an entry that would authenticate
        os.replace(cache / "k1.o", tmp_path / "elsewhere.o")
        target = tmp_path / "elsewhere.o"
    else:
        (cache / "k1.o").unlink()
    os.symlink(target, cache / "k1.o")
    before = _counts()
    t0 = time.perf_counter()
    assert _read_with_timeout(cache / "k1.o") is None
    assert time.perf_counter() - t0 < 5
    assert _delta(before, "rejected") == 1 and not os.path.lexists(cache / "k1.o")


def test_oversized_entry_is_not_read(cache):
    with open(cache / "k1.o", "r+b") as fh:
        fh.truncate(diskcache.MAX_ENTRY_BYTES + 1)      # sparse: nothing is written
    before = _counts()
    t0 = time.perf_counter()
    assert _read_with_timeout(cache / "k1.o") is None
    assert time.perf_counter() - t0 < 2
    assert _delta(before, "rejected") == 1


def test_directory_at_entry_path_leaves_no_temporary_files(cache):
    (cache / "k1.o").unlink()
    (cache / "k1.o").mkdir()
    (cache / "k1.o" / "inside").write_bytes(b"")       # not empty: cannot be removed
    for _ in range(3):
        assert _read_with_timeout(cache / "k1.o") is None
        diskcache.write_entry(str(cache / "k1.o"), "k1", [], b"obj")
    assert sorted(os.listdir(cache)) == [".key", "k1.o"]
    (cache / "k1.o" / "inside").unlink()
    assert _read_with_timeout(cache / "k1.o") is None  # an empty one is removed
    diskcache.write_entry(str(cache / "k1.o"), "k1", [], b"obj")
    assert diskcache.read_entry(str(cache / "k1.o"), "k1", []) == b"obj"


def test_traced_functions_survive_hostile_cache_files(tmp_path):
    """End to end: a FIFO and a link to /dev/zero at the entry paths of two traced functions
    (planted before the process that compiles them starts); it runs right, within the timeout,
    and replaces them with valid entries."""
    f_ir = tj.jit(lambda x: x * 2.0 + 1.0).lower(X).executable.llvm_ir
    g_ir = tj.jit(lambda x: np.sin(x) * 3.0 - x).lower(X).executable.llvm_ir
    d = tmp_path / "user"
    d.mkdir(mode=0o700)
    os.mkfifo(_entry_of(d, f_ir), 0o600)
    os.symlink("/dev/zero", _entry_of(d, g_ir))
    out = _python(USER.format(cache_dir=str(d)), timeout=60)
    assert out["f"] == F_RIGHT and out["g"] == G_RIGHT and out["rejected"] == 2
    assert out["f_ir"] == f_ir and out["g_ir"] == g_ir
    for ir_text in (f_ir, g_ir):
        assert stat.S_ISREG(os.lstat(_entry_of(d, ir_text)).st_mode)
    assert _user(d)["loaded"] == 2


# ---------------------------------------------------------------------------------------------
# 6. config validation

@pytest.mark.parametrize("name, bad, error", [
    ("max_while_iterations", -3, ValueError), ("max_while_iterations", "abc", TypeError),
    ("max_while_iterations", 1.5, TypeError), ("max_while_iterations", True, TypeError),
    ("cache_size", 0, ValueError), ("cache_size", -1, ValueError), ("cache_size", "8", TypeError),
    ("cache_size", 2.0, TypeError), ("num_threads", 0, ValueError),
    ("num_threads", "4", TypeError), ("num_threads", None, TypeError),
    ("backend", "gpu", ValueError), ("backend", None, ValueError),
    ("cache_dir", 3, TypeError), ("library_cache_dir", b"x", TypeError),
])
def test_bad_config_value_raises_and_keeps_the_old_one(name, bad, error):
    old = getattr(tj.config, name)
    with pytest.raises(error, match=f"config.{name}"):
        setattr(tj.config, name, bad)
    assert getattr(tj.config, name) == old


def test_while_limit_stays_consistent_with_native_code():
    from tracejit.backend.emit import control

    def body(c):
        return c + 1

    f = tj.jit(lambda n: tj.while_loop(lambda c: c < n, body, 0))
    saved = tj.config.max_while_iterations
    try:
        tj.config.max_while_iterations = 50
        with pytest.raises(ValueError):
            tj.config.max_while_iterations = -3
        assert control._limit_cell.value == 50 and tj.config.max_while_iterations == 50
        with pytest.raises(RuntimeError, match="max_while_iterations = 50"):
            f(1000)
        tj.config.max_while_iterations = 0               # 0 means no cap, as in the env var
        assert tj.config.max_while_iterations is None and f(1000) == 1000
        tj.config.max_while_iterations = np.int64(2000)
        assert type(tj.config.max_while_iterations) is int and f(1000) == 1000
    finally:
        tj.config.max_while_iterations = saved


def test_bad_environment_value_warns_and_uses_the_default():
    out = _python("""
    import json, warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        import tracejit as tj
    c = tj.config
    print(json.dumps([c.cache_size, c.max_while_iterations, c.backend, c.num_threads >= 1,
                      sorted(str(x.message).split("=")[0] for x in w)]))
    """, env={"TRACEJIT_CACHE_SIZE": "abc", "TRACEJIT_MAX_WHILE_ITERATIONS": "-3",
              "TRACEJIT_BACKEND": "gpu", "TRACEJIT_NUM_THREADS": "1.5"})
    assert out[:4] == [64, None, "llvm", True]
    assert out[4] == [f"tracejit: ignoring TRACEJIT_{name}" for name in (
        "BACKEND", "CACHE_SIZE", "MAX_WHILE_ITERATIONS", "NUM_THREADS")]


# ---------------------------------------------------------------------------------------------
# 4. threads sharing a signature cache

@pytest.fixture
def busy_switching():
    """Switch threads as often as CPython can (every eval-breaker check)."""
    saved_interval, saved_size = sys.getswitchinterval(), tj.config.cache_size
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(saved_interval)
    tj.config.cache_size = saved_size


def _hammer(n_threads, work):
    errors = []

    def run(seed):
        try:
            work(seed)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == []


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
def test_threads_evicting_each_others_entries(busy_switching, backend):
    """8 threads, a cache of 2 and 5 shapes: constant eviction. Positional calls (native
    entries once specialised), keyword calls (always the Python path) and ``lower``; the cache
    is never over its bound, every result is right."""
    tj.config.cache_size = 2
    f = tj.jit(lambda x, y=1.0: x * 2.0 + y, backend=backend)
    over = []
    calls = 300 if backend == "interpret" else 60

    def work(seed):
        rng = np.random.default_rng(seed)
        for i in range(calls):
            x = np.arange(float(rng.integers(1, 6)))
            kind = i % 3
            if kind == 0:
                r = f(x)
            elif kind == 1:
                r = f(x, y=1.0)
            else:
                r = f.lower(x)([x])
            np.testing.assert_array_equal(r, x * 2.0 + 1.0)
            if len(f._cache) > 2 or f.cache_info().currsize > 2:
                over.append(len(f._cache))

    _hammer(8, work)
    assert over == []
    info = f.cache_info()
    assert info.currsize <= 2 and info.misses == info.traces


def test_threads_asking_for_one_new_signature_compile_it_once(busy_switching):
    for attempt in range(5):
        f = tj.jit(lambda x: np.tanh(x) * 3.0 - x)
        start = threading.Barrier(8)
        x = np.linspace(0.0, 1.0, 17 + attempt)

        def work(seed):
            start.wait()
            np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - x)

        _hammer(8, work)
        info = f.cache_info()
        assert info.traces == 1 and info.misses == 1, info


def test_a_failing_compile_does_not_strand_waiting_threads(busy_switching):
    calls = []

    def g(x):
        calls.append(1)
        time.sleep(0.01)
        raise ValueError("user error while tracing")

    f = tj.jit(g)
    start = threading.Barrier(6)
    failures = []

    def work(seed):
        start.wait()
        try:
            f(np.arange(3.0))
        except ValueError:
            failures.append(seed)

    _hammer(6, work)
    assert sorted(failures) == list(range(6)) and f.cache_info().currsize == 0
    assert f._pending == {}


# ---------------------------------------------------------------------------------------------
# 3. fork while another thread compiles

def _backend_locks():
    """Every module-level lock of the backend that may be held around a compile, by name."""
    from tracejit.backend.emit import fftlib, ffttables, sortlib
    from tracejit.backend.engine import loaded, threads
    from tracejit.backend.mathlib import library as mathlib
    from tracejit.backend.matmul import blas
    from tracejit.backend.runtime import pyabi_dispatch, tiers
    return {"jit._lock": jit._lock, "loaded._lock": loaded._lock,
            "library._lock": mathlib._lock, "threads._lock": threads._lock,
            "blas._lock": blas._lock, "pyabi_dispatch._lock": pyabi_dispatch._lock,
            "tiers._worker_lock": tiers._worker_lock, "tiers.hot_lock": tiers.hot_lock,
            "diskcache._stats_lock": diskcache._stats_lock, "fftlib._lock": fftlib._lock,
            "sortlib._lock": sortlib._lock,
            "ffttables._tables_lock": ffttables._tables_lock}


def _unregistered():
    locks = _backend_locks()            # imports them first: they register at import
    from tracejit import forksafe
    registered = [lock for _, _, lock in forksafe._locks]
    return [n for n, lock in locks.items() if not any(lock is r for r in registered)]


def test_every_module_level_lock_is_listed_here():
    """A new ``Lock()`` in the backend must be added to ``_backend_locks`` (and registered)."""
    import re
    found = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "tracejit", "backend")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name)) as fh:
                    for m in re.finditer(r"^(\w+) = threading\.R?Lock\(\)", fh.read(), re.M):
                        found.add(f"{name[:-3]}.{m.group(1)}")
    found.discard("workers._pool_lock")      # so has workers.py (a child starts its own pool)
    assert found == set(_backend_locks())


FORK = r"""
import json, os, signal, sys, threading, time
import numpy as np
import tracejit as tj
stop = False
compiles = [0]

def compiler():                      # new graphs (a new constant each), compiled back to back
    i = 0
    while not stop:
        i += 1
        f = tj.jit(lambda x, c=float(i): x * c + 1.0)
        f(np.arange(float(i % 50 + 1)))
        compiles[0] += 1

threading.Thread(target=compiler, daemon=True).start()
while compiles[0] < 3:
    time.sleep(0.01)
outcomes = {{}}
for r in range({rounds}):
    pids = []
    for k in range(8):
        time.sleep(0.002 * k)        # fork at different points of the parent's compile
        pid = os.fork()
        if pid == 0:
            code = 4
            try:
                signal.alarm(60)
                g = tj.jit(lambda x: np.sin(x) * (k + 2.0) + r)
                x = np.arange(4.0 + k)
                ok = all(np.allclose(g(x), np.sin(x) * (k + 2.0) + r) for _ in range(3))
                code = 0 if ok else 3
            finally:
                os._exit(code)
        pids.append(pid)
    deadline = time.time() + 30
    for pid in pids:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = str(os.waitstatus_to_exitcode(status))
                break
            if time.time() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                code = "hung"
                break
            time.sleep(0.005)
        outcomes[code] = outcomes.get(code, 0) + 1
stop = True
print(json.dumps({{"outcomes": outcomes, "compiles": compiles[0]}}))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.xfail(bool(_unregistered()), run=False,      # run: children would hang ~300 s
                   reason=f"locks not registered with jit.register_fork_lock: {_unregistered()}")
def test_fork_while_another_thread_compiles():
    """10 rounds of 8 children forked while a thread compiles in a loop: each child compiles
    and runs a new function and exits 0 (before: 2-7 of 8 children deadlocked per round)."""
    out = _python(FORK.format(rounds=10), timeout=600)
    assert out["outcomes"] == {"0": 80}, out
    assert out["compiles"] > 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_after_a_cache_compile_in_flight():
    """A child forked while the parent's thread is between "miss" and "inserted" for the same
    signature compiles it itself instead of waiting for a thread that does not exist there."""
    f = tj.jit(lambda x: x + 1.0)
    x = np.arange(3.0)
    key = f._key(f._split((x,), {})[1])
    from tracejit import api
    stale = api._Pending()
    stale.pid = -1                     # a marker of another process
    f._pending[key] = stale
    np.testing.assert_array_equal(f(x), x + 1.0)
    assert f._pending == {} and f.cache_info().traces == 1


# ---------------------------------------------------------------------------------------------
# 5. memory of compiled modules

def test_compiled_modules_do_not_keep_their_ir():
    """``compile_ir`` hands the IR back after loading the code (MCJIT kept every module's IR
    for the life of the process: ~50 KB of a 200-instruction module; 102 -> 54 KB measured)."""
    out = _python("""
    import ctypes, gc, json, os
    from tracejit.backend.engine import jit

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def text(i):
        body = "\\n".join(f"  %v{k} = fadd double %v{k-1}, 1.0" for k in range(1, 200))
        return f"define double @tj_rel_{i}(double %v0) {{\\n{body}\\n  ret double %v199\\n}}\\n"

    for i in range(50):
        jit.compile_ir(text(i))
    owned = len(jit._get_engine()._modules)
    gc.collect()
    r0, n = rss(), 1500
    for i in range(50, 50 + n):
        jit.compile_ir(text(i))
        fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(
            jit.function_address(f"tj_rel_{i}"))
        assert fn(1.0) == 200.0          # the code outlives its module
    gc.collect()
    print(json.dumps({"kb": (rss() - r0) / n / 1024,
                      "owned": len(jit._get_engine()._modules) - owned}))
    """)
    assert out["owned"] == 0
    assert out["kb"] < 80, out
