"""Ctrl-C stops a long native loop (backend/emit/interrupt.py): a child process runs a kernel that
would take a minute, the parent sends SIGINT, and the child must catch KeyboardInterrupt within
two seconds, get no second one later, and run the function again (results discarded, nothing
left broken)."""
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.abi import ERR_INTERRUPT
from tracejit.backend.emit import interrupt

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the handler is Linux-only")

_PRELUDE = """
import signal, sys, time
import numpy as np
import tracejit as tj

def interrupted(f, *args, what=KeyboardInterrupt):
    print("ready", flush=True)
    t0 = time.perf_counter()
    try:
        f(*args)
    except what:
        print(f"caught {time.perf_counter() - t0:.2f}", flush=True)
        time.sleep(0.3)                 # a second KeyboardInterrupt would come here
        return
    raise SystemExit("the long call finished")
"""

# (setup, the long call, the same function called again, what it prints)
_CASES = {
    "while_loop": ("""
        @tj.jit
        def f(n):
            return tj.while_loop(lambda c: c[0] < n,
                                 lambda c: (c[0] + 1, c[1] * 0.5 + 1.0),
                                 (np.int64(0), 0.0))[1]
        f(np.int64(10))                                    # later calls: the native entry
        """, "interrupted(f, np.int64(10**13))", "print(f(np.int64(3)))", "1.75"),
    "first call (Python path)": ("""
        f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, 0.0))
        f.lower(np.int64(1))
        """, "interrupted(f, np.int64(10**13))", "print(f(np.int64(3)))", "1.75"),
    "fori_loop, static bounds (scan)": ("""
        f = tj.jit(lambda x: tj.fori_loop(0, 10**13, lambda i, c: c * 0.5 + x, 0.0))
        f.lower(1.0)
        g = tj.jit(lambda x: tj.fori_loop(0, 3, lambda i, c: c * 0.5 + x, 0.0))
        """, "interrupted(f, 1.0)", "print(g(1.0), f.lower(1.0) is not None)",
        "1.75 True"),
    "long fused loop": ("""
        f = tj.jit(lambda a, b: np.sum(np.sin(a[:, None] * b[None, :] + 0.5), axis=1))
        a, b = np.linspace(0, 1, 300_000), np.linspace(0, 1, 200_000)
        f.lower(a, b)
        """, "interrupted(f, a, b)", "print(f(a[:2], b[:3]).shape, f(a, b[:3]).shape)",
        "(2,) (300000,)"),
    # polled per row block taken and per column panel (matmul kernels)
    "matmul on the pool": ("""
        f = tj.jit(lambda x, y: x @ y)
        x = np.ones((4000, 4000), np.int64)
        f.lower(x, x)
        """, "interrupted(f, x, x)", "print(f(x[:2, :3], x[:3, :2]).tolist())",
        "[[3, 3], [3, 3]]"),
    "batched matmul": ("""
        f = tj.jit(lambda x, y: x @ y)
        x = np.ones((2000, 200, 200), np.int64)
        f.lower(x, x)
        """, "interrupted(f, x, x)", "print(f(x[:1, :1, :3], x[:1, :3, :1]).tolist())",
        "[[[3]]]"),
    # outer dim reduced on one thread (outputs too large to chunk): polled per block of rows
    "long fused loop reducing its outer dim": ("""
        f = tj.jit(lambda a, b: np.sum(np.sin(a[:, None] * b[None, :] + 0.5), axis=0))
        a, b = np.linspace(0, 1, 300_000), np.linspace(0, 1, 200_000)
        f.lower(a, b)
        """, "interrupted(f, a, b)", "print(f(a[:2], b[:3]).shape, f(a[:3], b).shape)",
        "(3,) (200000,)"),
    "user handler": ("""
        class Stop(Exception):
            pass
        def handler(sig, frame):
            raise Stop
        signal.signal(signal.SIGINT, handler)
        f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, 0.0))
        f(np.int64(1))
        """, "interrupted(f, np.int64(10**13), what=Stop)", "print(f(np.int64(3)))",
        "1.75"),
}


def _readline(child, timeout):
    """The child's next output line, or "" after ``timeout`` seconds without one."""
    ready, _, _ = select.select([child.stdout], [], [], timeout)
    return child.stdout.readline().strip() if ready else ""


def _interrupt_child(setup, call, again, timeout=30.0):
    code = _PRELUDE + textwrap.dedent(setup) + f"\n{call}\n{again}\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert _readline(child, 120) == "ready", child.stderr.read()[-3000:]
        time.sleep(1.0)
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        caught = _readline(child, 10)
        latency = time.perf_counter() - sent
        assert caught.startswith("caught"), f"no KeyboardInterrupt 10 s after SIGINT: {caught!r}"
        out, err = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-3000:]
    return latency, out.strip()


@pytest.mark.parametrize("case", sorted(_CASES))
def test_sigint_stops_a_long_native_loop(case):
    setup, call, again, expected = _CASES[case]
    latency, out = _interrupt_child(setup, call, again)
    assert latency < 2.0, f"KeyboardInterrupt {latency:.2f} s after SIGINT"
    assert out == expected


def test_handler_is_put_back_after_signal_signal_replaced_it():
    """``signal.signal`` installs CPython's C handler again (ours is gone); the next compile
    puts ours back in front of it."""
    latency, out = _interrupt_child("""
        signal.signal(signal.SIGINT, signal.default_int_handler)
        f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, 0.0))
        f(np.int64(1))
        """, "interrupted(f, np.int64(10**13))", "print('ok')")
    assert latency < 2.0 and out == "ok"


def test_ignored_sigint_is_left_alone():
    """With SIGINT ignored, nothing is installed and the signal is still ignored."""
    code = textwrap.dedent("""
        import signal
        import numpy as np
        import tracejit as tj
        from tracejit.backend.emit import interrupt
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c + 1.0, 0.0))
        import os
        print(interrupt.install(), f(np.int64(5)))
        os.kill(os.getpid(), signal.SIGINT)
        print(f(np.int64(5)))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["False", "5.0", "5.0"]


def test_calls_from_other_threads_are_not_interrupted():
    """As in Python, only the main thread sees KeyboardInterrupt: a SIGINT (its count moves)
    does not stop a kernel running in another thread."""
    f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, 0.0))
    f(np.int64(1))
    out = []
    worker = threading.Thread(target=lambda: out.append(f(np.int64(3 * 10**8))))
    worker.start()
    time.sleep(0.2)
    interrupt._epoch.value += 1           # what the native handler does on SIGINT
    worker.join()
    assert out == [2.0]


def test_a_sigint_from_before_the_call_is_ignored():
    """The counter moved before the call started (Python handled that SIGINT): the call runs."""
    f = tj.jit(lambda n: tj.fori_loop(0, n, lambda i, c: c * 0.5 + 1.0, 0.0))
    interrupt._epoch.value += 1
    assert f(np.int64(100)) == 2.0


def test_interrupt_error_code_raises_keyboard_interrupt():
    from tracejit.backend.runtime.executable import _raise
    with pytest.raises(KeyboardInterrupt):
        _raise(ERR_INTERRUPT | 4)       # before MemoryError
    assert os.getpid()                            # and the process goes on
