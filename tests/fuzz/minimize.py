"""Delta debugging of a finding: shrink the program while the same failure persists.

Reductions, tried greedily until none applies: drop transform layers; drop a statement
(substituting its uses with an earlier variable or argument of the same shape and dtype, or
deleting it when nothing uses it); drop outputs; float32 -> float64, complex64 -> complex128;
shrink argument dims (each dimension size shared by several arguments together first, then
each argument's own: to 1, 2, half, n-1, repeatedly); drop the ``big`` flag; make views
contiguous. Every candidate must still run under plain NumPy (``retype`` re-derives each
statement's shape and dtype), and is then re-checked by the oracles in a worker process (a
crash or hang must not take the minimiser down) -- "the same failure" means the same class and
case and, for internal errors, the same exception signature. The saved file carries the
message of the last failing run (its shapes), not the original's.
"""
from __future__ import annotations

import copy
import dataclasses
import re
import runpy
import warnings

import numpy as np

from . import gen


def retype(prog: gen.Program) -> bool:
    """Re-evaluate the statements with NumPy, updating shapes/dtypes; False if invalid (for a
    statement tagged ``raises``, if it no longer raises)."""
    if prog.mutating:
        return _retype_mutating(prog)
    env = {a.name: gen.make_arg(a, prog.seed) for a in prog.args}
    ns = dict(gen.np_namespace(), **env)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            for s in prog.stmts:
                exec(gen.to_numpy_source("\n".join(s.lines)), ns)
                v = np.asarray(ns[s.target])
                s.shape, s.dtype = v.shape, str(v.dtype)
                if s.dtype not in gen.DTYPES:
                    return False
        for o in prog.outputs:
            if o not in ns:
                return False
    except Exception:
        return False
    return True


def _retype_mutating(prog: gen.Program) -> bool:
    from .mutate import run_numpy
    ns = {a.name: None for a in prog.args}
    for k, s in enumerate(prog.stmts):
        try:
            ns = run_numpy(prog.stmts[:k + 1], prog.args, prog.seed)
        except Exception:                        # noqa: BLE001 - NumPy decides
            return "raises" in s.tags and k == len(prog.stmts) - 1
        if "raises" in s.tags or s.target not in ns:
            return False
        v = np.asarray(ns[s.target])
        s.shape, s.dtype = v.shape, str(v.dtype)
        if s.dtype not in gen.DTYPES:
            return False
    return all(o in ns for o in prog.outputs)


def _types(prog):
    t = {a.name: (tuple(a.shape), a.dtype) for a in prog.args if a.kind == "array"}
    t.update({s.target: (tuple(s.shape), s.dtype) for s in prog.stmts})
    return t


def _subst(lines, old, new):
    return [re.sub(rf"\b{old}\b", new, ln) for ln in lines]


def _drop_stmt(prog, k):
    """Candidates with statement ``k`` removed."""
    s = prog.stmts[k]
    if "write" in s.tags:                    # defines nothing: delete it
        p = copy.deepcopy(prog)
        del p.stmts[k]
        return [p]
    later = prog.stmts[k + 1:]
    used = any(re.search(rf"\b{s.target}\b", ln) for t in later for ln in t.lines)
    types = _types(prog)
    earlier = [a.name for a in prog.args] + [t.target for t in prog.stmts[:k]]
    repl = [n for n in earlier if types.get(n) == (tuple(s.shape), s.dtype)]
    out = []
    for r in repl[::-1][:2] + ([None] if not used else []):
        p = copy.deepcopy(prog)
        del p.stmts[k]
        if r is not None:
            for t in p.stmts[k:]:
                t.lines = _subst(t.lines, s.target, r)
                t.target = r if t.target == s.target else t.target     # a write into it
            p.outputs = [r if o == s.target else o for o in p.outputs]
        else:
            p.outputs = [o for o in p.outputs if o != s.target]
        p.outputs = list(dict.fromkeys(p.outputs))
        if p.outputs or p.mutating:
            out.append(p)
    return out


