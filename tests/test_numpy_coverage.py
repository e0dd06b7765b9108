"""The README's count of NumPy functions supported on tracers is the current one
(tests/numpy_coverage.py computes it from NumPy's namespace and tracejit.numpy)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import numpy_coverage  # noqa: E402

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_readme_quotes_the_current_coverage():
    line = numpy_coverage.summary(numpy_coverage.coverage())
    assert line in README.read_text(), (
        f"README.md should say: {line!r} (run python tests/numpy_coverage.py for the list)")


def test_aliases_count_as_their_ufunc():
    ok, missing = numpy_coverage.coverage()["numpy"]
    assert "acos" in ok and "arccos" in ok and "concat" in ok
    assert "acos" not in missing
