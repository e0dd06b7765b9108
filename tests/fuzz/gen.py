"""Random, well-typed NumPy programs as data.

A :class:`Program` is a list of argument specs and a list of statements ``v_k = <expr>`` over
earlier variables and the arguments, plus the transform layers to run it under. It renders to
standalone source text (``def f(a0, a1): ...``) that uses ``np.`` calls and ``tj.`` control
flow, so it can be exec'd, printed, shrunk and saved.

Invariant: every statement of a generated program has been *evaluated with plain NumPy* on the
program's inputs while generating (control flow through the NumPy shim in ``npshim``), so every
variable has a known concrete value, shape and dtype, and a program that NumPy rejects is never
produced: a candidate statement that raises or warns about an invalid cast is simply dropped and
another one drawn. Types are therefore checked by NumPy itself instead of by a model of it.
"""
from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np

from . import npshim

NARROW_INTS = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]
DTYPES = ["bool", "int32", "int64", "float32", "float64", "complex64", "complex128", *NARROW_INTS]
# argument dtype weights (DTYPES order), for arguments whose dtype the theme leaves open
_DTYPE_P = [.07, .07, .08, .15, .33, .06, .08, .03, .02, .04, .02, .02, .03]
FLOATS = ("float32", "float64")
MAX_ELEMS = 4096           # per variable, small programs (keeps a program's oracles < 1 s)
BIG_ELEMS = 400_000        # big programs cross the threading threshold


@dataclasses.dataclass
class Arg:
    """One argument: an array (``layout`` says how the view is made) or a Python scalar."""
    name: str
    kind: str                  # "array" | "float" | "int" | "complex" | "bool" (Python scalars)
    dtype: str
    shape: tuple
    layout: str = "c"          # c | T (transposed) | step (x[::2]) | neg (x[::-1]) | F (Fortran)


@dataclasses.dataclass
class Stmt:
    """``lines`` assign ``target`` (the last line may be a setitem on it); ``uses`` are the
    variables read; ``tags`` name the op family (grouping findings, FD exclusions)."""
    target: str
    lines: list
    uses: list
    tags: list
    shape: tuple = ()
    dtype: str = "float64"


@dataclasses.dataclass
class Program:
    seed: int
    args: list
    stmts: list
    outputs: list
    transforms: list           # e.g. [] or ["grad"] or ["grad", "vmap"] (innermost first)
    big: bool = False
    mutating: bool = False     # writes into arrays; checked against NumPy (mutate.py)
    control: bool = False      # Python control flow on traced values (gen_control.py)
    prelude: str = ""          # module-level helper functions before ``f`` (control programs)

    def source(self, name="f", probe=False) -> str:
        """The program as Python source defining ``name`` (control programs: with the helper
        functions, comparisons rendered plainly or, ``probe``, for gen_control's validity
        probe)."""
        body = [line for s in self.stmts for line in s.lines]
        out = ", ".join(self.outputs) + ("," if len(self.outputs) == 1 else "")
        params = ", ".join(a.name for a in self.args)
        text = "\n".join([f"def {name}({params}):"] + ["    " + b for b in body] +
                         [f"    return ({out})"]) + "\n"
        if self.control:
            from .gen_control import render
            text = render(self.prelude + "\n\n" + text, probe)
        return text

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d) -> "Program":
        d = dict(d)
        d["args"] = [Arg(**{**a, "shape": tuple(a["shape"])}) for a in d["args"]]
        d["stmts"] = [Stmt(**{**s, "shape": tuple(s["shape"])}) for s in d["stmts"]]
        return Program(**d)

    def tags(self) -> set:
        return {t for s in self.stmts for t in s.tags}


# ---------------------------------------------------------------------------------------------
# inputs: generated from (program seed, argument name), so dropping an argument or a statement
# while minimising does not change the values of the others

def make_arg(arg: Arg, seed: int, call: int = 0):
    """The concrete value of ``arg`` for call number ``call`` (0: first values, 1: new ones)."""
    rng = np.random.default_rng([seed, int(arg.name[1:]), call])
    if arg.kind == "float":
        return float(np.round(rng.normal() * 1.5, 3))
    if arg.kind == "int":
        return int(rng.integers(-4, 6))
    if arg.kind == "complex":
        return complex(np.round(rng.normal(), 2), np.round(rng.normal(), 2))
    if arg.kind == "bool":
        return bool(rng.random() < 0.5)
    shape = tuple(arg.shape)
    base = {"T": shape[::-1], "step": ((2 * shape[0],) + shape[1:]) if shape else shape}.get(
        arg.layout, shape)
    dt = np.dtype(arg.dtype)
    if dt.kind == "b":
        x = rng.random(base) < 0.5
    elif arg.dtype in NARROW_INTS and rng.random() < 0.3:
        # narrow ints over their whole range: wrap-around and unsigned comparisons get hit
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, size=base, dtype=dt, endpoint=True)
    elif dt.kind in "iu":
        x = rng.integers(-6, 7, size=base).astype(dt)       # unsigned: -k wraps to max - k + 1
    elif dt.kind == "c":
        x = (rng.normal(size=base) + 1j * rng.normal(size=base)).astype(dt)
    else:
        x = rng.normal(size=base).astype(dt)
    if arg.layout == "T":
        return x.T
    if arg.layout == "step" and shape:
        return x[::2]
    if arg.layout == "neg" and shape:
        return x[::-1]
    if arg.layout == "F":
        return np.asfortranarray(x)
    return x


