"""Functions with user-defined derivatives and tracejit-only composites, spelled ``fz.name(...)``
in fuzz programs.

Two namespaces with the same names: ``TRACED`` (what a program under test calls: tracejit
``custom_jvp``/``custom_vjp`` functions and ``tracejit.numpy`` composites) and ``NUMPY`` (plain
NumPy, used to validate programs while generating and to estimate noise). Every rule here is the
*true* derivative of its function, so a custom rule must agree with the interpreter's own
derivative of the plain version and with finite differences: a wrong result is a tracejit bug,
not a deliberately odd rule. Arguments are float arrays (the generator only passes floats);
the two-argument functions take arguments of the same shape (custom_vjp's ``bwd`` returns one
cotangent per argument without un-broadcasting).
"""
from __future__ import annotations

import types

import numpy as np

import tracejit as tj


def _softplus(x):
    return np.logaddexp(x, 0.0)


def _mul(x, y):
    return x * y


def _sincos(x):
    return np.sin(x), np.cos(x)


def _tanh(x):
    return np.tanh(x)


def _scale(x, y):
    return x * np.sin(y)


def _logsumexp(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    return x - _logsumexp(x, axis=axis, keepdims=True)


# -- the traced versions ------------------------------------------------------------------------

cj_softplus = tj.custom_jvp(_softplus)


@cj_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    return _softplus(x), tx / (1 + np.exp(-x))       # the logistic function, exp(-x)=inf -> 0


cj_mul = tj.custom_jvp(_mul)


@cj_mul.defjvp
def _mul_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return x * y, tx * y + x * ty


cj_sincos = tj.custom_jvp(_sincos)      # a pytree (tuple) output


@cj_sincos.defjvp
def _sincos_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    return (np.sin(x), np.cos(x)), (np.cos(x) * tx, -np.sin(x) * tx)


cv_tanh = tj.custom_vjp(_tanh)
cv_tanh.defvjp(lambda x: (np.tanh(x), (np.tanh(x),)),
               lambda res, g: (g * (1 - res[0] * res[0]),))

cv_scale = tj.custom_vjp(_scale)
cv_scale.defvjp(lambda x, y: (x * np.sin(y), (x, y)),
                lambda res, g: (g * np.sin(res[1]), g * res[0] * np.cos(res[1])))

TRACED = types.SimpleNamespace(
    cj_softplus=cj_softplus, cj_mul=cj_mul, cj_sincos=cj_sincos, cv_tanh=cv_tanh,
    cv_scale=cv_scale, logsumexp=tj.numpy.logsumexp, softmax=tj.numpy.softmax,
    log_softmax=tj.numpy.log_softmax)

NUMPY = types.SimpleNamespace(
    cj_softplus=_softplus, cj_mul=_mul, cj_sincos=_sincos, cv_tanh=_tanh, cv_scale=_scale,
    logsumexp=_logsumexp, softmax=_softmax, log_softmax=_log_softmax)

# (name, number of same-shape float arguments, number of outputs, custom_vjp?)
FUNCTIONS = [("cj_softplus", 1, 1, False), ("cj_mul", 2, 1, False), ("cj_sincos", 1, 2, False),
             ("cv_tanh", 1, 1, True), ("cv_scale", 2, 1, True)]


# -- wrappers: any function gets a custom rule that is its own derivative -----------------------

def cjvp(fn):
    """``fn`` as a custom_jvp function whose rule is ``tj.jvp`` of ``fn`` itself."""
    wrapped = tj.custom_jvp(fn)
    wrapped.defjvp(lambda primals, tangents: tj.jvp(fn, primals, tangents))
    return wrapped


def cvjp(fn):
    """``fn`` (one argument) as a custom_vjp function: the residual is the argument and the
    backward pass is ``tj.vjp`` of ``fn`` at it (recomputing the forward pass)."""
    wrapped = tj.custom_vjp(fn)
    wrapped.defvjp(lambda x: (fn(x), (x,)), lambda res, g: tj.vjp(fn, res[0])[1](g))
    return wrapped


TRACED.cjvp, TRACED.cvjp = cjvp, cvjp
NUMPY.cjvp = NUMPY.cvjp = lambda fn: fn
