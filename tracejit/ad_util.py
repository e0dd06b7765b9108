"""What derivative rules share: the symbolic Zero tangent, UndefinedPrimal, typed op helpers and
the helpers that define a primitive's ``jvp``/``transpose`` slots.

The rules live next to each primitive in ``tracejit/ops``; they call the helpers here, which call
``Primitive.bind``, so applying a rule to tracers emits IR (and higher order is free) while
applying it to arrays computes. Primitives are looked up by name at call time, so this module
imports nothing from ``tracejit.ops`` and any ops module may import it.

Conventions (documented once, relied on everywhere):
- A tangent or cotangent that is known to be zero is ``Zero(ty)``, never an array of zeros.
  Integer and bool values have no tangent: their tangent is always ``Zero``.
- ``jvp(primals, tangents, **params) -> (out, tangent_out)`` (lists for multiple results).
- ``transpose(ct, *args, **params) -> [ct_arg or None per arg]``: ``args`` holds
  ``UndefinedPrimal`` for the linear operands and values (residuals, literals) for the others.
- Complex numbers follow JAX: every transpose is the plain (bilinear, unconjugated) transpose,
  so the pairing of a cotangent ``c`` with a tangent ``t`` is ``Re(sum(c * t))``.
- Strong zeros: a cotangent produced by the transpose of ``select`` is *masked*: it is exactly
  zero where the select did not pick its branch. While transposing with a masked cotangent (and
  ``config.strong_zero_where`` on) ``mul_ct``/``div_ct`` keep such zeros zero (``0 * inf = 0``),
  see :mod:`tracejit.transforms.transpose`.
"""
from __future__ import annotations

import contextvars

import numpy as np

from .core import REGISTRY, Tracer, type_of
from .ir import Literal, Type


class Zero:
    """A tangent/cotangent known to be zero, of type ``ty`` (never materialised)."""
    __slots__ = ("ty",)

    def __init__(self, ty: Type):
        self.ty = ty

    def __repr__(self):
        return f"Zero({self.ty})"


class UndefinedPrimal:
    """A linear operand of a transpose rule: only its type is known."""
    __slots__ = ("ty",)

    def __init__(self, ty: Type):
        self.ty = ty

    def __repr__(self):
        return f"UndefinedPrimal({self.ty})"


def is_zero(x) -> bool:
    return isinstance(x, Zero)


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


def differentiable(ty: Type) -> bool:
    """Only float and complex values carry tangents."""
    return ty.dtype.kind in "fc"


def tangent_type(ty: Type) -> Type:
    return Type(ty.dtype, ty.shape)


# ---------------------------------------------------------------------------------------------
# typed op helpers (operands: tracers, arrays, literals, Python scalars)

def ty(x) -> Type:
    return x.ty if isinstance(x, (Zero, UndefinedPrimal)) else type_of(x)


def _p(name):
    return REGISTRY[name]


def lit(value, dtype) -> Literal:
    """A weak scalar literal of ``dtype`` (adopts the other operand's strong type)."""
    return Literal(value, Type(np.dtype(dtype), (), weak=True))


def _is_py_scalar(x) -> bool:
    # np.float64 / np.complex128 subclass float / complex but are typed values
    return isinstance(x, (int, float, complex)) and not isinstance(x, np.generic)


def _operands(*xs):
    """Python scalars become literals of the dtype of the first typed operand (with none,
    NumPy's weak default for the Python scalars: a complex one makes them all complex)."""
    dt = next((ty(x).dtype for x in xs if not _is_py_scalar(x)), None)
    if dt is None:
        dt = np.result_type(*[type(x)(0) for x in xs])
    return [lit(x, dt) if _is_py_scalar(x) else x for x in xs]


def _bind(name, *xs, **params):
    return _p(name).bind(*_operands(*xs), **params)


def add(x, y):
    if ty(x).dynamic:
        return _add_stacks(x, y)
    return _bind("add", x, y)


