"""tracejit.scipy: SciPy's special functions and distributions on tracers, without SciPy.

``tracejit.scipy.special`` and ``tracejit.scipy.stats`` follow SciPy's names and signatures and
work on traced arrays (with derivatives of every order) and on ndarrays, whether or not SciPy
is installed. SciPy's own special-function *ufuncs* (``scipy.special.erf(x)``) dispatch to
them on tracers by themselves; SciPy's Python-level functions (``logsumexp``, ``softmax``,
``multigammaln``, ``polygamma``, ``scipy.stats``) convert their arguments to ndarrays first,
so on tracers call the functions of this package instead.
"""
from . import special, stats  # noqa: F401
