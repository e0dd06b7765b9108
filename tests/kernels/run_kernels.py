"""Run the NPBench-like kernels (tests/kernels/npbench_like.py) unmodified under ``tracejit.trace``
and compare with NumPy: the returned values and the final contents of every argument.

    python tests/kernels/run_kernels.py                      # both backends, 2 workers
    python tests/kernels/run_kernels.py --backend llvm adi lu
    python tests/kernels/run_kernels.py --json /tmp/npb/results.json

Each (kernel, backend) runs in its own subprocess (a crash or a hang is reported, not fatal):
NumPy on copies of the inputs, then ``tj.trace(kernel, backend=...)`` on other copies (first call:
trace + compile + run, timed), then a second call on fresh copies (the cached path). Status:
PASS, WRONG (values, dtype or shape differ: the worst outcome), ERROR (exception: type, first
line of the message, the kernel-file line it was raised from), CRASH (the process died),
TIMEOUT. Float64/complex128 are compared with rtol 1e-10 (atol 1e-12 x the array's largest
magnitude), float32/complex64 with rtol 1e-5 (atol 1e-6 x), integers and bools exactly.
"""
import argparse
import copy
import inspect
import json
import os
import re
import subprocess
import sys
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

KERNEL_FILE = "npbench_like.py"


# ------------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------------

def _tolerances(dtype):
    if dtype.kind in "fc":
        if dtype in (np.float32, np.complex64):
            return 1e-5, 1e-6
        return 1e-10, 1e-12
    return 0.0, 0.0


def compare_leaf(got, ref):
    """None if ``got`` matches ``ref``, else a one-line description of the difference."""
    if ref is None or got is None:
        return None if got is ref else f"expected {ref!r}, got {type(got).__name__}"
    g, r = np.asarray(got), np.asarray(ref)
    if g.dtype == object or r.dtype == object:
        return f"non-numeric value: expected {type(ref).__name__}, got {type(got).__name__}"
    if g.shape != r.shape:
        return f"shape {g.shape} != NumPy's {r.shape}"
    if g.dtype != r.dtype:
        return f"dtype {g.dtype} != NumPy's {r.dtype}"
    if r.size == 0:
        return None
    rtol, atol_scale = _tolerances(r.dtype)
    if r.dtype.kind in "fc":
        finite = np.isfinite(r)
        scale = float(np.max(np.abs(r[finite]))) if finite.any() else 1.0
        close = np.isclose(g, r, rtol=rtol, atol=atol_scale * max(scale, 1e-300), equal_nan=True)
    else:
        close = g == r
    if np.all(close):
        return None
    wide = np.complex128 if r.dtype.kind == "c" else np.float64
    with np.errstate(all="ignore"):
        diff = np.abs(g.astype(wide) - r.astype(wide))
    diff = np.where(np.isnan(diff), np.inf, diff)   # a NaN on one side only counts as inf
    diff = np.where(close, 0, diff)
    worst = np.unravel_index(int(np.argmax(diff)), r.shape) if r.ndim else ()
    denom = abs(complex(r[worst])) if r.dtype.kind == "c" else abs(float(r[worst]))
    rel = float(diff[worst]) / denom if denom else float("inf")
    return (f"max abs diff {float(diff[worst]):.3g} (rel {rel:.3g}) at {tuple(map(int, worst))}:"
            f" got {g[worst]!r} expected {r[worst]!r}; {int(np.sum(~close))}/{r.size} elements"
            f" differ")


def _leaves(obj, path):
    if isinstance(obj, (tuple, list)):
        out = []
        for i, x in enumerate(obj):
            out += _leaves(x, f"{path}[{i}]")
        return out
    return [(path, obj)]


def compare_results(got_ret, ref_ret, got_args, ref_args, arg_names):
    """A list of (what, description) for every mismatch: returned values, then arguments."""
    problems = []
    if isinstance(ref_ret, (tuple, list)) != isinstance(got_ret, (tuple, list)) or (
            isinstance(ref_ret, (tuple, list)) and len(ref_ret) != len(got_ret)):
        problems.append(("return", f"structure: got {type(got_ret).__name__} "
                                   f"expected {type(ref_ret).__name__}"))
    else:
        for (path, r), (_, g) in zip(_leaves(ref_ret, "return"), _leaves(got_ret, "return")):
            d = compare_leaf(g, r)
            if d:
                problems.append((path, d))
    for name, r, g in zip(arg_names, ref_args, got_args):
        if isinstance(r, np.ndarray):
            d = compare_leaf(g, r)
            if d:
                problems.append((f"arg {name}", d))
    return problems


# ------------------------------------------------------------------------------------------------
# one (kernel, backend), in a worker process
# ------------------------------------------------------------------------------------------------