def _add_stacks(x, y):
    """``x + y`` for two stacks (run-time leading dimension): a scan adding row by row (the
    elementwise primitives have static shapes). Needed when a stack's cotangent has two
    contributions (higher-order derivatives through while loops)."""
    from .core import make_graph
    row = ty(x).row
    body, captured = make_graph(lambda a, b: [add(a, b)], [row, row])
    assert not captured
    return _p("scan").bind(x, y, body=body, length=None, reverse=False, n_consts=0,
                           n_carry=0)[0]
def zeros_like_stack(like, t: Type):
    """Zeros of the stack type ``t`` with the run-time length of the stack ``like``: a scan
    over ``like``'s rows emitting a zero row each (a broadcast cannot have a run-time length)."""
    from .core import make_graph
    body, captured = make_graph(lambda r: [zeros(t.row)], [ty(like).row])
    assert not captured
    return _p("scan").bind(like, body=body, length=None, reverse=False, n_consts=0,
                           n_carry=0)[0]


def sub(x, y): return _bind("sub", x, y)
def mul(x, y): return _bind("mul", x, y)
def div(x, y): return _bind("div", x, y)
def neg(x): return _bind("neg", x)
def eq(x, y): return _bind("eq", x, y)
def ne(x, y): return _bind("ne", x, y)
def gt(x, y): return _bind("gt", x, y)
def lt(x, y): return _bind("lt", x, y)
def select(p, x, y): return _bind("select", p, *_operands(x, y))
def integer_pow(x, n): return _bind("integer_pow", x, n=n)
def unary(name, x): return _bind(name, x)


def square(x):
    return integer_pow(x, 2)


def convert(x, dtype):
    dtype = np.dtype(dtype)
    return x if ty(x).dtype == dtype else _bind("convert", x, dtype=dtype)


def to_complex(re, dtype, im=None):
    """``re + 1j*im`` of complex ``dtype`` from real parts (``im`` None: zero)."""
    z = convert(re, dtype)
    if im is not None:
        z = add(z, mul(convert(im, dtype), lit(1j, dtype)))
    return z


def real_part(x):
    """``x`` itself if real, else its real part."""
    return _bind("real", x) if ty(x).dtype.kind == "c" else x


def full(t: Type, value):
    """A constant array of type ``t``: inside a trace one broadcast equation (no big constant),
    outside an array."""
    from .core import current_builder
    x, params = Literal(value, Type(t.dtype, ())), dict(shape=tuple(t.shape), dims=())
    if not t.shape:
        return np.asarray(value, t.dtype)
    b = current_builder()
    if b is None:
        return _p("broadcast_in_dim").bind(x, **params)
    return b.add_eqn(_p("broadcast_in_dim"), [x], params)[0]


def zeros(t: Type):
    return full(t, 0)


def instantiate(t, like: Type | None = None):
    """A Zero as an actual zero array; anything else unchanged."""
    return zeros(t.ty if like is None else like) if is_zero(t) else t


def reduce_sum(x, axes):
    axes = tuple(sorted(axes))
    return _p("reduce_sum").bind(x, axes=axes) if axes else x


def reshape(x, shape):
    shape = tuple(shape)
    return x if ty(x).shape == shape else _p("reshape").bind(x, shape=shape)


