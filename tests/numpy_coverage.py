"""Which of NumPy's public functions work on tracers: ``python tests/numpy_coverage.py``
prints the report (counts, then the names not supported), which the README quotes and
tests/test_numpy_coverage.py keeps true (``--update-readme`` rewrites the README's line).

A NumPy function counts when NumPy hands a tracer argument to tracejit: the ufuncs
(``__array_ufunc__``, looked up by the ufunc's own name, so ``np.acos`` is ``np.arccos``) and
the functions that dispatch through ``__array_function__`` (main namespace, numpy.linalg,
numpy.fft), supported when tracejit.numpy (or its linalg/fft namespace) has a function of that
name. Creation functions that take no array (``np.zeros``) are intercepted while tracing and are
not counted here.
"""
from __future__ import annotations

import numpy as np

import tracejit.numpy as tnp

MODULES = (("numpy", np, tnp), ("numpy.linalg", np.linalg, getattr(tnp, "linalg", None)),
           ("numpy.fft", np.fft, getattr(tnp, "fft", None)))


def _public(module):
    for name in sorted(dir(module)):
        obj = getattr(module, name)
        if name.startswith("_"):
            continue
        if isinstance(obj, np.ufunc) or type(obj).__name__ == "_ArrayFunctionDispatcher":
            yield name, obj


def _supported(obj, namespace) -> bool:
    if namespace is None:
        return False
    fn = getattr(namespace, getattr(obj, "__name__", ""), None)
    return callable(fn) and fn is not obj


def coverage() -> dict:
    """{module name: (supported names, unsupported names)}."""
    out = {}
    for label, module, namespace in MODULES:
        names = {n: _supported(o, namespace) for n, o in _public(module)}
        out[label] = (sorted(n for n, ok in names.items() if ok),
                      sorted(n for n, ok in names.items() if not ok))
    return out


def summary(report) -> str:
    """The one line the README quotes."""
    parts = [f"{label} {len(ok)}/{len(ok) + len(missing)}" for label, (ok, missing)
             in report.items()]
    return "NumPy functions supported on tracers: " + ", ".join(parts)


def update_readme(path) -> None:
    """Rewrite the README's coverage line with the current counts."""
    import re
    text = open(path).read()
    new = re.sub(r"NumPy functions supported on tracers: [^(]*\(", summary(coverage()) + " (",
                 text, count=1)
    open(path, "w").write(new)


if __name__ == "__main__":
    import sys
    if "--update-readme" in sys.argv:
        update_readme(__file__.rsplit("/", 2)[0] + "/README.md")
    report = coverage()
    print(summary(report))
    for label, (_, missing) in report.items():
        print(f"\n{label}: not supported ({len(missing)}):\n  " + ", ".join(missing))
