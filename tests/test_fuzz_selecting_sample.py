"""A fixed-seed sample of the differential fuzzer's *selecting* programs
(tests/fuzz/selecting.py): traced-mask selections ``x[x > c]`` reduced, combined and stored
back, slices with traced bounds, overlapping writes and loops carrying arrays (``fori_loop``
with ``.at[i]`` or in-place writes) in mutating programs checked against NumPy, and plain
programs through selections under grad/jvp/vmap checked against the interpreter. A clear
tracejit refusal is not a failure. Reproduce one program with
``python -m tests.fuzz --programs selecting --seed 2027 --start INDEX --n 1 --save DIR``."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.fuzz import oracle, selecting  # noqa: E402
from tests.fuzz.runner import program_seed  # noqa: E402

SEED = 2027
N = int(os.environ.get("TRACEJIT_FUZZ_SELECTING_SAMPLE", "40"))


@pytest.mark.parametrize("index", range(N))
def test_fuzz_selecting_program(index):
    prog = selecting.generate(program_seed(SEED, index))
    result = oracle.check_program(prog)
    assert not result.get("fuzzer_error"), result["fuzzer_error"]
    lines = [f"(seed {SEED}, index {index}) {f['cls']}: {f['label']}: {f['msg'][-600:]}"
             for f in result["findings"]]
    assert not lines, "\n".join(lines) + "\n" + prog.source()
