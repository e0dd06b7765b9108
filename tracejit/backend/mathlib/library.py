"""Elementwise vector math for generated kernels: ``call_math(builder, "exp", x)``.

Each (function, element type, width) is one LLVM function with a stable, process-independent
name, e.g. ``tj_math_exp_v8f64`` or ``tj_math_cbrt_f32`` (width 1 = plain scalar), so object
code that calls it stays cacheable. Two ways to get the definition:

- default: the kernel module only declares it; ``ensure_math_compiled()`` compiles the
  definitions in a separate math module, once per process and function name (all types and
  widths together; the object code is cached on disk as library code in
  ``config.library_cache_dir``, so later processes load it in ~1 ms), and registers their
  addresses with ``jit.add_symbol`` (the notes measured
  2-22x faster per-kernel compiles for 4-9% run time);
- ``inline=True``: the body is emitted into the caller's module with internal linkage and
  ``alwaysinline`` (hot small kernels; readable ``inspect_asm``).

Implementations (accuracy and speed: tests/test_mathlib.py, bench/mathlib_bench.py):
- own polynomials (``emitter.py``, ``log.py``, ``trig.py``) for exp exp2 expm1 log log2 log10 log1p
  sin cos tanh sinh cosh arcsinh arccosh arctanh in f64. The exp family is table-driven
  (2^(j/8) by vpermpd, ``Emit.lookup``); on znver4, ms per 1e6 f64, one core, process CPU
  time, min of 30 (before -> after the tables), and max ulp against long double:

  | f64   | ours           | NumPy | ulp (was)   |
  |-------|----------------|-------|-------------|
  | exp   | 0.653 -> 0.571 | 0.82  | 0.60 (1.05) |
  | expm1 | 1.115 -> 0.856 | 1.16  | 1.07 (1.55) |
  | tanh  | 0.954 -> 0.877 | 1.67  | 1.85 (2.28) |
  | sinh  | 1.461 -> 1.025 | 1.15  | 1.87 (2.00) |
  | cosh  | 1.325 -> 0.789 | 0.92  | 1.08 (1.44) |

- native f32 bodies (``f32.py``: ``<16 x float>`` arithmetic, f32 minimax polynomials, the
  1.5*2^23 shifter) for exp exp2 expm1 log log2 log10 log1p sin cos tanh sinh cosh; f32
  arcsinh/arccosh/arctanh still run the f64 body (polynomials shortened to ~2^-32) on extended
  lanes and round once. Chosen per function, measured on znver4 (ms per 1e6, one core, process
  CPU time, min of 15; max ulp vs the f64 result rounded to f32 over the test domains, and vs
  NumPy's own f32 loop; every special value exact):

  | f32   | chosen | ours  | NumPy | libmvec (notes) | ulp (vs NumPy f32) |
  |-------|--------|-------|-------|-----------------|--------------------|
  | exp   | own    | 0.222 | 0.450 | 0.31            | 1 (2)              |
  | exp2  | own    | 0.165 | 0.204 |                 | 1 (1; NumPy flushes some subnormals) |
  | expm1 | own    | 0.299 | 0.343 |                 | 1 (2)              |
  | log   | own    | 0.252 | 0.369 | 0.29            | 1 (3)              |
  | log2  | own    | 0.267 | 0.217 |                 | 1 (2)              |
  | log10 | own    | 0.290 | 0.209 |                 | 1 (2)              |
  | log1p | own    | 0.352 | 0.455 |                 | 1 (2)              |
  | sin   | own    | 0.244 | 0.511 | 0.27            | 1 (2)              |
  | cos   | own    | 0.278 | 0.529 |                 | 1 (2)              |
  | tanh  | own    | 0.337 | 0.356 | 0.41            | 2 (2)              |
  | sinh  | own    | 0.411 | 0.349 |                 | 1 (2)              |
  | cosh  | own    | 0.316 | 0.322 |                 | 1 (2)              |

  Own bodies were kept everywhere: where libmvec was measured it is slower (exp, log, tanh) or
  barely faster (sin) and falls back to scalar code on any special lane (notes 1d);
  log2/log10/sinh are still 5-40% behind NumPy (libmvec not measured for them yet); exp,
  sinh and cosh use 16-entry tables (vpermps) as in f64 (exp 0.247 -> 0.222, sinh 0.432 ->
  0.411, cosh 0.338 -> 0.316); a table-driven f32 tanh measured 8% slower than this one;
- glibc libmvec AVX-512 variants (``_ZGVeN8v_cbrt``, ``_ZGVeN16vv_powf``, ...) for the long tail,
  loaded with ctypes and registered by address (``jit.add_symbol``, no RTLD_GLOBAL interposition);
  other widths pad or split; without libmvec (or AVX-512/AVX2) a scalar libm loop is used.
  Width 1 always calls scalar libm, which is what NumPy uses for these.
- sqrt, absolute/fabs, floor, ceil, trunc, rint are LLVM intrinsics emitted in place.
"""
from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.ir as ir

