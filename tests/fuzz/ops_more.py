"""More statement families (see ops.py for the contract): advanced and mixed indexing,
composites (take, take_along_axis, split, kron, cross, select, softmax/logsumexp, trace, ...),
creation functions inside programs, user-defined derivatives (``fz.cj_*``/``fz.cv_*`` from
rules.py), ``tj.checkpoint``, and nested control flow (a loop or cond inside a loop or branch
body, ``scan(..., checkpoint_every=k)``).

As in ops.py, candidates may be invalid: ``Gen.try_add`` evaluates each with NumPy (``fz`` is
rules.NUMPY there, ``tj`` the shim) and drops what NumPy rejects.
"""
from __future__ import annotations

import numpy as np

from . import rules
from .gen import _lit
from .ops import BINARY, UNARY, _axes, _bcast, _body


def _ids(rng, n, size):
    """``size`` random in-range indices (negative ones included) for an axis of length n."""
    return rng.integers(-n, n, size=size).tolist()


def advindex(g):
    """Integer-array and mixed indexing: x[i, :, idx], x[..., idx], broadcast index arrays,
    traced integer indices, a concrete mask on a later axis."""
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1 and v.size)
    if x is None:
        return None
    s = g.val(x).shape
    nd = len(s)
    k = rng.integers(7)
    if k == 0 and nd >= 2:          # advanced indices separated by a slice: moved to the front
        last = f"np.array({_ids(rng, s[-1], 2)})" if rng.random() < 0.5 else \
            str(int(rng.integers(-s[-1], s[-1])))
        mid = "".join([":, "] * (nd - 2))
        return f"{x}[np.array({_ids(rng, s[0], 2)}), {mid}{last}]", [x], ["index:mixed"]
    if k == 1:
        return f"{x}[..., np.array({_ids(rng, s[-1], int(rng.integers(1, 4)))})]", [x], \
            ["index:ellipsis_gather"]
    if k == 2 and nd >= 2:          # (2, 1) and (3,) index arrays broadcast to (2, 3)
        a = np.array(_ids(rng, s[0], 2)).reshape(2, 1).tolist()
        return f"{x}[np.array({a}), np.array({_ids(rng, s[1], 3)})]", [x], ["index:broadcast"]
    if k == 3:                      # a traced integer index (kept in range with %)
        i = g.pick(lambda v: v.dtype.kind == "i" and v.size <= 16)
        if i is None:
            return None
        ax = int(rng.integers(nd))
        if rng.random() < 0.5:
            return f"{x}[{':, ' * ax}{i} % {s[ax]}]", [x, i], ["index:traced"]
        return f"np.take({x}, {i} % {s[ax]}, axis={ax})", [x, i], ["index:take_traced"]
    if k == 4:
        ax = int(rng.integers(-nd, nd))
        ids = _ids(rng, s[ax], int(rng.integers(1, 5)))
        if rng.random() < 0.3:          # no axis: indices into the flattened array
            return f"np.take({x}, np.array({ids}))", [x], ["index:take_flat"]
        return f"np.take({x}, np.array({ids}), axis={ax})", [x], ["index:take"]
    if k == 5:
        ax = int(rng.integers(-nd, nd))
        if rng.random() < 0.5 and g.val(x).dtype.kind != "c":
            fn = rng.choice(["argmax", "argmin"])
            return (f"np.take_along_axis({x}, np.{fn}({x}, axis={ax}, keepdims=True), "
                    f"axis={ax})"), [x], ["index:take_along_axis"]
        shape = list(s)
        shape[ax] = int(rng.integers(1, 4))
        ids = rng.integers(0, s[ax], size=shape).tolist()
        return f"np.take_along_axis({x}, np.array({ids}), axis={ax})", [x], \
            ["index:take_along_axis"]
    if nd >= 2:                     # a concrete mask on a later axis, int or slice before it
        mask = (rng.random(s[1]) < 0.5).tolist()
        first = rng.choice([":", str(int(rng.integers(-s[0], s[0]))), "1:"])
        return f"{x}[{first}, np.array({mask}, dtype=bool)]", [x], ["index:mask_axis"]
    return None


