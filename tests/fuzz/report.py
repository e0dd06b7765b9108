"""Summaries and standalone reproducer files.

A finding file is plain Python: the program source, the argument specs with the input generator
(``make_arg``, copied from gen.py), the finding, and a pytest function. It puts the absolute path
of the repository that produced it on ``sys.path`` (for tracejit, and for ``tests.fuzz.rules``
whose ``fz.*`` functions programs may call), so ``python FILE`` works from any directory. For
findings in ``f`` itself the test asserts llvm == interpreter for the same call sequence the
oracle used; for transform findings it re-runs the fuzz oracles of that repository.
``PROGRAM`` holds the program as data for
``python -m tests.fuzz --minimize FILE``.
"""
from __future__ import annotations

import collections
import inspect
import os
import pprint

from . import gen

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# read once, at import: inspect reads the file again on each call, with the line numbers of the
# loaded code, so an edit of gen.py during a campaign would copy a garbled fragment
_MAKE_ARG_SOURCE = inspect.getsource(gen.make_arg)


def summary(records, elapsed, jobs) -> str:
    counts = collections.Counter()
    sigs = collections.defaultdict(list)
    unsupported = collections.Counter()
    refusals, expected = collections.defaultdict(list), collections.defaultdict(list)
    fuzzer_errors = collections.Counter()
    for r in records:
        for f in r["findings"]:
            counts[f["cls"]] += 1
            sigs[(f["cls"], f["sig"])].append(r["index"])
        for u in r.get("unsupported", []):
            unsupported[u[:140]] += 1
        for key, where in (("refusals", refusals), ("expected", expected)):
            for u in r.get(key, []):
                where[u[:160]].append(r["index"])
        if r.get("fuzzer_error"):
            fuzzer_errors[r["fuzzer_error"][:140]] += 1
    n = len(records)
    bad = sum(1 for r in records if r["findings"])
    lines = [f"{n} programs in {elapsed:.1f} s ({n / max(elapsed, 1e-9):.1f} programs/s with "
             f"{jobs} jobs); {bad} programs with findings",
             "findings per class: " + (", ".join(f"{k}={v}" for k, v in counts.most_common())
                                       or "none")]
    lines.append("by signature (class, signature: count, first program indices):")
    for (cls, sig), idx in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(idx):4d}  {cls}: {sig[:150]}  e.g. {idx[:5]}")
    if unsupported:
        lines.append("unsupported (not findings; the generator should avoid these):")
        lines += [f"  {v:4d}  {k}" for k, v in unsupported.most_common(25)]
    for what, where in (("refusals (mutating programs NumPy runs and tracejit refuses with a "
                         "clear error; candidate missing features)", refusals),
                        ("expected refusals (documented)", expected)):
        if where:
            lines.append(f"{what}: {sum(map(len, where.values()))} programs")
            lines += [f"  {len(v):4d}  {k}  e.g. {v[:5]}"
                      for k, v in sorted(where.items(), key=lambda kv: -len(kv[1]))[:40]]
    if fuzzer_errors:
        lines.append("fuzzer errors (bugs in tests/fuzz):")
        lines += [f"  {v:4d}  {k}" for k, v in fuzzer_errors.most_common(10)]
    return "\n".join(lines)


def _slug(s):
    return "".join(c if c.isalnum() else "_" for c in s)[:40].strip("_")


def save_finding(directory, seed, index, program, finding) -> str:
    os.makedirs(directory, exist_ok=True)
    prog = gen.Program.from_dict(program)
    name = f"fuzz_{seed}_{index}_{_slug(finding['cls'])}_{_slug(finding['label'])}.py"
    path = os.path.join(directory, name)
    with open(path, "w") as fh:
        fh.write(render(prog, finding, seed=seed, index=index))
    return path


_CALLS = '''
def _leaves(x):
    return [v for i in x for v in _leaves(i)] if isinstance(x, (tuple, list)) else [np.asarray(x)]


def _assert_same(got, exp, tol):
    for g, e in zip(_leaves(got), _leaves(exp), strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.dtype, g.shape, e.dtype, e.shape)
        if g.dtype.kind in "fc":
            scale = max([1.0] + [float(np.max(np.abs(e[np.isfinite(e)]), initial=0))])
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol * scale, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, e)
'''


