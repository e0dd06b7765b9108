"""Running out of memory is a MemoryError, never a crash: the native kernel checks its
temporary arena and control-flow scratch allocations (and Python allocates the outputs), so a
product too large for memory under an address-space limit raises, and the process goes on."""
import subprocess
import sys
import textwrap


def test_huge_temporaries_raise_memory_error_under_a_memory_limit():
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import tracejit as tj
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
        x = np.ones((300000, 2))
        cases = [lambda x: np.sum(x @ x.T),                     # 671 GiB temporary
                 lambda x: x[:, :1] * x[:, 1],                  # 671 GiB output
                 tj.grad(lambda x: np.sum(np.tanh(x @ x.T))),   # inside a gradient
                 lambda x: tj.fori_loop(0, 2, lambda i, c: c + np.sum(x @ x.T), 0.0)]
        for f in cases:
            for call in range(3):                # the Python path, then the native entry
                try:
                    tj.jit(f)(x)
                except MemoryError:
                    continue
                raise SystemExit("no MemoryError")
        print(tj.jit(lambda x: np.sum(x * 2))(x))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "1200000.0"