def composite(g):
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1)
    if x is None:
        return None
    xv = g.val(x)
    s, nd = xv.shape, xv.ndim
    ax = int(rng.integers(-nd, nd))
    k = rng.integers(11)
    if k == 0:
        n = s[ax]
        divs = [d for d in range(1, n + 1) if n % d == 0] or [1]
        d = int(rng.choice(divs))
        j = int(rng.integers(d))
        return f"np.split({x}, {d}, axis={ax})[{j}]", [x], ["comp:split"]
    if k == 1:
        cuts = sorted(rng.integers(0, s[ax] + 1, size=2).tolist())
        fn = rng.choice(["split", "array_split"])
        arg = cuts if fn == "split" else int(rng.integers(1, 4))
        return f"np.{fn}({x}, {arg}, axis={ax})[{int(rng.integers(0, 2))}]", [x], \
            [f"comp:{fn}"]
    if k == 2:
        # tracejit's kron takes 2-D operands only (UnsupportedError otherwise)
        y = g.pick(lambda v: v.size * xv.size <= 512 and v.ndim == 2) if xv.size <= 64 and \
            nd == 2 else None
        return (f"np.kron({x}, {y})", [x, y], ["comp:kron"]) if y else None
    if k == 3:
        y = g.pick(lambda v: v.ndim >= 1 and _bcast(v[..., :3], xv[..., :3]))
        if y is None or s[-1] < 2:
            return None
        m = 3 if s[-1] >= 3 and g.val(y).shape[-1] >= 3 else 2
        return f"np.cross({x}[..., :{m}], {y}[..., :{m}])", [x, y], ["comp:cross"]
    if k == 4:
        y = g.pick(lambda v: _bcast(v, xv))
        c = f"{x} > {rng.choice([0, 0.5, -0.5])}"
        return (f"np.select([{c}, {y} < 0], [{x}, {y}], {_lit(rng, xv.dtype.kind)})",
                [x, y], ["comp:select"])
    if xv.dtype.kind != "f":
        return None
    if k == 5:
        fn = rng.choice(["softmax", "log_softmax"])
        return f"fz.{fn}({x}, axis={ax})", [x], [f"comp:{fn}"]
    if k == 6:
        a = _axes(g, nd)
        kd = ", keepdims=True" if rng.random() < 0.4 else ""
        return f"fz.logsumexp({x}, axis={a}{kd})", [x], ["comp:logsumexp"]
    if k == 7:                      # hand-written softmax (composes max, exp, sum, divide)
        return (f"np.exp({x} - np.max({x}, axis={ax}, keepdims=True)) / "
                f"np.sum(np.exp({x} - np.max({x}, axis={ax}, keepdims=True)), axis={ax}, "
                f"keepdims=True)"), [x], ["comp:softmax_np"]
    if k == 8 and nd >= 2:
        return f"np.trace({x}, {int(rng.integers(-1, 2))})", [x], ["comp:trace"]
    if k == 9:
        w = g.pick(lambda v: v.shape == (s[ax],) and v.dtype.kind == "f")
        wt = f", weights=np.abs({w}) + 0.5" if w else ""
        return f"np.average({x}, axis={ax}{wt})", [x] + ([w] if w else []), ["comp:average"]
    if k == 10:
        y = g.pick(lambda v: v.shape == s and v.dtype == xv.dtype) or x
        fn = rng.choice(["hstack", "vstack", "column_stack"])
        return f"np.{fn}([{x}, {y}])", [x, y], [f"comp:{fn}"]
    return None