def user_line(exc):
    """'npbench_like.py:LINE in FUNC: source' of the innermost kernel-file frame, or ''."""
    found = ""
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename.endswith(KERNEL_FILE):
            found = f"{KERNEL_FILE}:{fr.lineno} in {fr.name}: {(fr.line or '').strip()}"
    return found


def run_one(name, backend):
    import tracejit as tj
    from tests.kernels.npbench_like import KERNELS

    fun, init = KERNELS[name]
    arg_names = list(inspect.signature(fun).parameters)
    base = init()
    res = {"kernel": name, "backend": backend}

    ref_args = copy.deepcopy(base)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref_ret = fun(*ref_args)

    traced = tj.trace(fun, backend=backend)
    got_args = copy.deepcopy(base)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got_ret = traced(*got_args)
    except Exception as e:  # noqa: BLE001
        res["time"] = time.perf_counter() - t0
        msg = str(e).strip().splitlines()
        res.update(status="ERROR", etype=type(e).__name__, message=msg[0] if msg else "",
                   where=user_line(e))
        return res
    res["time"] = time.perf_counter() - t0

    problems = compare_results(got_ret, ref_ret, got_args, ref_args, arg_names)
    # second call, fresh copies: the cached (possibly native) path
    got_args2 = copy.deepcopy(base)
    t1 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got_ret2 = traced(*got_args2)
        res["time2"] = time.perf_counter() - t1
        for what, d in compare_results(got_ret2, ref_ret, got_args2, ref_args, arg_names):
            problems.append((f"2nd call {what}", d))
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()
        problems.append(("2nd call", f"raised {type(e).__name__}: {msg[0] if msg else ''}"))
    try:
        res["traces"] = traced.cache_info().traces
    except Exception:  # noqa: BLE001
        pass
    if problems:
        res.update(status="WRONG", problems=problems)
    else:
        res["status"] = "PASS"
    return res


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------

def spawn(name, backend, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, backend]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"kernel": name, "backend": backend, "status": "TIMEOUT", "time": timeout}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    return {"kernel": name, "backend": backend, "status": "CRASH", "rc": p.returncode,
            "time": time.perf_counter() - t0, "message": " | ".join(tail)}


def cause(r):
    """The failure's cause: the message with numbers, names and shapes generalised."""
    if r["status"] == "WRONG":
        return "WRONG values"
    if r["status"] in ("CRASH", "TIMEOUT"):
        return r["status"]
    msg = r.get("message", "")
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\b[a-z]+\d*\[[^\]]*\]", "T[…]", msg)
    msg = re.sub(r"\(\s*[\d, ]*\)", "(…)", msg)
    msg = re.sub(r"\d+(\.\d+)?", "N", msg)
    return f"{r.get('etype', '?')}: {msg[:110]}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--backend", default="both", choices=["llvm", "interpret", "both"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--worker", nargs=2, metavar=("KERNEL", "BACKEND"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.worker:
        res = run_one(*a.worker)
        print("RESULT " + json.dumps(res, default=str), flush=True)
        os._exit(0)  # skip interpreter teardown (a crash there is not the kernel's)

    from tests.kernels.npbench_like import NAMES
    names = a.kernels or NAMES
    backends = ["llvm", "interpret"] if a.backend == "both" else [a.backend]
    jobs = [(n, b) for n in names for b in backends]
    with ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda nb: spawn(*nb, a.timeout), jobs))
    by = {(r["kernel"], r["backend"]): r for r in results}

    # summary table
    head = f"{'kernel':26s}" + "".join(f" {b:>10s} {'1st call':>9s}" for b in backends)
    print(head)
    print("-" * len(head))
    for n in names:
        row = f"{n:26s}"
        for b in backends:
            r = by[(n, b)]
            row += f" {r['status']:>10s} {r.get('time', float('nan')):8.2f}s"
        print(row)
    print()
    for b in backends:
        counts = {}
        for n in names:
            counts[by[(n, b)]["status"]] = counts.get(by[(n, b)]["status"], 0) + 1
        print(f"{b}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))

    # failures grouped by cause (WRONG first)
    for b in backends:
        groups = {}
        for n in names:
            r = by[(n, b)]
            if r["status"] != "PASS":
                groups.setdefault(cause(r), []).append(r)
        if not groups:
            continue
        print(f"\n=== failures, {b} backend ===")
        order = sorted(groups, key=lambda c: (c != "WRONG values", -len(groups[c]), c))
        for c in order:
            print(f"\n[{len(groups[c])}] {c}")
            for r in groups[c]:
                if r["status"] == "WRONG":
                    print(f"  {r['kernel']}:")
                    for what, d in r["problems"]:
                        print(f"      {what}: {d}")
                elif r["status"] == "ERROR":
                    print(f"  {r['kernel']}: {r['etype']}: {r['message'][:160]}")
                    if r.get("where"):
                        print(f"      at {r['where'][:160]}")
                else:
                    print(f"  {r['kernel']}: {r.get('message', '')[:200]}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
