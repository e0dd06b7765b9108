"""A long native call does not freeze other Python threads: the native entry releases the GIL
for kernels with loops (which can run long on small data) and for large ones."""
import threading
import time

import tracejit as tj


def test_a_long_loop_on_a_scalar_lets_other_threads_run():
    f = tj.jit(lambda x: tj.fori_loop(0, 20_000_000, lambda i, c: c * 0.9999999 + x, 0.0))
    f(1.0)
    f(1.0)                                  # the second call builds the native entry
    ticks, stop = [0], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)
    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    start = ticks[0]
    t0 = time.perf_counter()
    f(1.0)
    elapsed = time.perf_counter() - t0
    during = ticks[0] - start
    stop.set()
    t.join()
    assert elapsed > 0.05, "the loop is too short to tell"
    assert during >= 0.2 * elapsed / 0.001, (during, elapsed)