def creation(g):
    """Creation functions combined with a variable (a lone constant is folded away)."""
    rng = g.rng
    x = g.pick()
    xv = g.val(x)
    s = xv.shape
    n = s[-1] if s else int(rng.integers(1, 5))
    k = rng.integers(8)
    if k == 0:
        dt = rng.choice(["", ", dtype=np.float32", ", dtype=np.int32"])
        return f"{x} * np.arange({n}{dt})", [x], ["create:arange"]
    if k == 1:
        return f"{x} + np.arange({rng.choice([-1.0, 0.5, 0])}, {n / 2 + 0.25}, 0.5)", [x], \
            ["create:arange_float"]
    if k == 2:
        a, b = sorted(rng.choice([-2.0, -1.0, 0.0, 0.5, 3.0], 2, replace=False))
        ep = ", endpoint=False" if rng.random() < 0.3 else ""
        return f"{x} + np.linspace({a}, {b}, {n}{ep})", [x], ["create:linspace"]
    if k == 3 and len(s) >= 2:
        if rng.random() < 0.5:
            return f"np.eye({s[-2]}, k={int(rng.integers(-1, 2))}) @ {x}", [x], ["create:eye"]
        return f"{x} * np.eye({s[-2]}, {s[-1]}, {int(rng.integers(-1, 2))})", [x], \
            ["create:eye"]
    if k == 4:
        dt = rng.choice(["", ", dtype=np.float32", f", dtype={x}.dtype"])
        return f"{x} + np.full({tuple(s[1:])}, {_lit(rng, xv.dtype.kind)}{dt})", [x], \
            ["create:full"]
    if k == 5:
        fn = rng.choice(["zeros_like", "ones_like"])
        y = g.pick(lambda v: _bcast(v, xv)) or x
        return f"np.{fn}({x}) * {y} + {x}", [x, y], [f"create:{fn}"]
    if k == 6:
        return f"np.full_like({x}, {_lit(rng, xv.dtype.kind)}) - {x}", [x], ["create:full_like"]
    fn = rng.choice(["ones", "zeros"])
    dt = rng.choice(["", ", dtype=np.int32", ", dtype=np.complex64", ", dtype=bool"])
    return f"np.{fn}({tuple(s)}{dt}) + {x}", [x], [f"create:{fn}"]


def custom(g):
    """A function with a user-defined derivative (rules.py), or a checkpointed region."""
    rng = g.rng
    x = g.pick(lambda v: v.dtype.kind == "f")
    if x is None:
        return None
    xv = g.val(x)
    if rng.random() < 0.3:
        b, u = _body(g, "u", xv)
        return f"tj.checkpoint(lambda u: {b})({x})", [x] + u, ["checkpoint"]
    if rng.random() < 0.2:
        # a random binary op over two arguments as one custom_jvp function (tangents for both)
        y = g.pick(lambda v: v.dtype == xv.dtype and _bcast(v, xv))
        tmpl = BINARY[rng.integers(len(BINARY))]
        if y is None or any(c in tmpl for c in ("==", "!=", "<", ">", "logical", "isclose")):
            return None                  # bool results have no tangent to define
        return f"fz.cjvp(lambda u, v: {tmpl.format(x='u', y='v')})({x}, {y})", [x, y], \
            ["custom:cjvp2", "binary:" + tmpl]
    if rng.random() < 0.4:
        # a random unary op (no closure: custom functions must not capture tracers) wrapped
        # with a rule that is its own jvp/vjp
        tmpl, tags = UNARY[rng.integers(len(UNARY))]
        if tmpl.startswith(("np.isnan", "np.isfinite", "np.isinf", "np.logical_not", "~")):
            return None                  # bool results have no tangent to define
        wrap = "cvjp" if rng.random() < 0.4 else "cjvp"
        return f"fz.{wrap}(lambda u: {tmpl.format(x='u')})({x})", [x], \
            [f"custom:{wrap}", "unary:" + tmpl.split("(")[0]] + tags + \
            (["custom_vjp"] if wrap == "cvjp" else [])
    name, nargs, nout, vjp = rules.FUNCTIONS[rng.integers(len(rules.FUNCTIONS))]
    args = [x]
    if nargs == 2:
        y = g.pick(lambda v: v.shape == xv.shape and v.dtype == xv.dtype) or x
        args.append(y)
    call = f"fz.{name}({', '.join(args)})" + (f"[{int(rng.integers(nout))}]" if nout > 1 else "")
    return call, args, ["custom:" + name] + (["custom_vjp"] if vjp else [])


