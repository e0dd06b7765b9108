"""Split the text of an LLVM module into parts that compile separately (in parallel, each cached
under its own key) and link into one engine.

Invariants:
- every function definition goes to exactly one part, in text order, in contiguous runs of
  about equal size (lines: code generation time is about linear in them once functions are
  bounded, ``emit/segment.py``); a part's text is the module's header, its functions, the
  module's external declarations and metadata, and what it needs of the others: a function
  defined in another part is declared (``declare`` with the same signature and attributes), and
  the module's global variables are defined in the first part and declared ``external`` in the
  others;
- a function or global referenced from another part than its own loses ``internal``/``private``
  linkage (the parts are loaded into an engine of their own, ``jit.Code``, where the module's
  names are unique); nothing else of the text changes, so the parts compute what the module
  computes (only inlining across parts is lost, and the functions worth splitting are
  ``noinline`` already);
- the split is a function of the text alone (deterministic): the same module gives the same
  parts, hence the same cache keys;
- a module this does not understand (a global of an aggregate type, an alias, a function body
  that does not end in a line ``}``) is not split (``split`` returns None).
"""
from __future__ import annotations

import re
from typing import NamedTuple

_DEFINE = re.compile(r'^define\s+(.*?)@("(?:[^"]+)"|[-\w.$]+)\(')
_GLOBAL = re.compile(r'^@("(?:[^"]+)"|[-\w.$]+)\s*=\s*((?:(?:internal|private|dso_local|'
                     r'unnamed_addr|local_unnamed_addr|hidden)\s+)*)(global|constant)\s+'
                     r'(ptr|i\d+|half|float|double)\s')
_EXTERNAL_GLOBAL = re.compile(r'^@("(?:[^"]+)"|[-\w.$]+)\s*=\s*external\s')
_REF = re.compile(r'@("(?:[^"]+)"|[-\w.$]+)')
_LOCAL_LINKAGE = re.compile(r'\b(internal|private)\s+')


class Part(NamedTuple):
    """One part: its module text and the names of the functions it defines."""
    text: str
    functions: tuple


class _Function(NamedTuple):
    name: str
    head: str           # the ``define`` line
    lines: list         # the whole definition, head included


def _name(token: str) -> str:
    return token[1:-1] if token.startswith('"') else token


def _parse(text: str):
    """(header, functions, globals {name: (line, linkage, kind, type)}, declarations, trailer)
    or None when the module has something ``split`` does not handle."""
    header, functions, globals_, decls, trailer = [], [], {}, [], []
    lines = text.splitlines()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("define"):
            m = _DEFINE.match(line)
            if m is None:
                return None
            j = i + 1
            while j < n and lines[j] != "}":
                j += 1
            if j == n:
                return None
            functions.append(_Function(_name(m.group(2)), line, lines[i:j + 1]))
            i = j + 1
            continue
        if line.startswith("declare"):
            decls.append(line)
        elif line.startswith("@"):
            if _EXTERNAL_GLOBAL.match(line):
                decls.append(line)
            else:
                m = _GLOBAL.match(line)
                if m is None:
                    return None
                globals_[_name(m.group(1))] = (line, m.group(2), m.group(3), m.group(4))
        elif line.startswith(("attributes", "!")):
            trailer.append(line)
        elif line.startswith(("target", "source_filename", ";")) or not line.strip():
            if line.strip() and not functions:
                header.append(line)
        else:
            return None
        i += 1
    return header, functions, globals_, decls, trailer


def _refs(fn: _Function) -> set:
    return {_name(t) for line in fn.lines for t in _REF.findall(line)} - {fn.name}


def _declaration(head: str) -> str:
    """The ``declare`` line of a function from its ``define`` line (local linkage dropped)."""
    rest = head[len("define"):]
    return "declare" + _LOCAL_LINKAGE.sub("", rest, count=1).rstrip().rstrip("{").rstrip()


def line_count(text: str) -> int:
    """The size measure of parts: lines of the module text."""
    return text.count("\n") + 1


def split(text: str, parts: int) -> list | None:
    """The module ``text`` as up to ``parts`` Parts of about equal size, or None when it cannot
    be split (fewer than two functions, or a construct this module does not handle)."""
    parsed = _parse(text)
    if parsed is None:
        return None
    header, functions, globals_, decls, trailer = parsed
    if len(functions) < 2 or parts < 2:
        return None
    groups = _groups(functions, parts)
    home = {fn.name: k for k, group in enumerate(groups) for fn in group}
    refs = [set().union(*(_refs(fn) for fn in group)) for group in groups]
    # names some other part refers to: they must be visible across parts
    shared = {name for k, r in enumerate(refs) for name in r
              if home.get(name, 0 if name in globals_ else k) != k}
    heads = {fn.name: fn.head for group in groups for fn in group}
    out = []
    for k, group in enumerate(groups):
        body = list(header)
        for name, (line, linkage, kind, ty) in globals_.items():
            if k == 0:
                body.append(_LOCAL_LINKAGE.sub("", line, count=1) if name in shared else line)
            elif name in refs[k]:
                body.append(f'@"{name}" = external {kind} {ty}')
        body.extend(decls)
        for name in sorted(refs[k]):
            if name in home and home[name] != k:
                body.append(_declaration(heads[name]))
        for fn in group:
            lines = fn.lines
            if fn.name in shared:
                lines = [_LOCAL_LINKAGE.sub("", fn.head, count=1), *lines[1:]]
            body.append("")
            body.extend(lines)
        body.append("")
        body.extend(trailer)
        out.append(Part("\n".join(body) + "\n", tuple(fn.name for fn in group)))
    return out


def _groups(functions, parts: int) -> list:
    """Contiguous runs of ``functions`` of about equal total lines, at most ``parts``."""
    total = sum(len(fn.lines) for fn in functions)
    target = total / parts
    groups, current, size = [], [], 0
    for fn in functions:
        current.append(fn)
        size += len(fn.lines)
        if size >= target * (len(groups) + 1) - 1e-9 and len(groups) < parts - 1:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups
