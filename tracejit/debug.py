"""``tracejit.debug.print``: print run-time values from compiled code (see ``callback.py``)."""
from .callback import debug_print as print  # noqa: F401  (JAX's name: jax.debug.print)

__all__ = ["print"]