def _inner(g, xv, var, outer_index):
    """A control-flow expression over ``var`` (the outer body's carry), for nesting."""
    rng = g.rng
    b1, u1 = _body(g, "z", xv)
    k = rng.integers(4)
    if k == 0:
        # the trip count may be the outer loop's index: a traced bound, i.e. a while loop
        hi = outer_index if outer_index and rng.random() < 0.5 else int(rng.integers(0, 4))
        return f"tj.fori_loop(0, {hi}, lambda j, z: {b1}, {var})", u1, "fori"
    if k == 1:
        b2, u2 = _body(g, "z", xv)
        pred = f"np.sum(np.real({var})) > {rng.choice([0, 0.5, -1])}"
        return f"tj.cond({pred}, lambda z: {b1}, lambda z: {b2}, {var})", u1 + u2, "cond"
    if k == 2:
        n = int(rng.integers(0, 4))
        return (f"tj.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, "
                f"(lambda z: {b1})(c[1])), (0, {var}))[1]"), u1, "while"
    b2, u2 = _body(g, "z", xv)
    return f"tj.switch({int(rng.integers(-1, 4))}, [lambda z: {b1}, lambda z: {b2}], {var})", \
        u1 + u2, "switch"


def nested(g):
    """A loop or branch whose body holds another control-flow op; scans with checkpoint_every."""
    rng = g.rng
    x = g.pick()
    xv = g.val(x)
    k = rng.integers(5)
    if k == 4:
        # tj.switch on a traced integer (out-of-range indices clamp, as in JAX), one branch
        # holding another control-flow op
        i = g.pick(lambda v: v.dtype.kind == "i" and v.ndim == 0)
        if i is None:
            return None
        inner, u, kind = _inner(g, xv, "u", None)
        b2, u2 = _body(g, "u", xv)
        return (f"tj.switch({i}, [lambda u: {b2}, lambda u: {inner}, lambda u: u], {x})",
                [x, i] + u + u2, [f"nested:switch/{kind}"])
    if k == 0:
        inner, u, kind = _inner(g, xv, "u", "i")
        return f"tj.fori_loop(0, {int(rng.integers(1, 4))}, lambda i, u: {inner}, {x})", \
            [x] + u, [f"nested:fori/{kind}"]
    if k == 1:
        inner, u, kind = _inner(g, xv, "u", None)
        b2, u2 = _body(g, "u", xv)
        y = g.pick(lambda v: v.dtype.kind in "fi" and v.size) or x
        branches = [f"lambda u: {inner}", f"lambda u: {b2}"]
        if rng.random() < 0.5:
            branches.reverse()
        return (f"tj.cond(np.sum({y}) > {rng.choice([0, 0.5, -1])}, {branches[0]}, "
                f"{branches[1]}, {x})"), [x, y] + u + u2, [f"nested:cond/{kind}"]
    if k == 2:
        inner, u, kind = _inner(g, xv, "c[1]", None)
        n = int(rng.integers(0, 4))
        return (f"tj.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, {inner}), "
                f"(0, {x}))[1]"), [x] + u, [f"nested:while/{kind}"]
    if xv.ndim == 0 or xv.shape[0] == 0:
        return None
    init = g.pick(lambda v: v.shape == xv.shape[1:] and v.dtype == xv.dtype)
    init = init or f"{x}[0] * 0"
    rv = g.val(x)[0]
    inner, u, kind = _inner(g, rv, "u", None) if rng.random() < 0.6 else ("u * 0.5", [], "none")
    every = rng.choice([None, 1, 2, 3, "'sqrt'"])
    ck = f", checkpoint_every={every}" if every is not None else ""
    rev = ", reverse=True" if rng.random() < 0.2 else ""
    return (f"tj.scan(lambda u, r: ({inner} + r, u * 2), {init}, {x}{rev}{ck})"
            f"[{int(rng.integers(2))}]"), [x] + u + ([init] if init in g.env else []), \
        [f"nested:scan/{kind}"] + (["scan:checkpoint"] if ck else [])


