"""Run many programs in a pool of long-lived worker processes; classify and save findings.

A worker that dies (segfault, abort) while a program is in flight produces a ``crash`` finding
for that program, one that exceeds the timeout a ``hang`` finding (it is killed); either way a
fresh worker replaces it. Workers are also recycled every RECYCLE jobs so that compiled code
accumulating in one process cannot change the outcome of later programs much.
"""
from __future__ import annotations

import collections
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time

from . import gen, mutate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECYCLE = 300


def program_seed(seed: int, index: int) -> int:
    return seed * 1_000_003 + index


class Worker:
    def __init__(self):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("TRACEJIT_CACHE_DIR", None)
        env.setdefault("TRACEJIT_MAX_WHILE_ITERATIONS", "100000")
        env.setdefault("TRACEJIT_BUG_REPORT_DIR", os.path.join(tempfile.gettempdir(),
                                                               "tracejit-fuzz-bugs"))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker"], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.job, self.started, self.done = None, None, 0

    def send(self, job):
        self.job, self.started = job, time.monotonic()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Pool:
    """``run(jobs)`` yields one result dict per job (in completion order)."""

    def __init__(self, jobs: int, timeout: float):
        self.n, self.timeout = jobs, timeout
        self.workers = [Worker() for _ in range(jobs)]

    def run(self, jobs):
        pending = collections.deque(jobs)
        idle = list(self.workers)
        busy = {}
        while pending or busy:
            while idle and pending:
                w = idle.pop()
                w.send(pending.popleft())
                busy[w.proc.stdout.fileno()] = w
            ready, _, _ = select.select(list(busy), [], [], 1.0)
            for fd in ready:
                w = busy[fd]
                line = w.proc.stdout.readline()
                if not line:                                    # the worker died
                    del busy[fd]
                    yield self._lost(w, "crash", f"worker died (exit code "
                                     f"{w.proc.wait()})")
                    idle.append(self._replace(w))
                    continue
                msg = json.loads(line)          # exactly one line per job: no buffering
                del busy[fd]
                w.done += 1
                yield dict(msg, job=w.job)
                idle.append(self._replace(w) if w.done >= RECYCLE else w)
            now = time.monotonic()
            for fd, w in list(busy.items()):
                if now - w.started > self.timeout:
                    del busy[fd]
                    w.kill()
                    yield self._lost(w, "hang", f"no result after {self.timeout:.0f} s")
                    idle.append(self._replace(w))

    def _lost(self, w, cls, msg):
        job = w.job
        prog = gen.Program.from_dict(job["program"]) if "program" in job else \
            mutate.make_program(job["seed"], job.get("kind", "plain"))
        return {"id": job["id"], "job": job, "program": prog.to_dict(), "unsupported": [],
                "findings": [{"cls": cls, "label": "worker", "msg": msg, "sig": cls}]}

    def _replace(self, w):
        w.kill()
        nw = Worker()
        self.workers[self.workers.index(w)] = nw
        return nw

    def close(self):
        for w in self.workers:
            try:
                w.proc.stdin.close()
            except OSError:
                pass
            w.kill()


def campaign(n, seed, jobs, save=None, timeout=60.0, start=0, minimize_findings=False,
             quiet=False, kind="plain"):
    """Run programs ``start .. start+n-1`` of ``seed`` (``kind``: plain, mutating or mixed, see
    ``mutate.make_program``); print a summary; return the records."""
    from .report import save_finding, summary
    t0 = time.monotonic()
    pool = Pool(jobs, timeout)
    records = []
    try:
        job_list = [{"id": i, "seed": program_seed(seed, i), "index": i, "kind": kind}
                    for i in range(start, start + n)]
        for k, res in enumerate(pool.run(job_list), 1):
            res["index"], res["seed_arg"] = res["job"].get("index"), seed
            records.append(res)
            for f in res["findings"]:
                if not quiet:
                    print(f"[{res['index']}] {f['cls']}: {f['label']}: {f['sig'][:120]}",
                          flush=True)
                if save:
                    path = save_finding(save, seed, res["index"], res["program"], f)
                    f["file"] = path
            if not quiet and k % 200 == 0:
                print(f"... {k}/{n} programs, {time.monotonic() - t0:.0f} s", flush=True)
    finally:
        pool.close()
    elapsed = time.monotonic() - t0
    print(summary(records, elapsed, jobs))
    if minimize_findings and save:
        from .minimize import minimize_file
        seen = set()
        for r in records:
            for f in r["findings"]:
                # the same failure on both backends of a mutating program: shrink it once
                key = (f["cls"], re.sub(r"^(interpret|llvm): ", "", f["sig"]))
                if key in seen or "file" not in f:
                    continue            # one minimisation per root-cause signature
                seen.add(key)
                out = minimize_file(f["file"], timeout=timeout)
                print(f"minimised {f['file']} -> {out}")
    return records