def make_inputs(prog: Program, call: int = 0) -> list:
    return [make_arg(a, prog.seed, call) for a in prog.args]


# ---------------------------------------------------------------------------------------------
# evaluation with NumPy (the validity check while generating, and the minimiser's)

def np_namespace() -> dict:
    from . import rules
    return {"np": np, "tj": npshim, "_At": npshim.At, "fz": rules.NUMPY}


def to_numpy_source(src: str) -> str:
    """``x.at[i].add(v)`` exists on tracers only; NumPy evaluation goes through ``_At(x)``."""
    return re.sub(r"\b(\w+)\.at\[", r"_At(\1)[", src)


def eval_numpy(prog: Program, inputs):
    """Run the program with plain NumPy; raises whatever NumPy raises."""
    ns = np_namespace()
    exec(compile(to_numpy_source(prog.source()), "<fuzz-np>", "exec"), ns)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        return ns["f"](*inputs)


# ---------------------------------------------------------------------------------------------
# the generator

def _lit(rng, dtype_kind="f"):
    """A weak Python scalar literal."""
    if dtype_kind in "iub" or rng.random() < 0.25:
        return str(int(rng.integers(-3, 5)))
    if dtype_kind == "c" and rng.random() < 0.3:
        return f"({rng.normal():.2f}+{rng.normal():.2f}j)"
    return f"{rng.choice([0.5, 1.5, 2.0, -0.75, 3.0, 0.1, -2.5])}"


