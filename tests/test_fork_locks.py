"""Front-end locks and os.fork: a child forked while another thread holds one starts usable.

(The backend's locks are checked in test_reliability.py; these are the ones outside it.)"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_front_end_lock_has_a_fork_handler():
    missing = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "tracejit")):
        if os.sep + "backend" in dirpath:
            continue
        for name in files:
            if name.endswith(".py"):
                text = open(os.path.join(dirpath, name)).read()
                if re.search(r"threading\.R?Lock\(\)", text) and "forksafe.register" not in text \
                        and name != "forksafe.py":
                    missing.append(name)
    assert not missing, f"locks not registered with tracejit.forksafe in {missing}"


CHILDREN = r"""
import os, signal, threading, time
import tracejit as tj
from tracejit import funkey
from tracejit.numpy import intercept
stop = False
memo = funkey.Memo()

def churn():                         # holds each lock often and briefly
    while not stop:
        intercept._enter(); intercept._exit()
        memo.get(churn, (), lambda: 1)

threading.Thread(target=churn, daemon=True).start()
time.sleep(0.05)
bad = 0
for _ in range(40):
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        intercept._enter(); intercept._exit()
        memo.get(churn, (), lambda: 1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    bad += os.waitstatus_to_exitcode(status) != 0
stop = True
print(bad)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_holds_front_end_locks():
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILDREN)], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "0", out.stdout      # a hung child dies of its alarm
