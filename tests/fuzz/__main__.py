"""``python -m tests.fuzz``: run a fuzz campaign or minimise a saved finding (see README.md)."""
from __future__ import annotations

import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    p.add_argument("--n", type=int, default=200, help="number of programs")
    p.add_argument("--seed", type=int, default=0, help="program i uses seed*1_000_003+i")
    p.add_argument("--start", type=int, default=0, help="first program index")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--save", default=None, help="directory for finding files")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per program")
    p.add_argument("--minimize", metavar="FILE", help="minimise a saved finding file")
    p.add_argument("--minimize-findings", action="store_true",
                   help="after the run, minimise one finding per signature")
    p.add_argument("--show", type=int, metavar="INDEX", help="print program INDEX of --seed")
    p.add_argument("--programs", choices=["plain", "mutating", "control", "selecting", "mixed"],
                   default="plain",
                   help="plain programs, mutating ones (checked against NumPy), control-flow "
                   "ones (gen_control.py, against NumPy), selecting (selections, traced "
                   "slices, loops carrying arrays: selecting.py, against NumPy), or mixed "
                   "(10%% control, the rest "
                   "half each)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.show is not None:
        from .mutate import make_program
        from .runner import program_seed
        prog = make_program(program_seed(a.seed, a.show), a.programs)
        print(f"# args: {prog.args}\n# transforms: {prog.transforms}\n{prog.source()}")
        return 0
    if a.minimize:
        from .minimize import minimize_file
        print(minimize_file(a.minimize, timeout=a.timeout))
        return 0
    from .runner import campaign
    records = campaign(a.n, a.seed, a.jobs, a.save, a.timeout, a.start, a.minimize_findings,
                       a.quiet, a.programs)
    return 1 if any(r["findings"] for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
