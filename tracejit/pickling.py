"""How tracejit's function objects pickle: by reference where they can, else with their code.

A traced function, a derivative object (``grad``, ``jacrev``, ...) or ``vmap(f)`` pickles as
"rebuild me from the user's function", plus, when that function is not importable, the
artifacts of its compiled signatures (``artifact.py``) so that the receiving process runs them
without tracing or compiling (``api.Traced.__reduce__``, ``derivatives.Derivative.__reduce__``,
``vmapped.Vmapped.__reduce__``).

- **By reference** when ``importable``: the object (or the function inside it) is found under
  its module and qualified name, the module is not ``__main__``. The other side imports it;
  nothing compiled is carried (the worker compiles once, or loads from its disk cache).
- **By value** otherwise (lambdas, closures, functions of ``__main__``): the user's function
  goes through cloudpickle when it is installed (``by_value``), so that even the standard
  pickler (multiprocessing, concurrent.futures) can carry a lambda; without cloudpickle it is
  handed to the pickler as it is (pickle's own error for a lambda).
"""
from __future__ import annotations

import pickle
import sys
import types


def _lookup(module: str, qualname: str):
    """The object at ``module.qualname`` in an already imported module (nothing imported)."""
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        space = vars(obj) if obj is not None and hasattr(obj, "__dict__") else {}
        obj = space.get(part)
    return obj


def importable(obj) -> bool:
    """Whether another process can find ``obj`` by module and qualified name: it lives under
    them in an imported module other than ``__main__``."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__" \
            or "<" in qualname:
        return False
    return _lookup(module, qualname) is obj


def in_main(obj) -> bool:
    """Whether ``obj`` is a global of ``__main__`` under its qualified name (the standard
    pickler refers to it there; multiprocessing's workers import the main module)."""
    qualname = getattr(obj, "__qualname__", None)
    return getattr(obj, "__module__", None) == "__main__" and isinstance(qualname, str) and \
        _lookup("__main__", qualname) is obj


def user_importable(fun) -> bool:
    """Whether the user's function inside tracejit wrappers (``__wrapped__``) is importable:
    then an object built from it pickles by reference."""
    seen = 0
    while fun is not None and seen < 32:
        if importable(fun):
            return True
        if isinstance(fun, types.FunctionType):
            return False
        fun, seen = getattr(fun, "__wrapped__", None), seen + 1
    return False


class _ByValue:
    """A function pickled by cloudpickle inside whatever pickler is running."""

    def __init__(self, fun):
        self.fun = fun

    def __reduce__(self):
        import cloudpickle
        return pickle.loads, (cloudpickle.dumps(self.fun),)


def by_value(fun):
    """What to hand the pickler for a function that is not importable: a plain function goes
    through cloudpickle when it is installed; anything else (a tracejit object, a partial)
    reduces itself."""
    if not isinstance(fun, types.FunctionType) or importable(fun):
        return fun
    try:
        import cloudpickle  # noqa: F401 - optional: pickles lambdas and closures by value
    except ImportError:
        return fun
    return _ByValue(fun)
