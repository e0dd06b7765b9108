"""A fixed-seed sample of the differential fuzzer's *mutating* programs (tests/fuzz/mutate.py):
NumPy code writing into its arguments, local arrays and views, run traced on both backends and
compared with plain NumPy on fresh copies of the arguments -- returned values and dtypes, the
arguments' final contents, a written argument returned as the caller's array, NumPy's
exceptions. A clear tracejit refusal (TracerError) is not a failure (the campaign summary lists
them). Reproduce one program with ``python -m tests.fuzz --programs mutating --seed 2025
--start INDEX --n 1 --save DIR`` and shrink the saved file with ``python -m tests.fuzz
--minimize FILE``."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.fuzz import mutate, oracle  # noqa: E402
from tests.fuzz.runner import program_seed  # noqa: E402

SEED = 2025
N = int(os.environ.get("TRACEJIT_FUZZ_MUTATION_SAMPLE", "300"))

@pytest.mark.parametrize("index", range(N))
def test_fuzz_mutating_program(index):
    prog = mutate.generate(program_seed(SEED, index))
    result = oracle.check_program(prog)
    assert not result.get("fuzzer_error"), result["fuzzer_error"]
    lines = [f"(seed {SEED}, index {index}) {f['cls']}: {f['label']}: {f['msg'][-600:]}"
             for f in result["findings"]]
    assert not lines, "\n".join(lines) + "\n" + prog.source()