def transpose(x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else _p("transpose").bind(x, perm=perm)


def broadcast_in_dim(x, shape, dims):
    shape, dims = tuple(shape), tuple(dims)
    if ty(x).shape == shape:
        return x
    if isinstance(x, (int, float, complex)):
        x = lit(x, x.dtype if isinstance(x, np.generic) else np.result_type(type(x)(0)))
    from .core import current_builder
    b = current_builder()
    if b is not None and not isinstance(x, Tracer):      # an equation, not a big constant
        return b.add_eqn(_p("broadcast_in_dim"), [x], dict(shape=shape, dims=dims))[0]
    return _p("broadcast_in_dim").bind(x, shape=shape, dims=dims)


def broadcast_to(x, shape):
    """A rank-0 or equal-shape ``x`` broadcast to ``shape``."""
    shape = tuple(shape)
    s = ty(x).shape
    if s == shape:
        return x
    assert s == (), (s, shape)
    return broadcast_in_dim(x, shape, ())


def unbroadcast(ct, t: Type):
    """The cotangent of a rank-0 operand that was implicitly broadcast: the sum of ``ct``."""
    if t.shape == () and ty(ct).shape != ():
        ct = reduce_sum(ct, range(len(ty(ct).shape)))
    return convert(ct, t.dtype) if ty(ct).dtype != t.dtype else ct


def dot_general(x, y, contract, batch):
    return _p("dot_general").bind(x, y, contract=(tuple(contract[0]), tuple(contract[1])),
                                  batch=(tuple(batch[0]), tuple(batch[1])))


# ---------------------------------------------------------------------------------------------
# strong zeros in the backward pass

_masked = contextvars.ContextVar("tracejit_ct_masked", default=False)


def ct_masked():
    """True while transposing with a cotangent that may be zero because a select masked it."""
    return _masked.get()


def set_ct_masked(value: bool):
    return _masked.set(value)


def reset_ct_masked(token):
    _masked.reset(token)


def _finite_literal(y):
    return isinstance(y, Literal) and bool(np.isfinite(y.value))


def _strong(ct, prod):
    from .config import config
    if not config.strong_zero_where or not ct_masked():
        return prod
    return select(eq(ct, 0), 0, prod)


def mul_ct(ct, y):
    """``ct * y`` where a masked zero ``ct`` stays zero even if ``y`` is inf or NaN."""
    if _finite_literal(y):
        return mul(ct, y)
    return _strong(ct, mul(ct, y))


def div_ct(ct, y):
    """``ct / y`` where a masked zero ``ct`` stays zero even if ``y`` is 0 or NaN."""
    if _finite_literal(y) and y.value != 0:
        return div(ct, y)
    return _strong(ct, div(ct, y))


# ---------------------------------------------------------------------------------------------
# defining rules

def defjvp(prim, *derivs):
    """Define ``prim.jvp`` from one function per operand giving the tangent contribution
    ``deriv(g, ans, *primals, **params)`` of that operand's tangent ``g`` (None: the operand
    is not differentiable). Contributions are summed; rank-0 operands broadcast."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = None
        for d, g, x in zip(derivs, tangents, primals):
            if d is None or is_zero(g):
                continue
            c = d(g, ans, *primals, **params)
            if is_zero(c):
                continue
            c = broadcast_to(c, ty(ans).shape)
            out = c if out is None else add(out, c)
        return ans, (Zero(tangent_type(ty(ans))) if out is None else out)
    prim.jvp = rule
    return rule


def defjvp_zero(prim, reason):
    """A piecewise-constant primitive: its derivative is zero wherever it exists."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        return ans, Zero(tangent_type(ty(ans)))
    prim.jvp = rule
    prim.props["zero_derivative"] = reason
    return rule


def defnondiff(prim, reason):
    """A primitive with integer/bool results (or otherwise not differentiable): no tangent."""
    defjvp_zero(prim, reason)
    prim.props["nondiff"] = reason


def deflinear(prim, transpose_rule):
    """A primitive linear in all its operands: jvp applies it to the tangents."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(is_zero(t) for t in tangents):
            return ans, Zero(tangent_type(ty(ans)))
        return ans, prim.bind(*[instantiate(t, tangent_type(ty(x)))
                                for t, x in zip(tangents, primals)], **params)
    prim.jvp = rule
    prim.transpose = transpose_rule
    return rule


def coef(g, c):
    """The tangent ``g * c`` where ``c`` is computed from primals (a residual)."""
    return mul(g, c)


__all__ = ["Zero", "UndefinedPrimal", "is_zero", "is_undefined", "defjvp", "deflinear",
           "defjvp_zero", "defnondiff", "mul_ct", "div_ct", "Tracer"]