from ..engine import jit, objects
from . import emitter as em

F64 = ir.DoubleType()
F32 = ir.FloatType()
WIDTHS = (1, 2, 4, 8, 16)

# numpy name -> f64 body emitter (f32 reuses it on extended lanes)
# (bodies are looked up lazily: trig / log / f32 are imported only to build a module,
# which a warm library cache never does)
_OWN = {
    "exp": "emit_exp", "exp2": "emit_exp2", "expm1": "emit_expm1",
    "log": "log.emit_log", "log2": "log.emit_log2", "log10": "log.emit_log10",
    "log1p": "log.emit_log1p",
    "sin": "trig.emit_sin", "cos": "trig.emit_cos",
    "tanh": "emit_tanh", "sinh": "emit_sinh", "cosh": "emit_cosh",
    "arcsinh": "log.emit_arcsinh", "arccosh": "log.emit_arccosh",
    "arctanh": "log.emit_arctanh",
}


def _own_body(name):
    attr = _OWN[name]
    if attr.startswith("trig."):
        from . import trig
        return getattr(trig, attr[5:])
    if attr.startswith("log."):
        from . import log
        return getattr(log, attr[4:])
    return getattr(em, attr)
# numpy name -> (libm/libmvec base name, arity)
_LIBM = {
    "tan": ("tan", 1), "arcsin": ("asin", 1), "arccos": ("acos", 1), "arctan": ("atan", 1),
    "cbrt": ("cbrt", 1), "erf": ("erf", 1),
    "power": ("pow", 2), "arctan2": ("atan2", 2), "hypot": ("hypot", 2),
}
# numpy name -> LLVM intrinsic, emitted in place (no function, no math module needed)
_INTRINSIC = {"sqrt": "sqrt", "absolute": "fabs", "fabs": "fabs", "floor": "floor",
              "ceil": "ceil", "trunc": "trunc", "rint": "roundeven"}

UNARY = tuple(_OWN) + tuple(n for n, (_, a) in _LIBM.items() if a == 1) + tuple(_INTRINSIC)
BINARY = tuple(n for n, (_, a) in _LIBM.items() if a == 2)

_lock = threading.RLock()
jit.register_fork_lock(_lock)
_compiled: set = set()    # names whose definitions are in the process
_mvec = None           # (isa letter, f64 lanes, {symbol: address}) once probed; () if unavailable


def symbol_name(name: str, fty: ir.Type, width: int) -> str:
    """Stable symbol of one math function, e.g. ``tj_math_exp_v8f64``, ``tj_math_log_f32``."""
    dtype = "f64" if isinstance(fty, ir.DoubleType) else "f32"
    return f"tj_math_{name}_{'v%d' % width if width > 1 else ''}{dtype}"


def _split_type(ty: ir.Type):
    if isinstance(ty, ir.VectorType):
        return ty.element, ty.count
    return ty, 1


