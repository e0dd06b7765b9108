"""A fixed-seed sample of the differential fuzzer's *control-flow* programs
(tests/fuzz/gen_control.py): Python if/elif/else, while loops, early returns, conditional
expressions, and/or/not and builtin max/min on traced scalars, helper functions that branch and
loop, writes into arguments and np.zeros arrays inside branches and loops -- converted by
tracejit's autograph, run on both backends and compared with the same module run by plain NumPy
(values, dtypes, the arguments' final contents; grad against finite differences for float64
programs that write nothing). A clear tracejit refusal is not a failure. Reproduce one program
with ``python -m tests.fuzz --programs control --seed 2026 --start INDEX --n 1 --save DIR``."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.fuzz import gen_control, oracle  # noqa: E402
from tests.fuzz.runner import program_seed  # noqa: E402

SEED = 2026
N = int(os.environ.get("TRACEJIT_FUZZ_CONTROL_SAMPLE", "100"))


@pytest.mark.parametrize("index", range(N))
def test_fuzz_control_program(index):
    prog = gen_control.generate(program_seed(SEED, index))
    result = oracle.check_program(prog)
    assert not result.get("fuzzer_error"), result["fuzzer_error"]
    lines = [f"(seed {SEED}, index {index}) {f['cls']}: {f['label']}: {f['msg'][-600:]}"
             for f in result["findings"]]
    assert not lines, "\n".join(lines) + "\n" + prog.source()
