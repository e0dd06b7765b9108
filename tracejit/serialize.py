"""Graphs and the values around them as versioned JSON that reads back exactly.

``dumps(graph)`` / ``loads(text)``: a graph (sub-graphs of control-flow primitives, constants,
literals, ``Graph.writes`` and source positions included) as a JSON document
``{"format": "tracejit-ir", "version": 1, "graphs": [...], "arrays": [...]}``, and
``graphs_equal(a, b)``, structural equality (vars matched one to one), so that
``graphs_equal(loads(dumps(g)), g)`` holds for every graph. ``encode_value`` /
``decode_value`` are the same codec for the other data of an artifact (signatures, pytree
structures, static argument values).

Invariants:
- exact: floats are stored as their hex text (``float.hex``), a NaN as the bytes of its dtype
  (sign and payload kept), NumPy scalars and arrays as bytes + dtype + shape; a tuple stays a
  tuple and a list a list. Python ints are JSON ints (any size).
- sharing is kept: every var has one id in the whole document (a var bound in two sub-graphs
  reads back as one object), a sub-graph or array used twice is stored once.
- reading executes nothing: primitives are looked up by name in ``ir.PRIMITIVES``, and the
  classes of pytree nodes (namedtuples, registered containers) among the modules already
  imported; nothing is imported and no pickle is read. Values without a data form (a Python
  function in a param, an arbitrary object as a static argument) raise ``SerializeError``.
"""
from __future__ import annotations

import base64
import json
import sys

import numpy as np

from . import tree
from .ir import PRIMITIVES, Eqn, Graph, Literal, Type, Var

FORMAT = "tracejit-ir"
VERSION = 1


class SerializeError(Exception):
    """A graph or value that has no data form, or a document that is not a valid one."""


# ---------------------------------------------------------------------------------------------
# scalars and types

def _float_text(x, dtype) -> str:
    """A float as exact text: its hex form, or for a NaN the hex of its bytes in ``dtype``."""
    if np.isnan(x):
        return "nan:" + np.asarray(x, dtype).tobytes().hex()
    return float(x).hex()


def _float_value(text: str, dtype):
    if text.startswith("nan:"):
        return np.frombuffer(bytes.fromhex(text[4:]), dtype)[0]
    return np.asarray(float.fromhex(text), dtype)[()]


def type_text(ty: Type) -> str:
    """``float64[3,?]`` (a trailing ``~`` for a weak type)."""
    dims = ",".join("?" if d is None else str(d) for d in ty.shape)
    return f"{ty.dtype.name}[{dims}]" + ("~" if ty.weak else "")


def parse_type(text: str) -> Type:
    try:
        name, rest = text.split("[", 1)
        dims, tail = rest.split("]", 1)
        shape = tuple(None if d == "?" else int(d) for d in dims.split(",")) if dims else ()
        if tail not in ("", "~"):
            raise ValueError(tail)
        return Type(np.dtype(name), shape, tail == "~")
    except (ValueError, TypeError) as e:
        raise SerializeError(f"not a type: {text!r} ({e})") from None


def _scalar(v, dtype: np.dtype):
    """A NumPy scalar of ``dtype`` as readable, exact JSON."""
    if dtype.kind == "b":
        return bool(v)
    if dtype.kind in "iu":
        return int(v)
    if dtype.kind == "c":
        part = dtype.type(0).real.dtype
        return [_float_text(v.real, part), _float_text(v.imag, part)]
    if dtype.kind == "f":
        return _float_text(v, dtype)
    raise SerializeError(f"no data form for a NumPy scalar of dtype {dtype}")


def _scalar_value(data, dtype: np.dtype):
    if dtype.kind == "c":
        part = dtype.type(0).real.dtype
        re, im = (_float_value(t, part) for t in data)
        out = np.zeros((), dtype)
        out.real, out.imag = re, im
        return out[()]
    if dtype.kind == "f":
        return _float_value(data, dtype)
    return np.asarray(data, dtype)[()]


# ---------------------------------------------------------------------------------------------
# writing

