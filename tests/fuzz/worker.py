"""A long-lived fuzz worker: reads one JSON job per line on stdin, writes one JSON result per
line on the protocol pipe. Run by ``runner.Pool`` as ``python -m tests.fuzz.worker``.

The protocol pipe is a duplicate of the original stdout; fd 1 itself is pointed at stderr so
that anything printed by tracejit or by native code cannot corrupt the protocol.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings


def main():
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    warnings.simplefilter("ignore")
    import tracejit as tj
    tj.config.cache_dir = None                   # runs independent of any disk cache
    tj.config.max_while_iterations = 100_000     # a runaway loop becomes an error, not a hang
    from . import gen, mutate, oracle
    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.perf_counter()
        if "program" in job:
            prog = gen.Program.from_dict(job["program"])
        else:
            prog = mutate.make_program(job["seed"], job.get("kind", "plain"))
        try:
            result = oracle.check_program(prog, job.get("opts"))
        except Exception as e:                   # noqa: BLE001 - a fuzzer bug, not a finding
            result = {"findings": [], "unsupported": [], "fuzzer_error": repr(e)}
        result["time"] = time.perf_counter() - t0
        result["id"] = job["id"]
        if result["findings"] or "program" in job:
            result["program"] = prog.to_dict()
        proto.write(json.dumps(result, default=str) + "\n")


if __name__ == "__main__":
    main()
