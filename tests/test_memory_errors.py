"""Running out of memory is a MemoryError, never a crash: the native kernel checks its
temporary arena and control-flow scratch allocations (and Python allocates the outputs), so a
product too large for memory under an address-space limit raises, and the process goes on."""
import subprocess
import sys
import textwrap

import pytest


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


# The matmul kernel's packed Bᵀ panel and argmax's row buffer are malloc'd inside the kernel
# (in a thread-pool worker for a parallel product, in a loop body for a scan): each case makes
# that one allocation fail by setting the limit just above what the process already holds.
# int64 products, because float ones this large go to BLAS; zeros, so that the inputs are
# address space and not memory.
_KERNEL_SCRATCH = {
    # x (1, K) @ y.T, y (64, K): one 2 GiB panel of K x 64 (serial kernel)
    "matmul": ("x, y = np.zeros((1, 1 << 22), np.int64), np.zeros((64, 1 << 22), np.int64)",
               "lambda x, y: x @ y.T", 1 << 30),
    # 64 rows: row blocks on the pool, each block packs its own 2 GiB panel of K x 32
    "matmul on the pool": ("x = y = np.zeros((64, 1 << 23), np.int64)",
                           "lambda x, y: x @ y.T", 1 << 30),
    "matmul in a loop": ("x, y = np.zeros((1, 1 << 22), np.int64), np.zeros((64, 1 << 22), "
                         "np.int64)",
                         "lambda x, y: tj.fori_loop(0, 2, lambda i, c: c + np.sum(x @ y.T), "
                         "np.int64(0))", 1 << 30),
    # argmax over axis 0 of (2, 2**27): a 1 GiB output fits in the margin, the 1 GiB row does not
    "argmax": ("x = np.zeros((2, 1 << 27))", "lambda x: np.argmax(x, axis=0)", 3 << 29),
    "argmax in a loop": ("x = np.zeros((2, 1 << 27))",
                         "lambda x: tj.fori_loop(0, 2, lambda i, c: c + np.argmax(x, axis=0)[-1], "
                         "np.int64(0))", 3 << 29),
}


@pytest.mark.parametrize("case", sorted(_KERNEL_SCRATCH))
def test_kernel_scratch_allocation_failure_raises_memory_error(case):
    make, fun, margin = _KERNEL_SCRATCH[case]
    code = textwrap.dedent(f"""
        import resource
        import numpy as np
        import tracejit as tj

        def vm_size():
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmSize:"):
                        return int(line.split()[1]) * 1024

        {make}
        f = tj.jit({fun})
        args = (x, y) if "y" in dir() else (x,)
        f.lower(*args)                                  # compiled before the limit is set
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + {margin}, resource.RLIM_INFINITY))
        for call in range(3):                # the Python path, then the native entry
            try:
                f(*args)
            except MemoryError:
                continue
            raise SystemExit("no MemoryError")
        print(tj.jit(lambda x: np.sum(x[:2] + 1))(np.zeros(5)))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    assert run.stdout.strip() == "2.0"
