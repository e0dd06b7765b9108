"""tracejit: trace NumPy-style Python functions into a typed IR, differentiate the IR, and
compile it to fused, vectorised native code through llvmlite.

    import tracejit as tj
    f = tj.trace(lambda a, b, c: (a * b + c) ** 2)
    f(2.0, 3.0, 1.0)        # 49.0
    print(f.ir(2.0, 3.0, 1.0))
"""
from . import numpy  # noqa: F401
from .numpy import methods as _methods  # noqa: F401  (first: NumPy's operators on tracers)
from .api import trace, jit, make_ir, Traced  # noqa: F401
from .config import config  # noqa: F401
from .ad import jvp, linearize, vjp  # noqa: F401
from .derivatives import (grad, value_and_grad, jacfwd, jacrev, hessian, export,  # noqa: F401
                          residual_bytes)
from .custom import stop_gradient, custom_jvp, custom_vjp  # noqa: F401
from . import test_util  # noqa: F401
from .control import cond, switch, while_loop, fori_loop, scan  # noqa: F401
from .checkpoint import checkpoint, remat  # noqa: F401
from .vmapped import vmap  # noqa: F401
from . import apply as _apply
# vmap-based, so above the NumPy layer: installed where NumPy's dispatch looks names up
numpy.apply_along_axis, numpy.apply_over_axes = _apply.apply_along_axis, _apply.apply_over_axes
from .callback import pure_callback  # noqa: F401
from . import debug  # noqa: F401
from .ode import odeint  # noqa: F401
from . import tree  # noqa: F401
from .version import __version__  # noqa: F401
from .tree import register_pytree_node  # noqa: F401
from .errors import (TracerError, ConcretizationError, ShapeError, DTypeError,  # noqa: F401
                     UnsupportedError, InputError, NaNError, CompilerError,
                     TracerWarning)

