"""A fixed-seed sample of the differential fuzzer (tests/fuzz): random NumPy programs and their
transforms on the llvm backend against the interpreter, finite differences, threads/tiers,
input mutation and held results. A failure names (seed, index, class, message); reproduce one
program with ``python -m tests.fuzz --seed 2024 --start INDEX --n 1 --save DIR`` and shrink the
saved file with ``python -m tests.fuzz --minimize FILE``. Sharded over workers by xdist."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.fuzz import gen, oracle  # noqa: E402
from tests.fuzz.runner import program_seed  # noqa: E402

SEED = 2024
N = int(os.environ.get("TRACEJIT_FUZZ_SAMPLE", "1000"))


@pytest.mark.parametrize("index", range(N))
def test_fuzz_program(index):
    prog = gen.generate(program_seed(SEED, index))
    result = oracle.check_program(prog)
    assert not result.get("fuzzer_error"), result["fuzzer_error"]
    lines = [f"(seed {SEED}, index {index}) {f['cls']}: {f['label']}: {f['msg'][-600:]}"
             for f in result["findings"]]
    assert not lines, "\n".join(lines) + f"\ntransforms {prog.transforms}\n" + prog.source()