def call_math(builder: ir.IRBuilder, name: str, *args, inline: bool = False) -> ir.Value:
    """Emit ``name(*args)`` elementwise (NumPy semantics) on ``double``/``float`` scalars or vectors
    of width 1, 2, 4, 8 or 16; the result has the argument type.

    Without ``inline`` the function is only declared in ``builder.module`` and the shared math
    module is compiled into the process (once). With ``inline=True`` its body goes into the
    caller's module (internal linkage, alwaysinline)."""
    if name in _INTRINSIC:
        fty, width = _split_type(args[0].type)
        return em.Emit(builder, fty, width).intrinsic(_INTRINSIC[name], *args)
    arity = 2 if name in BINARY else 1
    if name not in _OWN and name not in _LIBM:
        raise KeyError(f"tracejit.mathlib: no math function {name!r}")
    if len(args) != arity:
        raise TypeError(f"{name} takes {arity} argument(s), got {len(args)}")
    fty, width = _split_type(args[0].type)
    if width not in WIDTHS or not isinstance(fty, (ir.DoubleType, ir.FloatType)):
        raise TypeError(f"tracejit.mathlib: unsupported type {args[0].type} for {name}")
    if inline:
        fn = define_math(builder.module, name, fty, width, inline=True)
    else:
        ensure_math_compiled((name,))
        fn = _declare(builder.module, name, fty, width)
    return builder.call(fn, args)


def _declare(module: ir.Module, name: str, fty: ir.Type, width: int) -> ir.Function:
    sym = symbol_name(name, fty, width)
    fn = module.globals.get(sym)
    if fn is None:
        vt = fty if width == 1 else ir.VectorType(fty, width)
        arity = _LIBM[name][1] if name in _LIBM else 1
        fn = ir.Function(module, ir.FunctionType(vt, [vt] * arity), sym)
        fn.attributes.add("nounwind")
    return fn


def define_math(module: ir.Module, name: str, fty: ir.Type, width: int,
                inline: bool = False) -> ir.Function:
    """Declare the math function in ``module`` and emit its body if it has none yet."""
    fn = _declare(module, name, fty, width)
    if not fn.is_declaration:
        return fn
    if inline:
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    if name in _OWN:
        result = _emit_own(builder, name, fty, width, fn.args[0])
    else:
        result = _emit_libm(builder, name, fty, width, list(fn.args))
    builder.ret(result)
    return fn


def _avx512() -> bool:
    """Whether the host has AVX-512F: table lookups use its lane permutes (``Emit.lookup``)."""
    return "+avx512f" in jit.host_cpu()[1].split(",")


def _emit_own(builder, name, fty, width, x):
    from . import f32
    if isinstance(fty, ir.FloatType) and name in f32.EMITTERS:
        return f32.EMITTERS[name](em.Emit(builder, F32, width, _avx512()), x)
    e = em.Emit(builder, em.F64, width, _avx512())
    if isinstance(fty, ir.FloatType):
        e.lowp = True
        return builder.fptrunc(_own_body(name)(e, builder.fpext(x, e.vt)), x.type)
    return _own_body(name)(e, x)


# ----------------------------------------------------------------------------- libmvec / libm

def _libmvec():
    """Probe libmvec once: (isa, f64 lanes, {symbol: address}) or () when unusable."""
    global _mvec
    with _lock:
        if _mvec is not None:
            return _mvec
        features = jit.host_cpu()[1]
        isa = "e" if "+avx512f" in features else "d" if "+avx2" in features else None
        lanes = {"e": 8, "d": 4}.get(isa)
        try:
            lib = ctypes.CDLL("libmvec.so.1") if isa else None
        except OSError:
            lib = None
        if lib is None:
            _mvec = ()
            return _mvec
        addresses = {}
        for base, arity in _LIBM.values():
            for suffix, n in (("", lanes), ("f", 2 * lanes)):
                sym = f"_ZGV{isa}N{n}{'v' * arity}_{base}{suffix}"
                try:
                    addresses[sym] = ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value
                except AttributeError:
                    continue
                jit.add_symbol(sym, addresses[sym])
        _mvec = (isa, lanes, addresses)
        return _mvec


def _i32_mask(indices):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), list(indices))


# libmvec's erff reaches its documented 4 ulp near |x| = 3.65; the f64 variant rounded is ~0.5
_F32_VIA_F64 = {"erf"}