def _shrunk(n):
    """Smaller sizes to try for a dimension of length n: 1, 2, halves, n-1 (n >= 1 only: a
    zero-size dimension is its own smallest case)."""
    return sorted({1, 2, n // 2, n - 1} - {n, 0}) if n > 1 else []


def _with_dims(prog, old, new):
    """``prog`` with every argument dimension of length ``old`` set to ``new`` (arguments that
    broadcast against each other shrink together)."""
    p = copy.deepcopy(prog)
    for a in p.args:
        a.shape = tuple(new if d == old else d for d in a.shape)
    return p


def candidates(prog: gen.Program):
    """Smaller variants of ``prog``, most aggressive first."""
    if prog.big:
        yield dataclasses.replace(copy.deepcopy(prog), big=False)
    dims = sorted({d for a in prog.args for d in a.shape}, reverse=True)
    for n in dims:                 # a size shared by all arguments first: halves, then to 1, 2
        for m in sorted(_shrunk(n), key=lambda m: (m != n // 2, m)):
            yield _with_dims(prog, n, m)
    if prog.transforms:
        yield dataclasses.replace(copy.deepcopy(prog), transforms=[])
        if len(prog.transforms) > 1:
            yield dataclasses.replace(copy.deepcopy(prog), transforms=prog.transforms[:1])
    for k in range(len(prog.stmts) - 1, -1, -1):
        yield from _drop_stmt(prog, k)
    if prog.mutating and prog.outputs:          # the arguments may show the failure alone
        yield dataclasses.replace(copy.deepcopy(prog), outputs=[])
    for o in prog.outputs:
        if len(prog.outputs) > 1:
            yield dataclasses.replace(copy.deepcopy(prog),
                                      outputs=[x for x in prog.outputs if x != o])
    used = {m for s in prog.stmts for ln in s.lines for m in re.findall(r"\ba\d+\b", ln)}
    used |= set(prog.outputs)
    for i, a in enumerate(prog.args):
        if a.name not in used and len(prog.args) > 1:
            p = copy.deepcopy(prog)
            del p.args[i]
            yield p
        wider = {"float32": "float64", "complex64": "complex128"}.get(a.dtype)
        if wider:
            p = copy.deepcopy(prog)
            p.args[i].dtype = wider
            yield p
        for d, n in enumerate(a.shape):
            for m in _shrunk(n):
                p = copy.deepcopy(prog)
                p.args[i].shape = tuple(a.shape[:d]) + (m,) + tuple(a.shape[d + 1:])
                yield p
        if a.layout != "c":
            p = copy.deepcopy(prog)
            p.args[i].layout = "c"
            yield p


def _case(label):
    """The case of a finding's label: ``vmap_axes(in_axes=(0, -1), out_axes=0): call 1`` ->
    ``vmap_axes`` (the axes change when arguments are dropped; the case stays)."""
    return label.split(":")[0].split("(")[0].strip()


def same_failure(result, finding):
    """The finding record of ``result`` that is the same failure as ``finding``, or None."""
    for f in result.get("findings", []):
        if f["cls"] != finding["cls"]:
            continue
        if finding["cls"] in ("crash", "hang"):
            return f
        if _case(f["label"]) != _case(finding["label"]):
            continue
        if finding["cls"] == "internal" and f["sig"] != finding["sig"]:
            continue
        return f
    return None


def minimize(prog: gen.Program, finding, timeout=60.0, budget=300, log=print):
    """``(program, finding)``: the smallest variant of ``prog`` found that still shows
    ``finding``, and the finding as that variant reports it (its message names the new
    shapes and values)."""
    from .runner import Pool
    pool = Pool(1, timeout)
    runs = 0
    # threads/tiers only where the finding needs them, decided once: dropping the big flag
    # must not switch the check off
    tt = finding["cls"] == "nondeterminism" or "thread" in finding["label"] or \
        "tier" in finding["label"] or prog.big
    latest = dict(finding)

    def fails(p):
        nonlocal runs, latest
        runs += 1
        res = next(iter(pool.run([{"id": runs, "program": p.to_dict(),
                                   "opts": {"threads_tiers": tt}}])))
        f = same_failure(res, finding)
        if f is not None:
            latest = dict(finding, msg=f["msg"], label=f["label"])
        return f is not None

    try:
        progress = True
        while progress and runs < budget:
            progress = False
            for cand in candidates(prog):
                if runs >= budget:
                    break
                if not retype(cand):
                    continue
                if fails(cand):
                    prog, progress = cand, True
                    log(f"  [{runs}] {len(prog.stmts)} statements, args "
                        f"{[(a.dtype, a.shape, a.layout) for a in prog.args]}, "
                        f"transforms {prog.transforms}")
                    break
    finally:
        pool.close()
    return prog, latest


def minimize_file(path, timeout=60.0, budget=300, log=print) -> str:
    """Minimise the finding saved in ``path``; writes ``<path minus .py>_min.py``."""
    from .report import render
    ns = runpy.run_path(path, run_name="fuzz_finding")
    prog, finding = gen.Program.from_dict(ns["PROGRAM"]), dict(ns["FINDING"])
    log(f"minimising {path}: {finding['cls']} in {finding['label']}")
    small, latest = minimize(prog, finding, timeout, budget, log)
    out = path[:-3] + "_min.py" if not path.endswith("_min.py") else path
    with open(out, "w") as fh:
        fh.write(render(small, latest))
    return out