def order(g):
    """Sorting and order statistics (numpy/sorting.py, counting.py): sort, argsort,
    median, quantile/percentile with a method, searchsorted, histogram, trunc."""
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1 and v.dtype.kind in "iuf" and v.size >= 1)
    if x is None:
        return None
    xv = g.val(x)
    nd = xv.ndim
    ax = int(rng.integers(-nd, nd))
    k = rng.integers(7)
    if k == 0:
        kind = rng.choice(["", ", kind='stable'"])
        return f"np.sort({x}, axis={ax}{kind})", [x], ["order:sort"]
    if k == 1:
        return f"np.argsort({x}, axis={ax}, kind='stable')", [x], ["order:argsort"]
    if k == 2:
        kd = ", keepdims=True" if rng.random() < 0.3 else ""
        a = rng.choice([str(ax), "None"])
        return f"np.median({x}, axis={a}{kd})", [x], ["order:median"]
    if k == 3:
        method = rng.choice(["linear", "lower", "higher", "nearest", "midpoint", "hazen",
                             "weibull", "median_unbiased"])
        q = rng.choice(["0.3", "[0.1, 0.5, 0.95]", "1", "0.0"])
        fn, qq = ("quantile", q) if rng.random() < 0.5 else \
            ("percentile", q.replace("0.3", "30").replace("0.1", "10").replace(
                "0.95", "95").replace("0.5", "50"))
        return f"np.{fn}({x}, {qq}, axis={ax}, method='{method}')", [x], [f"order:{fn}"]
    if k == 4:
        y = g.pick(lambda v: v.dtype == xv.dtype and v.ndim <= 2)
        if y is None:
            return None
        side = rng.choice(["left", "right"])
        return (f"np.searchsorted(np.sort({x}.ravel()), {y}, side='{side}')", [x, y],
                ["order:searchsorted"])
    if k == 5:
        w = g.pick(lambda v: v.shape == xv.shape and v.dtype.kind == "f")
        bins = rng.choice(["5", "3, range=(-1.0, 1.0)", "[-1.0, 0.0, 0.5, 2.0]"])
        wt = f", weights={w}" if w else ""
        return f"np.histogram({x}, {bins}{wt})[0]", [x] + ([w] if w else []), \
            ["order:histogram"]
    return (f"np.trunc({x})", [x], ["order:trunc"]) if xv.dtype.kind == "f" else None


def spectral(g):
    """numpy.fft: a 1-D transform (n, axis, norm drawn), an n-d one (axes, s), a filtered round
    trip or a shift. Real-input transforms of complex values, n = 0 and the like are left for
    NumPy's validation to drop."""
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1)
    if x is None:
        return None
    xv = g.val(x)
    nd, m = xv.ndim, xv.shape[-1]
    ax = int(rng.integers(-nd, nd))
    norm = rng.choice(["", ", norm='ortho'", ", norm='forward'", ", norm='backward'"])
    k = rng.integers(5)
    if k == 0:
        fn = rng.choice(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
        n = f", n={int(rng.integers(1, 2 * xv.shape[ax] + 2))}" if rng.random() < 0.5 else ""
        return f"np.fft.{fn}({x}{n}, axis={ax}{norm})", [x], [f"fft:{fn}"]
    if k == 1:
        fn = rng.choice(["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"])
        axes = [int(a) for a in rng.permutation(nd)[:int(rng.integers(1, nd + 1))]]
        if fn.endswith("2"):
            axes = axes[:2] if len(axes) == 2 else [-2, -1]
        s = [int(rng.integers(1, 7)) for _ in axes] if rng.random() < 0.4 else None
        sk = f", s={tuple(s)}" if s else ""
        return f"np.fft.{fn}({x}{sk}, axes={tuple(axes)}{norm})", [x], [f"fft:{fn}"]
    if k == 2:                      # low-pass filter: rfft, scale the spectrum, irfft
        return (f"np.fft.irfft(np.fft.rfft({x}{norm}) * np.exp(-0.1 * np.arange({m // 2 + 1})), "
                f"n={m}{norm})"), [x], ["fft:filter"]
    if k == 3:                      # the power spectrum, a real function of complex values
        return f"np.abs(np.fft.fft({x}, axis={ax}{norm})) ** 2", [x], ["fft:power"]
    fn = rng.choice(["fftshift", "ifftshift"])
    axes = rng.choice(["", f", axes={ax}", f", axes=({ax},)"])
    return f"np.fft.{fn}({x}{axes})", [x], [f"fft:{fn}"]


FAMILIES = [(advindex, 6), (composite, 7), (creation, 4), (custom, 4), (nested, 4),
            (order, 4), (spectral, 4)]