def _emit_libm(builder, name, fty, width, args):
    if isinstance(fty, ir.FloatType) and name in _F32_VIA_F64:
        wide = ir.VectorType(F64, width) if width > 1 else F64
        res = _emit_libm(builder, name, F64, width, [builder.fpext(a, wide) for a in args])
        return builder.fptrunc(res, args[0].type)
    base, arity = _LIBM[name]
    base += "f" if isinstance(fty, ir.FloatType) else ""
    mod = builder.module
    mvec = _libmvec() if width > 1 else ()
    if mvec:
        isa, lanes, addresses = mvec
        n = lanes * (2 if isinstance(fty, ir.FloatType) else 1)
        sym = f"_ZGV{isa}N{n}{'v' * arity}_{base}"
        if sym in addresses:
            return _call_vector(builder, sym, fty, width, n, args)
    # scalar libm, lane by lane (width 1, or no usable libmvec)
    fn = mod.globals.get(base)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(fty, [fty] * arity), base)
        fn.attributes.add("nounwind")
    if width == 1:
        return builder.call(fn, args)
    result = ir.Constant(args[0].type, ir.Undefined)
    for lane in range(width):
        idx = ir.IntType(32)(lane)
        value = builder.call(fn, [builder.extract_element(a, idx) for a in args])
        result = builder.insert_element(result, value, idx)
    return result


def _call_vector(builder, sym, fty, width, n, args):
    """Call the n-lane libmvec ``sym`` on width-lane args: pad (with 0.5, inside every domain)
    or split into n-lane chunks and concatenate."""
    vn = ir.VectorType(fty, n)
    mod = builder.module
    fn = mod.globals.get(sym)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(vn, [vn] * len(args)), sym)
        fn.attributes.add("nounwind")
    if width < n:
        pad = ir.Constant(ir.VectorType(fty, width), [0.5] * width)
        spread = _i32_mask(list(range(width)) + [width] * (n - width))
        wide = [builder.shuffle_vector(a, pad, spread) for a in args]
        res = builder.call(fn, wide)
        return builder.shuffle_vector(res, res, _i32_mask(range(width)))
    chunks = []
    for start in range(0, width, n):
        part = [builder.shuffle_vector(a, a, _i32_mask(range(start, start + n))) for a in args]
        chunks.append(builder.call(fn, part))
    while len(chunks) > 1:
        size = chunks[0].type.count
        chunks = [builder.shuffle_vector(chunks[i], chunks[i + 1], _i32_mask(range(2 * size)))
                  for i in range(0, len(chunks), 2)]
    return chunks[0]


# ----------------------------------------------------------------------------- the math module

def build_math_module(names=None, widths=WIDTHS) -> ir.Module:
    """An ``ir.Module`` defining every math function (f64 and f32, all widths) by default."""
    mod = ir.Module(name="tj_mathlib")
    mod.triple = jit.triple()
    for name in names or tuple(_OWN) + tuple(_LIBM):
        for fty in (F64, F32):
            for width in widths:
                define_math(mod, name, fty, width)
    return mod


def ensure_math_compiled(names=None) -> None:
    """Compile the math functions ``names`` (default: all) into the process, each once.

    Thread-safe and lazy: ``call_math`` asks only for the function it emits, so a process pays
    for the functions it uses (~40-80 ms each, all 24 with every type and width: ~1.1 s).
    Registers every ``tj_math_*`` symbol so kernel modules that only declare them resolve."""
    wanted = tuple(_OWN) + tuple(_LIBM) if names is None else tuple(names)
    if _compiled.issuperset(wanted):
        return
    with _lock:
        missing = [n for n in wanted if n not in _compiled]
        if not missing:
            return
        for name in missing:
            _compile_one(name)
        _compiled.update(missing)


def _compile_one(name) -> None:
    """One function name (both types, every width) as library code: object code cached in
    ``config.library_cache_dir`` (``jit.compile_library``), compiled on a miss."""
    here = os.path.dirname(__file__)
    source = objects.source_key(*(os.path.join(here, f) for f in (
        "library.py", "emitter.py", "f32.py", "trig.py", "log.py")))
    if name in _LIBM:
        mvec = _libmvec()              # registers the libmvec symbols the object calls
        source += repr((mvec[:2], sorted(mvec[2]))) if mvec else "no-libmvec"
    jit.compile_library(f"math-{name}", lambda: build_math_module((name,)), source, opt=1)
    for fty in (F64, F32):
        for width in WIDTHS:
            sym = symbol_name(name, fty, width)
            jit.add_symbol(sym, jit.function_address(sym))