def render(prog: gen.Program, finding, seed=None, index=None) -> str:
    """A standalone reproducer for ``finding`` of ``prog``."""
    tol = "1e-4" if any(a.dtype in ("float32", "complex64") for a in prog.args) or any(
        "float32" in ln or "complex64" in ln for s in prog.stmts for ln in s.lines) else "1e-9"
    where = f" (seed {seed}, index {index})" if seed is not None else ""
    msg = finding["msg"].strip().replace('"""', "'''")
    args = ",\n        ".join(
        f"Arg(name={a.name!r}, kind={a.kind!r}, dtype={a.dtype!r}, shape={tuple(a.shape)!r}, "
        f"layout={a.layout!r})" for a in prog.args)
    base = finding["label"].split(":")[0] == "f" or finding["cls"] in ("crash", "hang")
    test_name = f"test_fuzz_{seed}_{index}" if seed is not None else "test_fuzz_reproducer"
    out = [f'"""tracejit fuzz finding: {finding["cls"]} in {finding["label"]}{where}.',
           f"transforms: {prog.transforms or 'none'}; signature: {finding['sig']}", "",
           msg, "",
           "Re-check all oracles / shrink: python -m tests.fuzz --minimize THIS_FILE",
           '"""', "import os", "import sys", "from types import SimpleNamespace as Arg", "",
           "import numpy as np", "",
           "# the checkout that produced this finding, so `python THIS_FILE` works from anywhere",
           f"REPO = {ROOT!r}",
           "if os.path.isdir(REPO) and REPO not in sys.path:",
           "    sys.path.insert(0, REPO)",
           "import tracejit as tj  # noqa: E402",
           "from tests.fuzz.rules import TRACED as fz  # noqa: E402,F401  (fz.* in programs)",
           "", f"SEED = {prog.seed}", f"NARROW_INTS = {gen.NARROW_INTS!r}  # make_arg reads it",
           f"ARGS = [\n        {args}]", "", "", _MAKE_ARG_SOURCE, "",
           prog.source(), _CALLS, "",
           f"def {test_name}():"]
    if prog.mutating:
        out += _mutating_lines(tol)
    elif base:
        out += ["    fl, fi = tj.jit(f, backend=\"llvm\"), tj.jit(f, backend=\"interpret\")",
                "    for call in (0, 1):                   # first inputs, then new values",
                "        args = [make_arg(a, SEED, call) for a in ARGS]",
                "        saved = [np.array(a, copy=True) for a in args]",
                "        want = fi(*args)",
                "        held = []",
                "        for _ in range(3):                # the 3rd call is the native entry",
                "            got = fl(*args)",
                f"            _assert_same(got, want, {tol})",
                "            held.append((got, [np.array(g, copy=True) for g in "
                "_leaves(got)]))",
                "        for a, s in zip(args, saved):",
                "            np.testing.assert_array_equal(a, s)    # inputs never mutated",
                "        for got, snap in held:",
                "            for g, s in zip(_leaves(got), snap):",
                "                np.testing.assert_array_equal(g, s)    # held results kept"]
        if finding["cls"] not in ("mismatch", "internal", "crash", "hang", "input-mutation",
                                  "held-corruption"):
            out += _oracle_lines(finding)
    else:
        out += _oracle_lines(finding)
    out += ["", "", f"PROGRAM = {pprint.pformat(prog.to_dict(), width=99, compact=True)}", "",
            f"FINDING = {pprint.pformat(finding, width=99)}", "", "",
            'if __name__ == "__main__":', f"    {test_name}()", "    print('passed')", ""]
    return "\n".join(out)


def _mutating_lines(tol):
    """The test of a mutating program: NumPy (``f`` itself) on fresh arguments is the oracle
    for the results and the arguments' final contents; where NumPy raises, tracejit must."""
    return [
        "    for backend in (\"interpret\", \"llvm\"):",
        "        fun = tj.jit(f, backend=backend)",
        "        for call, n_calls in ((0, 3), (1, 2)):   # first inputs, then new values",
        "            for _ in range(n_calls):",
        "                want_args = [make_arg(a, SEED, call) for a in ARGS]",
        "                got_args = [make_arg(a, SEED, call) for a in ARGS]",
        "                try:",
        "                    with np.errstate(all=\"ignore\"):",
        "                        want = f(*want_args)",
        "                except Exception as e:  # noqa: BLE001",
        "                    try:",
        "                        got = fun(*got_args)",
        "                    except Exception:  # noqa: BLE001",
        "                        continue",
        "                    raise AssertionError(f\"NumPy raises {e!r}, tracejit returns "
        "{got!r}\")",
        "                got = fun(*got_args)",
        f"                _assert_same(got, want, {tol})",
        "                _assert_same([a for a in got_args if isinstance(a, np.ndarray)],",
        "                             [a for a in want_args if isinstance(a, np.ndarray)], "
        f"{tol})"]


def _oracle_lines(finding):
    return ["    # transforms, threads/tiers: the fuzz oracles of the repository (REPO above)",
            "    from tests.fuzz import gen, oracle",
            "    result = oracle.check_program(gen.Program.from_dict(PROGRAM))",
            "    assert not result['findings'], result['findings']"]