class _Writer:
    def __init__(self):
        self.var_ids: dict[int, int] = {}
        self.graph_ids: dict[int, int] = {}
        self.array_ids: dict[int, int] = {}
        self.graphs: list = []
        self.arrays: list = []
        self.keep: list = []          # objects whose id() is a key above stay alive meanwhile

    def array(self, a) -> int:
        k = self.array_ids.get(id(a))
        if k is None:
            arr = np.asarray(a)
            if arr.dtype.kind not in "biufc":
                raise SerializeError(f"no data form for an array of dtype {arr.dtype}")
            self.keep.append(a)
            k = self.array_ids[id(a)] = len(self.arrays)
            self.arrays.append({"dtype": arr.dtype.name, "shape": list(arr.shape),
                                "data": base64.b64encode(np.ascontiguousarray(arr).tobytes())
                                .decode()})
        return k

    def binder(self, v: Var) -> list:
        if not isinstance(v, Var):
            raise SerializeError(f"a binder is not a Var: {v!r}")
        k = self.var_ids.get(id(v))
        if k is None:
            self.keep.append(v)
            k = self.var_ids[id(v)] = len(self.var_ids)
        out = [k, type_text(v.ty)]
        return out + [v.hint] if v.hint is not None else out

    def atom(self, a):
        if isinstance(a, Literal):
            return {"lit": _scalar(a.value, a.ty.dtype), "ty": type_text(a.ty)}
        k = self.var_ids.get(id(a))
        if k is None:
            raise SerializeError(f"{a!r} is used but bound nowhere in the graph")
        return k

    def graph(self, g: Graph) -> int:
        k = self.graph_ids.get(id(g))
        if k is not None:
            return k
        self.keep.append(g)
        k = self.graph_ids[id(g)] = len(self.graphs)
        self.graphs.append(None)                  # reserved: sub-graphs come after their user
        doc = {"in": [self.binder(v) for v in g.invars],
               "consts": [self.binder(v) + [self.array(c)]
                          for v, c in zip(g.constvars, g.constvals)],
               "eqns": [self.eqn(e) for e in g.eqns],
               "out": [self.atom(a) for a in g.outvars]}
        if g.writes:
            doc["writes"] = [list(w) for w in g.writes]
        self.graphs[k] = doc
        return k

    def eqn(self, e: Eqn) -> list:
        ins = [self.atom(a) for a in e.invars]
        params = {}
        for name, value in sorted(e.params.items()):
            try:
                params[name] = self.value(value)
            except SerializeError as err:
                raise SerializeError(f"cannot serialise param {name!r} of {e.prim.name}: {err}"
                                     ) from None
        out = [e.prim.name, params, ins, [self.binder(v) for v in e.outvars]]
        return out + [e.source] if e.source is not None else out

    def value(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if type(v) is int:
            return v
        if type(v) is float:
            return {"$f": _float_text(v, np.float64)}
        if type(v) is complex:
            return {"$c": [_float_text(v.real, np.float64), _float_text(v.imag, np.float64)]}
        if type(v) is tuple:
            return {"$t": [self.value(x) for x in v]}
        if type(v) is list:
            return [self.value(x) for x in v]
        if type(v) is dict:
            return {"$d": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if type(v) is frozenset:
            return {"$fs": [self.value(x) for x in v]}
        if isinstance(v, np.dtype):
            return {"$dtype": v.name}
        if isinstance(v, np.generic):
            return {"$np": v.dtype.name, "v": _scalar(v, v.dtype)}
        if isinstance(v, np.ndarray):
            return {"$array": self.array(v)}
        if isinstance(v, Type):
            return {"$type": type_text(v)}
        if isinstance(v, Graph):
            return {"$graph": self.graph(v)}
        if isinstance(v, tree.TreeDef):
            return {"$tree": self.treedef(v)}
        if isinstance(v, tuple) and hasattr(v, "_fields"):      # a NamedTuple record
            return {"$nt": _class_name(type(v)), "v": [self.value(x) for x in v]}
        raise SerializeError(f"{type(v).__module__}.{type(v).__qualname__} ({v!r:.60}) has no "
                             f"data form")

    def treedef(self, td: tree.TreeDef):
        if td.kind is None:
            return "*"
        kind = {tuple: "tuple", list: "list", dict: "dict", type(None): "None"}.get(td.kind)
        if kind is None:
            kind = {"class": _class_name(td.kind)}
        return [kind, self.value(td.aux), [self.treedef(c) for c in td.children]]


def _class_name(cls) -> str:
    name = f"{cls.__module__}:{cls.__qualname__}"
    if _find_class(name) is not cls:
        raise SerializeError(f"class {cls.__qualname__} of module {cls.__module__} cannot be "
                             f"found by its name (defined in a function, or in __main__)")
    return name


def _find_class(name: str):
    """The class named ``module:qualname`` among the modules already imported (None if not
    there): looked up in the modules' namespaces, nothing imported or run."""
    module, _, qualname = name.partition(":")
    if module == "__main__":
        return None
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        space = vars(obj) if obj is not None and hasattr(obj, "__dict__") else {}
        obj = space.get(part)
    return obj if isinstance(obj, type) else None


# ---------------------------------------------------------------------------------------------
# reading

class _Reader:
    def __init__(self, doc):
        self.doc = doc
        self.vars: dict[int, Var] = {}
        self.graphs: dict[int, Graph] = {}
        self.arrays: dict[int, np.ndarray] = {}

    def array(self, k: int) -> np.ndarray:
        a = self.arrays.get(k)
        if a is None:
            rec = self.doc["arrays"][k]
            dtype = np.dtype(rec["dtype"])
            if dtype.kind not in "biufc":
                raise SerializeError(f"array of dtype {dtype}")
            raw = base64.b64decode(rec["data"], validate=True)
            shape = tuple(int(d) for d in rec["shape"])
            a = self.arrays[k] = np.frombuffer(raw, dtype).reshape(shape).copy()
        return a

    def binder(self, rec) -> Var:
        k, ty = rec[0], parse_type(rec[1])
        v = self.vars.get(k)
        if v is None:
            v = self.vars[k] = Var(ty, rec[2] if len(rec) > 2 else None)
        elif v.ty != ty:
            raise SerializeError(f"var {k} bound as {type_text(v.ty)} and as {rec[1]}")
        return v

    def atom(self, a):
        if isinstance(a, dict):
            ty = parse_type(a["ty"])
            if ty.shape != ():
                raise SerializeError(f"a literal of type {a['ty']}")
            return Literal(_scalar_value(a["lit"], ty.dtype), ty)
        if type(a) is not int or a not in self.vars:
            raise SerializeError(f"var {a!r} used before it is bound")
        return self.vars[a]

    def graph(self, k: int) -> Graph:
        g = self.graphs.get(k)
        if g is not None:
            return g
        rec = self.doc["graphs"][k]
        invars = tuple(self.binder(b) for b in rec["in"])
        constvars = tuple(self.binder(b[:-1]) for b in rec["consts"])
        constvals = tuple(self.array(b[-1]) for b in rec["consts"])
        eqns = [self.eqn(e) for e in rec["eqns"]]
        outvars = tuple(self.atom(a) for a in rec["out"])
        g = self.graphs[k] = Graph(invars, outvars, eqns, constvars, constvals,
                                   tuple(tuple(w) for w in rec.get("writes", ())))
        return g

    def eqn(self, rec) -> Eqn:
        name, params, ins = rec[0], rec[1], rec[2]
        prim = PRIMITIVES.get(name)
        if prim is None:
            raise SerializeError(f"unknown primitive {name!r} (written by another tracejit "
                                 f"version?)")
        invars = tuple(self.atom(a) for a in ins)
        params = {p: self.value(v) for p, v in params.items()}
        outvars = tuple(self.binder(b) for b in rec[3])
        return Eqn(prim, invars, outvars, params, rec[4] if len(rec) > 4 else None)

    def value(self, v):
        if v is None or isinstance(v, (bool, str, int)):
            return v
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict) or len(v) not in (1, 2):
            raise SerializeError(f"not a value: {v!r:.80}")
        tag = next(iter(v))
        body = v[tag]
        if tag == "$f":
            return float(_float_value(body, np.float64))
        if tag == "$c":
            return complex(float(_float_value(body[0], np.float64)),
                           float(_float_value(body[1], np.float64)))
        if tag == "$t":
            return tuple(self.value(x) for x in body)
        if tag == "$d":
            return {self.value(k): self.value(x) for k, x in body}
        if tag == "$fs":
            return frozenset(self.value(x) for x in body)
        if tag == "$dtype":
            return np.dtype(body)
        if tag == "$np":
            return _scalar_value(v["v"], np.dtype(body))
        if tag == "$array":
            return self.array(body)
        if tag == "$type":
            return parse_type(body)
        if tag == "$graph":
            return self.graph(body)
        if tag == "$tree":
            return self.treedef(body)
        if tag == "$nt":
            cls = _find_class(body)
            if cls is None or not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
                raise SerializeError(f"record class {body} is not a NamedTuple imported in "
                                     f"this process")
            return cls(*[self.value(x) for x in v["v"]])
        raise SerializeError(f"unknown value tag {tag!r}")

    def treedef(self, rec) -> tree.TreeDef:
        if rec == "*":
            return tree.LEAF
        kind, aux, children = rec
        if isinstance(kind, dict):
            cls = _find_class(kind["class"])
            named = cls is not None and issubclass(cls, tuple) and hasattr(cls, "_fields")
            if cls is None or not (named or cls in tree._REGISTRY):
                raise SerializeError(f"pytree node class {kind['class']} is not a namedtuple "
                                     f"or registered container imported in this process")
            kind = cls
        else:
            kind = {"tuple": tuple, "list": list, "dict": dict, "None": type(None)}[kind]
        return tree.TreeDef(kind, self.value(aux), tuple(self.treedef(c) for c in children))


# ---------------------------------------------------------------------------------------------
# documents

def to_document(graph: Graph) -> dict:
    """The JSON-able document of ``graph``."""
    w = _Writer()
    w.graph(graph)
    return {"format": FORMAT, "version": VERSION, "graphs": w.graphs, "arrays": w.arrays}


def from_document(doc: dict) -> Graph:
    """The graph of a document made by :func:`to_document` (checked with ``ir.verify``)."""
    from .ir import IRError, verify
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SerializeError("not a tracejit IR document")
    if doc.get("version") != VERSION:
        raise SerializeError(f"IR document version {doc.get('version')!r}; this tracejit reads "
                             f"version {VERSION}")
    try:
        g = _Reader(doc).graph(0)
        verify(g, "reading a serialised graph")
    except SerializeError:
        raise
    except (IRError, KeyError, IndexError, TypeError, ValueError) as e:
        raise SerializeError(f"malformed IR document: {type(e).__name__}: {e}") from None
    return g


def dumps(graph: Graph, indent: int | None = None) -> str:
    """``graph`` as JSON text (see the module docstring)."""
    return json.dumps(to_document(graph), indent=indent, allow_nan=False)


def loads(text: str | bytes) -> Graph:
    """The graph of JSON text made by :func:`dumps`."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SerializeError(f"not JSON: {e}") from None
    return from_document(doc)


def encode_value(v, arrays: list | None = None):
    """A value (the kinds of ``Eqn.params``, pytree structures, NamedTuple records) as JSON
    data; arrays go to ``arrays`` (records of a document's ``arrays`` list)."""
    w = _Writer()
    out = w.value(v)
    if w.graphs:
        raise SerializeError("encode_value takes no graphs; use to_document")
    if w.arrays:
        if arrays is None:
            raise SerializeError("encode_value of an array needs an arrays list")
        base = len(arrays)
        arrays.extend(w.arrays)
        out = _shift_arrays(out, base)
    return out


def _shift_arrays(v, base):
    if isinstance(v, list):
        return [_shift_arrays(x, base) for x in v]
    if isinstance(v, dict):
        if "$array" in v:
            return {"$array": v["$array"] + base}
        return {k: _shift_arrays(x, base) for k, x in v.items()}
    return v


def decode_value(data, arrays: list | tuple = ()):
    """The value of :func:`encode_value`'s data."""
    try:
        return _Reader({"arrays": list(arrays), "graphs": []}).value(data)
    except SerializeError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise SerializeError(f"malformed value: {type(e).__name__}: {e}") from None


# ---------------------------------------------------------------------------------------------
# equality

def graphs_equal(a: Graph, b: Graph) -> bool:
    """Whether two graphs are the same program: the same structure, with vars matched one to
    one (hints included), literals and constants equal bit for bit, params equal (sub-graphs
    structurally), the same source positions and writes."""
    return _Equal().graph(a, b)


class _Equal:
    def __init__(self):
        self.fwd: dict[int, Var] = {}
        self.back: dict[int, Var] = {}
        self.keep: list = []

    def bind(self, x, y) -> bool:
        if not isinstance(x, Var) or not isinstance(y, Var) or x.ty != y.ty or x.hint != y.hint:
            return False
        fx, by = self.fwd.get(id(x)), self.back.get(id(y))
        if fx is None and by is None:
            self.keep += [x, y]
            self.fwd[id(x)], self.back[id(y)] = y, x
            return True
        return fx is y and by is x

    def atom(self, x, y) -> bool:
        if isinstance(x, Literal) or isinstance(y, Literal):
            return isinstance(x, Literal) and isinstance(y, Literal) and x.ty == y.ty and \
                np.asarray(x.value).tobytes() == np.asarray(y.value).tobytes()
        return self.fwd.get(id(x)) is y

    def graph(self, a: Graph, b: Graph) -> bool:
        if len(a.invars) != len(b.invars) or len(a.constvars) != len(b.constvars) or \
                len(a.eqns) != len(b.eqns) or len(a.outvars) != len(b.outvars) or \
                tuple(map(tuple, a.writes)) != tuple(map(tuple, b.writes)):
            return False
        if not all(self.bind(x, y) for x, y in zip(a.invars + a.constvars,
                                                    b.invars + b.constvars)):
            return False
        if not all(self.value(x, y) for x, y in zip(a.constvals, b.constvals)):
            return False
        for e, f in zip(a.eqns, b.eqns):
            if e.prim is not f.prim or e.source != f.source or \
                    len(e.invars) != len(f.invars) or len(e.outvars) != len(f.outvars) or \
                    sorted(e.params) != sorted(f.params):
                return False
            if not all(self.atom(x, y) for x, y in zip(e.invars, f.invars)):
                return False
            if not all(self.value(e.params[k], f.params[k]) for k in e.params):
                return False
            if not all(self.bind(x, y) for x, y in zip(e.outvars, f.outvars)):
                return False
        return all(self.atom(x, y) for x, y in zip(a.outvars, b.outvars))

    def value(self, x, y) -> bool:
        if isinstance(x, Graph) or isinstance(y, Graph):
            return isinstance(x, Graph) and isinstance(y, Graph) and self.graph(x, y)
        if isinstance(x, (np.ndarray, np.generic)) or isinstance(y, (np.ndarray, np.generic)):
            return type(x) is type(y) and x.dtype == y.dtype and np.shape(x) == np.shape(y) \
                and np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()
        if type(x) is not type(y):
            return False
        if isinstance(x, (tuple, list)):
            return len(x) == len(y) and all(self.value(u, v) for u, v in zip(x, y))
        if isinstance(x, dict):
            return list(x) == list(y) and all(self.value(x[k], y[k]) for k in x)
        if isinstance(x, float):
            return _float_text(x, np.float64) == _float_text(y, np.float64)
        if isinstance(x, complex):
            return self.value(x.real, y.real) and self.value(x.imag, y.imag)
        return x == y
