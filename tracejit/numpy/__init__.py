"""tracejit.numpy: NumPy's API for concrete arrays and tracers alike.

On concrete inputs every function is NumPy's own; on tracers it records primitives. Plain NumPy
calls on tracers reach the same functions through ``__array_ufunc__``/``__array_function__``
(dispatch.py; installed on tracers with the operators by methods.py, which sits above this
namespace and is imported by the package root, not here).
"""
from numpy import (pi, e, inf, nan, newaxis, float32, float64, complex64, complex128,  # noqa: F401
                   int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool_, dtype,
                   ndarray, iinfo, finfo)

from . import intercept as _intercept  # noqa: F401  (NumPy's creation functions in traces)
from .creation import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from . import linalg  # noqa: F401  (the numpy.linalg namespace)
from .einsum import *  # noqa: F401,F403
from .logic import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .extra import *  # noqa: F401,F403
from .tail import *  # noqa: F401,F403
from .counting import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .nanfuncs import *  # noqa: F401,F403
from .floatfns import *  # noqa: F401,F403
from .bits import *  # noqa: F401,F403
from .ufunc_tail import *  # noqa: F401,F403
from .tail_arrays import *  # noqa: F401,F403
from .tail_index import *  # noqa: F401,F403
from .signal import *  # noqa: F401,F403
from .nonzero import *  # noqa: F401,F403
from .mutation import *  # noqa: F401,F403  (view functions: writes through them reach the base)
from . import fft  # noqa: F401,E402  (tracejit.numpy.fft, as numpy.fft)
