"""Control-flow programs (``--programs control``): Python ``if``/``elif``/``else``, ``while``,
early ``return``, ``a if c else b``, ``and``/``or``/``not`` and builtin ``max``/``min`` on
*traced* scalars, so that tracejit's autograph (tracejit/autograph.py) has to convert them.

A program is a :class:`gen.Program` with ``control=True``: its statements are top-level blocks
(an assignment, an ``if`` with nested blocks, a ``while`` loop, a write into an argument or into
an ``np.zeros`` array, possibly inside a branch or a loop), ``prelude`` holds helper functions
(themselves branching or looping on traced values, one writing into its argument) that the
blocks call. Autograph reads source, so the oracle (oracle_ctl.py) writes the program into a
real module file and imports it; NumPy running that same module is the oracle.

Validity is decided by NumPy, on the whole program: it is run on both input sets (first and
new values) in *probe* form, where every traced comparison ``lhs op rhs`` is rendered as
``_cmp(lhs, "op", rhs)`` (recording how close the two sides are) and every ``while`` test is
prefixed by ``_guard(id) and`` (a runaway loop raises). A program is dropped when NumPy raises
or warns, a value is non-finite or above 1e6, a loop runs more than GUARD iterations, or a
comparison decided a branch by less than a relative 1e-6 (1e-3 for float32): there one ulp of
difference between tracejit's math and NumPy's would take the other branch, which is not a bug.
Types are tracked by evaluating each expression with NumPy while generating; both branches of
an ``if`` assign the same shapes and dtypes (what ``tracejit.cond`` requires; a mismatch is a
documented refusal, not what this generator is after).
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from . import gen

GUARD = 300
# comparison markers: \x01 lhs \x02 op \x02 rhs \x03 ; while guard: \x04 id \x05
_CMP = re.compile(r"\x01([^\x01\x02\x03]*)\x02([^\x02]*)\x02([^\x03]*)\x03")
_GRD = re.compile(r"\x04(\d+)\x05")

PRELUDE = '''\
def h_scale(x):
    if x.sum() > 0.0:
        return x * 0.5
    return -x


def h_clip(x, t):
    y = x
    if x.max() > t:
        y = np.minimum(x, t)
    elif x.min() < -t:
        y = np.maximum(x, -t)
    return y


def h_loop(x):
    k = 0
    while np.abs(x).max() > 1.0 and k < 6:
        x = x * 0.5
        k += 1
    return x


def h_pick(x, y):
    return x if x.mean() > y.mean() else y


def h_write(z, s):
    if s > 0.0:
        z[...] = z + s
    else:
        z *= 0.5
'''


def cmp(lhs, op, rhs):
    return f"\x01{lhs}\x02{op}\x02{rhs}\x03"


def render(text: str, probe=False) -> str:
    """The real source (``probe=False``) or the probe form of ``text`` (see the docstring)."""
    if probe:
        text = _CMP.sub(lambda m: f'_cmp({m.group(1)}, "{m.group(2)}", {m.group(3)})', text)
        return _GRD.sub(lambda m: f"_guard({m.group(1)}) and ", text)
    text = _CMP.sub(lambda m: f"({m.group(1)} {m.group(2)} {m.group(3)})", text)
    return _GRD.sub("", text)


class Probe:
    """The namespace helpers of a probe run: comparison margins and loop guards."""

    def __init__(self, rel):
        self.rel, self.close, self.counts = rel, False, {}

    def cmp(self, a, op, b):
        fa, fb = np.asarray(a), np.asarray(b)
        if fa.dtype.kind in "fc" or fb.dtype.kind in "fc":
            x, y = float(fa.reshape(())), float(fb.reshape(()))
            if abs(x - y) <= self.rel * (1 + abs(x) + abs(y)):
                self.close = True
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]

    def guard(self, i):
        self.counts[i] = self.counts.get(i, 0) + 1
        if self.counts[i] > GUARD:
            raise RuntimeError("runaway loop")
        return True


def run_probe(prog, call):
    """Run ``prog`` with NumPy in probe form on input set ``call``: (result, args, probe);
    raises where the program is invalid."""
    f32 = "float32" in prog.source()
    probe = Probe(1e-3 if f32 else 1e-6)
    ns = {"np": np, "_cmp": probe.cmp, "_guard": probe.guard}
    src = prog.source(probe=True)
    args = gen.make_inputs(prog, call)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(src, "<fuzz-control>", "exec"), ns)
        out = ns["f"](*args)
    if probe.close:
        raise ValueError("a comparison too close to call")
    for v in list(_leaves(out)) + [a for a in args if isinstance(a, np.ndarray)]:
        if v.dtype.kind in "fc" and (not np.all(np.isfinite(v)) or np.any(np.abs(v) > 1e6)):
            raise ValueError("non-finite or huge value")
        if v.dtype.kind in "iu" and np.any(np.abs(v) > 10 ** 9):
            raise ValueError("huge integer")
    return out, args, probe


def _leaves(x):
    if isinstance(x, (tuple, list)):
        for y in x:
            yield from _leaves(y)
    else:
        yield np.asarray(x)


def valid(prog) -> bool:
    try:
        for call in (0, 1):
            run_probe(prog, call)
    except Exception:                            # noqa: BLE001 - NumPy decides
        return False
    return True


class CtlGen:
    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng([seed, 77])
        self.args, self.stmts, self.n, self.loops = [], [], 0, 0
        self.env = {}                            # name -> a NumPy value of its shape/dtype

    # --- names and values -------------------------------------------------------------------
    def new(self):
        self.n += 1
        return f"v{self.n}"

    def make_args(self):
        rng = self.rng
        rank = int(rng.choice(3, p=[.2, .45, .35]))
        base = tuple(int(rng.integers(1, 5)) for _ in range(rank))
        dt = "float32" if rng.random() < 0.2 else "float64"
        for k in range(int(rng.integers(1, 4))):
            name, u = f"a{k}", rng.random()
            if u < 0.15:
                a = gen.Arg(name, "float", "float64", ())
            elif u < 0.22:
                a = gen.Arg(name, "int", "int64", ())
            else:
                shape = base[len(base) - int(rng.integers(0, len(base) + 1)):]
                if rng.random() < 0.15:
                    shape = base
                d = "int64" if rng.random() < 0.12 else dt
                a = gen.Arg(name, "array", d, tuple(shape))
            self.args.append(a)
        if not any(a.kind == "array" and a.dtype != "int64" for a in self.args):
            self.args[0] = gen.Arg("a0", "array", dt, base)
        for a in self.args:
            self.env[a.name] = gen.make_arg(a, self.seed)

    def ev(self, code, env):
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            return eval(code, {"np": np, "h_scale": _h["h_scale"], "h_clip": _h["h_clip"],
                               "h_loop": _h["h_loop"], "h_pick": _h["h_pick"]}, dict(env))

    def arrays(self, env, kind="f", min_ndim=0):
        return [n for n, v in env.items() if isinstance(v, np.ndarray) and
                v.dtype.kind in kind and v.ndim >= min_ndim and v.size and
                not n.startswith("k")]

    def pick(self, xs):
        return xs[int(self.rng.integers(len(xs)))] if xs else None

    # --- expressions --------------------------------------------------------------------
    def expr(self, env, kind="fi"):
        """(code, value): an array expression over ``env``."""
        rng = self.rng
        for _ in range(30):
            x = self.pick(self.arrays(env, kind))
            y = self.pick(self.arrays(env, kind))
            c = round(float(rng.uniform(0.2, 1.8)), 2)
            u = int(rng.integers(14))
            code = [f"np.sin({x})", f"np.tanh({x})", f"{x} * {c}", f"{x} + {c}", f"-{x}",
                    f"np.abs({x})", f"np.exp(-np.abs({x}))", f"{x} * {x}",
                    f"{x} + {y}", f"{x} * {y}", f"{x} - {y}", f"np.maximum({x}, {y})",
                    f"np.where({x} > {y}, {x}, {y})", f"{x}.sum(axis=0)"][u]
            if u == 13 and not env[x].ndim:
                continue               # axis=0 of a NumPy scalar works, of a 0-d array not
            if u >= 8 and rng.random() < 0.25:
                code = f"{self.pick(['h_scale', 'h_loop'])}({code})" if kind == "f" else code
            try:
                v = self.ev(code, env)
            except Exception:                    # noqa: BLE001
                continue
            if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in kind and \
                    0 < np.size(v) <= 64:
                return code, np.asarray(v)
        return None, None

    def like(self, env, target, kind="fi"):
        """An expression with the shape and dtype of ``target`` (a value)."""
        for _ in range(25):
            code, v = self.expr(env, kind)
            if code is not None and v.shape == target.shape and v.dtype == target.dtype:
                return code
        return None

    def scalar(self, env):
        """(code, value) of a traced scalar expression."""
        rng = self.rng
        xs = self.arrays(env, "fi")
        ss = [n for n, v in env.items() if isinstance(v, (float, int)) and not
              isinstance(v, bool) and not n.startswith("k")]
        x = self.pick(xs)
        opts = [f"{x}.sum()", f"{x}.mean()", f"{x}.max()", f"{x}.min()", f"np.abs({x}).sum()"]
        v = env[x]
        if v.ndim:
            idx = ", ".join(str(int(rng.integers(d))) for d in v.shape)
            opts.append(f"{x}[{idx}]")
        if ss and rng.random() < 0.3:
            opts = ss
        code = self.pick(opts)
        return code, self.ev(code, env)

    def cond(self, env, depth=0):
        """A traced condition (comparisons rendered through the probe markers)."""
        rng = self.rng
        a, va = self.scalar(env)
        if rng.random() < 0.4:
            b, _ = self.scalar(env)
        else:
            b = repr(round(float(va) + float(rng.normal()) * (abs(float(va)) + 0.5) * 0.6, 2))
        c = cmp(a, self.pick([">", "<", ">=", "<="]), b)
        u = rng.random()
        if depth == 0 and u < 0.3:
            other = self.cond(env, 1)
            return f"({c} {self.pick(['and', 'or'])} {other})"
        if u < 0.4:
            return f"not {c}"
        return c

    # --- blocks (each returns its lines, indented relative to its level) ------------------
    def assign(self, env, name=None, kind="fi"):
        code, v = self.expr(env, kind)
        if code is None:
            return None
        name = name or self.new()
        env[name] = v
        return [f"{name} = {code}"]

    def write(self, env):
        """A write into an argument or an np.zeros array (a name that is not rebound)."""
        rng = self.rng
        tgts = [n for n in self.arrays(env, "f") if n.startswith("a") or n.startswith("z")]
        t = self.pick(tgts)
        if t is None:
            return None
        v = env[t]
        s, _ = self.scalar(env)
        opts = [f"{t} *= {round(float(rng.uniform(0.3, 0.9)), 2)}",
                f"{t}[...] = {t} * 0.5 + {s}"]
        if v.ndim:
            idx = ", ".join(str(int(rng.integers(d))) for d in v.shape)
            opts += [f"{t}[{idx}] = {s}", f"{t}[{idx}] += {s} * 0.5"]
        e, ve = self.expr(env, "f")
        if e is not None and np.broadcast_shapes(ve.shape, v.shape) == v.shape:
            opts.append(f"{t} += {e}")
        if env.get("_helpers_write", True):
            opts.append(f"h_write({t}, {s})")
        line = self.pick(opts)
        try:
            ns = {k: np.copy(x) if isinstance(x, np.ndarray) else x for k, x in env.items()}
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(line, {"np": np, "h_write": _h["h_write"]}, ns)
        except Exception:                        # noqa: BLE001
            return None
        return [line]

    def if_block(self, env, depth=0):
        """``if``/``elif``/``else`` assigning the same new names in every branch (or
        reassigning an existing one with its own type), writes and nested ifs."""
        rng = self.rng
        n_br = 2 if rng.random() < 0.7 else 3
        conds = [self.cond(env) for _ in range(n_br - 1)]
        first = dict(env)
        body0 = []
        for _ in range(int(rng.integers(1, 3))):
            ln = self.assign(first)
            if ln:
                body0 += ln
        new = [n for n in first if n not in env]
        if not new:
            return None
        if rng.random() < 0.3:
            w = self.write(first)
            body0 += w or []
        if depth == 0 and rng.random() < 0.25:
            inner = self.if_block(first, 1)
            if inner:
                body0 += inner
                new = [n for n in first if n not in env]
        branches = [body0]
        for _ in range(n_br - 1):
            br = dict(env)
            body = []
            for n in new:
                tgt = first[n]
                code = self.like(br, tgt)
                if code is None:
                    return None
                body.append(f"{n} = {code}")
                br[n] = tgt
            if rng.random() < 0.3:
                body += self.write(br) or []
            branches.append(body)
        if rng.random() < 0.3 and n_br == 2 and self.arrays(env, "f"):
            # an existing name reassigned in one branch only, with its own type
            x = self.pick(self.arrays(env, "f"))
            if not x.startswith("a") and not x.startswith("z"):
                branches[0].append(f"{x} = {x} * 0.5")
        lines = []
        for k, body in enumerate(branches):
            head = "if" if k == 0 else ("elif" if k < n_br - 1 else "else")
            lines.append(f"{head} {conds[k]}:" if head != "else" else "else:")
            lines += ["    " + ln for ln in body]
        env.update({n: first[n] for n in first})
        return lines

    def condexpr(self, env):
        a, va = self.expr(env)
        if a is None:
            return None
        b = self.like(env, va) or f"-({a})"
        c = self.cond(env)             # before ``name`` exists: ``or`` on traced values reads
        name = self.new()              # both sides, Python's may skip an unbound name
        env[name] = va
        return [f"{name} = {a} if {c} else {b}"]

    def maxmin(self, env):
        # no Python scalar operands: max(np.float64, float) is either, and a Python float
        # winner is weak later on (v * float32_array stays float32): a data-dependent dtype
        s1, v1 = self.scalar(env)
        if isinstance(v1, (int, float)):
            return None
        others = []
        for _ in range(8):
            s, v = self.scalar(env)
            if not isinstance(v, (int, float)) and np.asarray(v).dtype == \
                    np.asarray(v1).dtype and s != s1:
                others.append(s)
        if not others:
            return None
        k = 1 if self.rng.random() < 0.7 else min(2, len(others))
        name = self.new()
        fn = self.pick(["max", "min"])
        code = f"{fn}({s1}, {', '.join(others[:k])})"
        if self.rng.random() < 0.3:
            code = f"{fn}([{s1}, {', '.join(others[:k])}])"
        try:
            env[name] = np.asarray(self.ev(code, env))
        except Exception:                        # noqa: BLE001
            return None
        return [f"{name} = {code}"]

    def while_block(self, env):
        rng = self.rng
        self.loops += 1
        g = f"\x04{self.loops}\x05"
        src = self.pick(self.arrays(env, "f"))
        t = self.new()
        lines = [f"{t} = {src} * {round(float(rng.uniform(1, 3)), 2)}"]
        env[t] = env[src].copy()
        if rng.random() < 0.5:                  # a decreasing quantity
            lines += [f"while {g}" + cmp(f"np.abs({t}).max()", ">", "1e-3") + ":",
                      f"    {t} = {t} * {self.pick(['0.5', '0.7', '0.25'])}"]
            body_env = env
        else:                                   # a traced test and an int counter
            k = f"k{self.loops}"
            c = self.cond(env, 1)
            c = c.replace(src, t) if rng.random() < 0.6 else c
            lines += [f"{k} = 0", f"while {g}({c}) and {k} < {int(rng.integers(1, 6))}:",
                      f"    {t} = {self.pick([f'{t} * 0.8', f'np.tanh({t}) * 0.9', f'{t} - 0.3'])}",
                      f"    {k} += 1"]
            env[k] = 0
            body_env = env
        if rng.random() < 0.35:
            acc = self.new()
            # a Python float start for float64 (a weak carry); float32 starts typed, else a
            # loop that runs no iteration leaves a float64 where one that runs gives float32
            # in NumPy (a data-dependent dtype tracing cannot follow)
            init = "0.0" if env[t].dtype == np.float64 else f"np.{env[t].dtype}(0.0)"
            lines.insert(1, f"{acc} = {init}")
            lines.append(f"    {acc} = {acc} + {t}.sum()")
            # the float64 accumulator stays a Python float when the loop runs no iteration:
            # modelled as one, so no method (acc.sum()) is called on it (fuzz 9711 #399)
            env[acc] = float(env[t].sum()) if init == "0.0" else np.asarray(env[t].sum())
        if rng.random() < 0.35:
            w = self.write(body_env)
            if w:
                lines += ["    " + w[0]]
        return lines

    def early_return(self, pos_env, outputs):
        """``if c: return (...)`` with the types of the final outputs."""
        rets = []
        for o in outputs:
            v = self.final_env[o]
            same = [n for n, x in pos_env.items() if isinstance(x, np.ndarray) and
                    x.shape == v.shape and x.dtype == v.dtype and not n.startswith("k")]
            n = self.pick(same)
            if o.startswith("a") and o in pos_env:
                # an argument the final return gives back: the same object on both paths
                # (NumPy's identity there depends on the path, which tracing cannot follow)
                rets.append(o)
                continue
            rets.append(f"-{n}" if n is not None else f"np.full({v.shape}, 0.25, "
                        f"np.{v.dtype})")
        ret = "return (" + ", ".join(rets) + ",)"
        u = self.rng.random()
        if u < 0.6:
            return [f"if {self.cond(pos_env)}:", "    " + ret]
        return [f"if {self.cond(pos_env)}:", f"    if {self.cond(pos_env)}:", "        " + ret]

    def generate(self):
        rng = self.rng
        self.make_args()
        if rng.random() < 0.5:
            x = self.pick(self.arrays(self.env, "f"))
            z = "z0"
            self.stmts.append(gen.Stmt(z, [f"{z} = np.zeros({self.env[x].shape}, "
                                          f"np.{self.env[x].dtype})"], [], ["zeros"],
                                       self.env[x].shape, str(self.env[x].dtype)))
            self.env[z] = np.zeros_like(self.env[x])
        envs = []
        n_blocks = int(rng.integers(2, 7))
        tries = 0
        while len(self.stmts) < n_blocks + 1 and tries < 40:
            tries += 1
            env = dict(self.env)
            kind = rng.choice(["assign", "if", "if", "while", "condexpr", "maxmin", "write"],
                              p=[.12, .22, .2, .18, .1, .1, .08])
            lines = {"assign": self.assign, "if": self.if_block, "while": self.while_block,
                     "condexpr": self.condexpr, "maxmin": self.maxmin,
                     "write": self.write}[str(kind)](env)
            if not lines:
                continue
            cand = self.stmts + [gen.Stmt(self.new_target(env), lines, [], [str(kind)])]
            p = self.program(cand, self.outputs_of(env))
            if not valid(p):
                continue
            envs.append((len(self.stmts), dict(self.env)))
            self.stmts, self.env = cand, env
        self.final_env = self.env
        outs = self.outputs_of(self.env)
        p = self.program(self.stmts, outs)
        if envs and rng.random() < 0.45:
            pos, penv = envs[int(rng.integers(len(envs)))]
            er = self.early_return(penv, outs)
            stmts = self.stmts[:pos] + [gen.Stmt("_ret", er, [], ["return", "write"])] + \
                self.stmts[pos:]
            q = self.program(stmts, outs)
            if valid(q):
                p = q
        return p

    def new_target(self, env):
        new = [n for n in env if n not in self.env]
        return new[-1] if new else "_w"

    def outputs_of(self, env):
        names = [n for n, v in env.items() if isinstance(v, np.ndarray) and
                 v.dtype.kind in "fi" and not n.startswith("a") and not n.startswith("z")]
        rng = self.rng
        k = min(len(names), int(rng.integers(1, 3)))
        outs = list(names[-k:]) if names else []
        if not outs or rng.random() < 0.3:
            arr = [a.name for a in self.args if a.kind == "array"]
            outs.append(arr[0])
        return outs

    def program(self, stmts, outputs):
        p = gen.Program(self.seed, self.args, stmts, list(outputs), [], control=True,
                        prelude=PRELUDE)
        for s in p.stmts:
            if "write" not in s.tags and s.target != "_w":
                s.tags = list(s.tags)
        return p


_h = {"np": np}
exec(PRELUDE, _h)


def generate(seed: int) -> gen.Program:
    """The control-flow program for ``seed`` (deterministic)."""
    return CtlGen(seed).generate()
