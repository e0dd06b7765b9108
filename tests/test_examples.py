"""Every example runs to completion (each checks its own results: finite differences,
implicit-function gradients, loops against vmap, convergence)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = ["quickstart.py", "pendulum.py", "newton.py", "per_example_gradients.py",
            "newton_hessian.py", "mlp.py", "taylor_and_bisection.py", "distributed_sweep.py",
            "neural_ode.py"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