class Gen:
    """State of one program's generation: the rng and the concrete value of every variable."""

    def __init__(self, seed: int, big: bool):
        self.rng = np.random.default_rng(seed)
        self.seed, self.big = seed, big
        self.env = {}            # name -> concrete NumPy value (arguments included)
        self.args, self.stmts = [], []

    # -- picking operands ------------------------------------------------------------------
    def names(self, pred=lambda v: True):
        return [n for n, v in self.env.items() if pred(np.asarray(v))]

    def pick(self, pred=lambda v: True):
        """A variable satisfying ``pred``, biased to recent ones (longer dependency chains)."""
        ns = self.names(pred)
        if not ns:
            return None
        w = np.arange(1, len(ns) + 1, dtype=float) ** 1.5
        return ns[self.rng.choice(len(ns), p=w / w.sum())]

    def val(self, name):
        return np.asarray(self.env[name])

    # -- arguments -------------------------------------------------------------------------
    def make_args(self):
        rng = self.rng
        if self.big:
            base = [(BIG_ELEMS // 4,), (400, 250), (20, 50, 100), (100_000,)][rng.integers(4)]
        else:
            rank = rng.choice(5, p=[0.08, 0.3, 0.32, 0.2, 0.1])
            base = tuple(int(rng.choice([0, 1, 2, 3, 4, 5], p=[.04, .14, .26, .24, .18, .14]))
                         for _ in range(rank))
        theme = rng.choice(["f64", "f32", "mixed", "int", "complex", "narrow"],
                           p=[.37, .14, .24, .09, .09, .07])
        for k in range(int(rng.integers(1, 5))):
            name = f"a{k}"
            u = rng.random()
            if u < 0.12 and not self.big:
                self.args.append(Arg(name, "float", "float64", ()))
                continue
            if u < 0.18 and not self.big:
                self.args.append(Arg(name, "int", "int64", ()))
                continue
            if u < 0.21 and not self.big:     # weak complex / bool Python scalars
                kind = "complex" if u < 0.195 else "bool"
                self.args.append(Arg(name, kind, {"complex": "complex128"}.get(kind, "bool"),
                                     ()))
                continue
            dtype = {"f64": "float64", "f32": "float32", "int": "int64",
                     "complex": "complex128"}.get(str(theme))
            if theme == "narrow":
                dtype = str(rng.choice(NARROW_INTS))
            if dtype is None or rng.random() < 0.15:
                dtype = str(rng.choice(DTYPES, p=_DTYPE_P))
            shape = list(base[len(base) - int(rng.integers(0, len(base) + 1)):] if base else [])
            if not self.big:
                shape = [1 if rng.random() < 0.15 else d for d in shape]
                if rng.random() < 0.15:
                    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
            if self.big and rng.random() < 0.3:
                shape = list(base)
            layout = str(rng.choice(["c", "T", "step", "neg", "F"], p=[.6, .12, .1, .1, .08]))
            if not shape or (layout in ("T", "F") and len(shape) < 2):
                layout = "c"
            self.args.append(Arg(name, "array", dtype, tuple(shape), layout))
        for a in self.args:
            self.env[a.name] = make_arg(a, self.seed)

    # -- statements ------------------------------------------------------------------------
    def try_add(self, cand) -> bool:
        """Evaluate a candidate ``(lines_or_expr, uses, tags)`` with NumPy; keep it if valid."""
        if cand is None:
            return False
        body, uses, tags = cand
        target = f"v{len(self.stmts)}"
        lines = [f"{target} = {body}"] if isinstance(body, str) else \
            [ln.replace("{t}", target) for ln in body]
        ns = dict(np_namespace(), **self.env)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("error", np.exceptions.ComplexWarning)   # a subclass
                warnings.simplefilter("error", DeprecationWarning)
                exec(to_numpy_source("\n".join(lines)), ns)
        except Exception:
            return False
        v = ns[target]
        if isinstance(v, (bool, int, float, complex)) or not hasattr(v, "dtype"):
            return False                         # only arrays and NumPy scalars are variables
        v = np.asarray(v)
        limit = BIG_ELEMS * 2 if self.big else MAX_ELEMS
        if str(v.dtype) not in DTYPES or v.size > limit or v.ndim > 5:
            return False
        if v.dtype.kind in "fc" and not np.all(np.isfinite(v)) and self.rng.random() > 0.15:
            return False                         # NaN/inf only now and then
        if v.dtype.kind in "fc" and v.size and np.max(np.abs(v), where=~np.isnan(v),
                                                      initial=0) > 1e12:
            return False                         # huge values make tolerances meaningless
        self.env[target] = v
        self.stmts.append(Stmt(target, lines, sorted(set(uses)), tags, v.shape, str(v.dtype)))
        return True


def generate(seed: int, big: bool | None = None, draw=None) -> Program:
    """The program for ``seed`` (deterministic); ``draw(g)`` proposes statements (ops.py's
    families by default)."""
    from . import ops
    draw = draw or ops.candidate
    rng0 = np.random.default_rng([seed, 7])
    if big is None:
        big = rng0.random() < 0.05
    g = Gen(seed, big)
    g.make_args()
    n_stmts = int(g.rng.integers(2, 6 if big else 10))
    tries = 0
    while len(g.stmts) < n_stmts and tries < 60:
        tries += 1
        g.try_add(draw(g))
    if not g.stmts:                               # always at least one statement
        g.try_add((f"{g.args[0].name} * 1", [g.args[0].name], ["copy"]))
        if not g.stmts:
            g.stmts.append(Stmt("v0", [f"v0 = np.zeros(3) + 1.0"], [], ["const"], (3,)))
            g.env["v0"] = np.ones(3)
    last = g.stmts[-1].target
    others = [s.target for s in g.stmts[:-1]]
    extra = list(g.rng.choice(others, size=min(len(others), int(g.rng.integers(0, 3))),
                              replace=False)) if others else []
    outputs = [str(o) for o in extra] + [last]
    return Program(seed, g.args, g.stmts, outputs, pick_transforms(g, outputs), big)


def pick_transforms(g: Gen, outputs) -> list:
    """Transform layers for the program: derivatives only when there is a float input and a
    float/complex output, hessian only for small inputs."""
    rng = g.rng
    diff_args = [a for a in g.args if a.dtype in FLOATS + ("complex64", "complex128")]
    float_out = any(g.val(o).dtype.kind in "fc" for o in outputs)
    if g.big:
        return ["grad"] if diff_args and float_out and rng.random() < 0.4 else []
    choices = {"": .24, "vmap": .08, "vmap_axes": .07, "pytree": .04}
    if diff_args and float_out:
        n_diff = sum(int(np.prod(a.shape)) for a in diff_args)
        choices.update({"grad": .12, "jvp": .07, "vjp": .07, "jacfwd": .04, "jacrev": .04,
                        "grad,vmap": .04, "grad,jvp": .03, "linearize": .04,
                        "value_and_grad": .04, "vmap,grad": .04, "pytree,grad": .04})
        if n_diff <= 24:
            choices.update({"hessian": .03, "jacrev_grad": .02})
        if any(a.dtype.startswith("complex") for a in diff_args) and \
                any(g.val(o).dtype.kind == "c" for o in outputs):
            choices.update({"jacfwd_holo": .1, "jacrev_holo": .1})     # rare otherwise
    keys = list(choices)
    p = np.array([choices[k] for k in keys])
    pick = keys[rng.choice(len(keys), p=p / p.sum())]
    return pick.split(",") if pick else []
