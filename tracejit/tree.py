"""Pytrees: nested tuples, lists, dicts, None and registered containers.

``flatten(tree) -> (leaves, treedef)`` and ``unflatten(treedef, leaves)``. Treedefs are hashable
and compare by structure, so they can be part of a cache key. ``leaf_paths`` gives readable paths
("args[0]['w']") for error messages and retrace logs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn):
    """Register ``cls``: ``flatten_fn(x) -> (children, aux)``, ``unflatten_fn(aux, children)``.

    ``aux`` must be hashable; it is part of the structure (and of the trace cache key).
    """
    _REGISTRY[cls] = (flatten_fn, unflatten_fn)


@dataclass(frozen=True)
class TreeDef:
    kind: Any            # None for a leaf, else the node type (tuple, list, dict, NoneType, ...)
    aux: Any             # dict keys / namedtuple type / registered aux data
    children: tuple

    @property
    def num_leaves(self) -> int:
        if self.kind is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self):
        if self.kind is None:
            return "*"
        if self.kind is type(None):
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind is dict:
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children))
            return "{" + inner + "}"
        if self.kind is list:
            return "[" + inner + "]"
        if self.kind is tuple:
            return "(" + inner + ("," if len(self.children) == 1 else "") + ")"
        return f"{getattr(self.kind, '__name__', self.kind)}({inner})"


LEAF = TreeDef(None, None, ())


def _children(x):
    t = type(x)
    if t is tuple or t is list:
        return t, None, list(x)
    if t is dict:
        keys = tuple(sorted(x, key=repr))
        return dict, keys, [x[k] for k in keys]
    if x is None:
        return type(None), None, []
    if isinstance(x, tuple) and hasattr(x, "_fields"):      # namedtuple
        return t, None, list(x)
    if t in _REGISTRY:
        children, aux = _REGISTRY[t][0](x)
        return t, aux, list(children)
    return None


def flatten(tree, is_leaf=None) -> tuple[list, TreeDef]:
    """Leaves in a deterministic order (dict keys sorted) and the structure."""
    leaves: list = []

    def rec(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node = _children(x)
        if node is None:
            leaves.append(x)
            return LEAF
        kind, aux, kids = node
        return TreeDef(kind, aux, tuple(rec(k) for k in kids))

    return leaves, rec(tree)


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)

    def rec(td):
        if td.kind is None:
            return next(it)
        kids = [rec(c) for c in td.children]
        if td.kind is tuple or td.kind is list:
            return td.kind(kids)
        if td.kind is dict:
            return dict(zip(td.aux, kids))
        if td.kind is type(None):
            return None
        if isinstance(td.kind, type) and issubclass(td.kind, tuple) and td.kind in _REGISTRY:
            return _REGISTRY[td.kind][1](td.aux, kids)
        if isinstance(td.kind, type) and issubclass(td.kind, tuple):   # namedtuple
            return td.kind(*kids)
        return _REGISTRY[td.kind][1](td.aux, kids)

    result = rec(treedef)
    return result


def leaf_paths(treedef: TreeDef, prefix: str = "") -> list[str]:
    """Readable path of every leaf, e.g. ``args[0]['w']``."""
    out: list[str] = []

    def rec(td, path):
        if td.kind is None:
            out.append(path)
            return
        keys = td.aux if td.kind is dict else range(len(td.children))
        for key, child in zip(keys, td.children):
            rec(child, f"{path}[{key!r}]")

    rec(treedef, prefix)
    return out


def tree_map(fn, tree, *rest):
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [fn(x, *xs) for x, *xs in zip(leaves, *others)])


def tree_leaves(tree):
    return flatten(tree)[0]


def tree_structure(tree):
    return flatten(tree)[1]
