"""Internal failures surface as ``CompilerError``, with the offending graph saved for a report.

``compiler_stage(stage, graph)`` wraps one stage of the pipeline. An exception raised inside it
that is not the user's (tracejit's own user-facing errors, NotImplementedError for features that
are not there, MemoryError, KeyboardInterrupt, and anything raised through a frame of the user's
code, such as a custom_jvp rule, pass through unchanged) is a bug in tracejit:
it becomes a ``CompilerError`` naming the stage, the primitive of the equation being processed
(found as the innermost ``eqn`` or ``e`` local on the traceback, the names the transforms and
emitters use) and the file under ``config.bug_report_dir`` (default: the temp dir's ``tracejit-bugs``)
where the graph and the traceback are written. Nested stages report once, at the innermost.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import traceback

from .errors import CompilerError, TracerError

_PASS_THROUGH = (TracerError, CompilerError, NotImplementedError, MemoryError, KeyboardInterrupt,
                 SystemExit)


@contextlib.contextmanager
def compiler_stage(stage: str, graph=None):
    """Turn an internal exception raised in ``stage`` (while processing ``graph``) into a
    ``CompilerError`` with a saved report; user errors pass through."""
    try:
        yield
    except _PASS_THROUGH:
        raise
    except Exception as exc:             # noqa: BLE001 (every other exception is a bug of ours)
        if _through_user_code(exc.__traceback__):
            raise                        # a user's rule (custom_jvp, a body) raised it
        raise _report(stage, graph, exc) from exc


def _through_user_code(tb) -> bool:
    """Whether a frame of the traceback is the user's code (outside tracejit and NumPy)."""
    from .errors import _is_internal
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def _failing_eqn(tb):
    """The innermost equation a frame of the traceback was working on (a local named ``eqn`` or
    ``e``, or a step's ``eqn``), or None."""
    from .ir import Eqn
    found = None
    while tb is not None:
        local = tb.tb_frame.f_locals
        for cand in (local.get("eqn"), local.get("e"), getattr(local.get("step"), "eqn", None)):
            if isinstance(cand, Eqn):
                found = cand
                break
        tb = tb.tb_next
    return found


def _report(stage, graph, exc) -> CompilerError:
    eqn = _failing_eqn(exc.__traceback__)
    where = ""
    if eqn is not None:
        where = f" at primitive '{eqn.prim.name}'"
        if eqn.source:
            where += f" (traced from {eqn.source})"
    try:
        text = str(graph) if graph is not None else "(no graph)"
    except Exception as print_exc:       # noqa: BLE001 (a graph that cannot print is reported)
        text = f"(the graph could not be printed: {print_exc!r})"
    body = (f"tracejit internal error in {stage}{where}\n\n{type(exc).__name__}: {exc}\n\n"
            f"graph:\n{text}\n\ntraceback:\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    path = _save(body)
    saved = f"the graph and traceback are in {path}" if path else "the report could not be saved"
    return CompilerError(f"internal compiler error in {stage}{where}: {type(exc).__name__}: "
                         f"{exc}. This is a bug in tracejit, not in your code; {saved} — please "
                         f"attach it to a bug report.")


def _save(body: str) -> str | None:
    from .config import config
    folder = config.bug_report_dir or os.path.join(tempfile.gettempdir(), "tracejit-bugs")
    name = hashlib.blake2b(body.encode(), digest_size=8).hexdigest() + ".txt"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(body)
        return path
    except OSError:
        return None
