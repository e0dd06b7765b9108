"""The portable artifact format (issue 17, item 1): graphs as versioned JSON that reads back
exactly (over the fuzzer's generated programs and hand-made corner cases), artifacts saved and
loaded, and object code trusted only with this user's MAC, for this host."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit import interpret, serialize
from tracejit.artifact import Artifact, ArtifactError
from tracejit.backend import trusted_objects
from tracejit.ir import Graph, Literal, Type, Var
from tracejit.serialize import SerializeError, graphs_equal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.fuzz import gen, mutate, rules  # noqa: E402
from tests.fuzz.transforms import build_cases  # noqa: E402


def _same(a, b):
    """Bit-identical results, NaNs anywhere the other has them (NaN bits not compared)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True) and \
            np.array_equal(np.signbit(a.real), np.signbit(b.real))
    return np.array_equal(a, b)


def _round_trip(g):
    text = serialize.dumps(g)
    h = serialize.loads(text)
    assert graphs_equal(g, h), f"graph changed:\n{g}\n---\n{h}"
    assert graphs_equal(h, g)
    assert serialize.dumps(h) == text
    assert str(h) == str(g)
    return h


def _graphs_of(prog, f):
    """(graph, whether it is the simplified graph of ``f`` itself) of the program and its
    transform cases, simplified and raw."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cases = build_cases(prog, f) if not prog.mutating else [None]
        except Exception:             # noqa: BLE001 - a program the fuzzer itself drops
            return out
        for case in cases:
            fun, args = (f, gen.make_inputs(prog)) if case is None else (case.fun, case.in1)
            for optimize in (True, False):
                try:
                    g = tj.make_ir(fun, optimize=optimize)(*args)
                    out.append((g, optimize and (case is None or case.label == "f")))
                except Exception:     # noqa: BLE001 - programs tracejit refuses: not ours
                    pass
    return out


def _inputs_for(g, seed):
    rng = np.random.default_rng(seed)
    out = []
    for v in g.invars:
        t = v.ty
        shape = t.shape if not t.dynamic else (3,) + t.shape[1:]
        if t.dtype.kind == "b":
            out.append(rng.random(shape) < .5)
        elif t.dtype.kind in "iu":
            out.append(rng.integers(0, 5, size=shape).astype(t.dtype))
        elif t.dtype.kind == "c":
            out.append((rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(t.dtype))
        else:
            out.append(rng.normal(size=shape).astype(t.dtype))
    return out


def _programs(n, mutating):
    for i in range(n):
        prog = mutate.make_program(1709 + 31 * i, "mutating") if mutating else \
            gen.generate(4711 * 1_000_003 + i)
        ns = {"np": np, "tj": tj, "fz": rules.TRACED}
        exec(compile(prog.source(), f"<artifact {prog.seed}>", "exec"), ns)
        yield prog, ns["f"]


@pytest.mark.parametrize("mutating", [False, True], ids=["plain", "mutating"])
def test_generated_programs_round_trip_and_evaluate_identically(mutating):
    """Every graph of 40 generated programs (their transforms: grad, jvp, vmap, hessian, ...;
    simplified and raw) reads back equal, prints the same, and the interpreter gives
    bit-identical results on it; raw graphs holding Python rules (custom_jvp) are refused
    with an error naming the param."""
    checked = refused = 0
    writes = 0
    for prog, f in _programs(40, mutating):
        for g, _ in _graphs_of(prog, f):
            try:
                h = _round_trip(g)
            except SerializeError as e:
                assert "custom_" in str(e) and "no data form" in str(e), str(e)
                refused += 1
                continue
            checked += 1
            writes += bool(g.writes)
            if any(v.ty.dynamic for v in g.invars):
                continue
            args = _inputs_for(g, prog.seed)
            with np.errstate(all="ignore"):
                try:
                    want = interpret.run(g, args)
                except Exception as e:              # noqa: BLE001 - the same error, then
                    with pytest.raises(type(e)):
                        interpret.run(h, args)
                    continue
                got = interpret.run(h, args)
            assert all(_same(a, b) for a, b in zip(got, want))
    assert checked >= 40, (checked, refused)
    if mutating:
        assert writes >= 10, writes


def test_llvm_code_of_a_read_back_graph_is_the_same():
    """The backend emits the same module for a graph read back (what lets an artifact's
    object code be used for it): the same LLVM IR text."""
    from tracejit.backend import compile_graph
    n = 0
    for prog, f in _programs(8, False):
        for g, top in _graphs_of(prog, f)[:2]:
            if not top or any(v.ty.dynamic for v in g.invars):
                continue
            h = serialize.loads(serialize.dumps(g))
            try:
                a = compile_graph(g)
            except Exception:               # noqa: BLE001 - tracejit refuses it either way
                continue
            b = compile_graph(h)
            assert a.llvm_ir == b.llvm_ir
            n += 1
    assert n >= 4


def _literal_graph(values):
    """{ x -> x == c_k for each literal c_k } over literals of every kind."""
    from tracejit.ops.elementwise import eq_p
    x = Var(Type(np.dtype(np.float64), (2,)))
    eqns, outs = [], []
    for val, ty in values:
        o = Var(Type(np.dtype(np.bool_), (2,)))
        xc = x if ty.dtype == np.float64 else None
        if xc is None:
            xi = Var(Type(ty.dtype, (2,)))
            from tracejit.ops.elementwise import convert_p
            eqns.append(_eqn(convert_p, [x], [xi], dtype=ty.dtype))
            xc = xi
        eqns.append(_eqn(eq_p, [xc, Literal(val, ty)], [o]))
        outs.append(o)
    return Graph((x,), tuple(outs), eqns)


def _eqn(prim, ins, outs, **params):
    from tracejit.ir import Eqn
    return Eqn(prim, tuple(ins), tuple(outs), params)


def test_special_literals_constants_and_params_are_exact():
    f64, f32, c128 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.complex128)
    neg_nan = np.frombuffer(bytes.fromhex("010000000000f8ff"), np.float64)[0]   # -NaN, payload
    nan32 = np.frombuffer(bytes.fromhex("0100c07f"), np.float32)[0]
    values = [(np.nan, Type(f64)), (neg_nan, Type(f64)), (np.inf, Type(f64)),
              (-np.inf, Type(f64)), (-0.0, Type(f64)), (5e-324, Type(f64)),
              (0.1, Type(f64, (), True)), (nan32, Type(f32)), (np.float32(-0.0), Type(f32)),
              (complex(np.nan, -0.0), Type(c128)), (complex(-np.inf, 1e300), Type(c128)),
              (np.iinfo(np.int64).min, Type(np.dtype(np.int64))),
              (np.iinfo(np.uint64).max, Type(np.dtype(np.uint64))),
              (True, Type(np.dtype(np.bool_))), (-128, Type(np.dtype(np.int8)))]
    g = _literal_graph(values)
    h = _round_trip(g)
    for e, k in zip([e for e in h.eqns if e.prim.name == "eq"], range(len(values))):
        lit = e.invars[1]
        assert lit.ty == values[k][1]
        assert np.asarray(lit.value).tobytes() == \
            np.asarray(values[k][0], values[k][1].dtype).tobytes()

    # constants of every dtype (shared ones stay shared), a sub-graph used twice, NumPy scalars
    # in params, writes: through a traced function
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    flags = np.array([True, False, True])

    def f(x, n):
        y = x * table[0] + np.where(flags[1], 1.0, 2.0)
        z = tj.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5), (0, y))[1]
        x[0] = -0.0
        return z.sum() + table.sum(), np.transpose(z.reshape(2, 2), (np.int64(1), 0))
    x = np.ones(4, np.float32)
    g = tj.make_ir(f)(x, 3)
    assert g.writes and g.constvars
    h = _round_trip(g)
    assert [type(c) for c in h.constvals] == [type(c) for c in g.constvals]
    args = [np.ones(4, np.float32), np.asarray(3)]
    assert all(_same(a, b) for a, b in zip(interpret.run(g, args), interpret.run(h, args)))


def test_values_keep_their_python_and_numpy_types():
    value = {"k": (np.int64(1), 2, 3.5, -0.0, None, "s", [1, (2,)], np.dtype(np.float32),
                   frozenset({1, 2}), 1 + 2j, np.float32(np.nan), True, 2**70,
                   Type(np.dtype(np.int8), (None, 2), True))}
    back = serialize.decode_value(json.loads(json.dumps(serialize.encode_value(value))))

    def shape_of(v):
        if isinstance(v, (tuple, list, frozenset)):
            return type(v), [shape_of(x) for x in sorted(v, key=repr)]
        if isinstance(v, dict):
            return dict, [(k, shape_of(x)) for k, x in v.items()]
        return type(v), np.asarray(v).tobytes() if isinstance(v, (float, np.generic)) else v
    assert shape_of(back) == shape_of(value)


def test_shared_vars_and_subgraphs_keep_their_sharing():
    from tracejit.ops.elementwise import add_p
    from tracejit.ir import PRIMITIVES
    cond_p = PRIMITIVES["cond"]
    a = Var(Type(np.dtype(np.float64)))
    b = Var(Type(np.dtype(np.float64)))
    branch = Graph((a,), (a,), [])                       # one graph object in both branches
    other = Graph((a,), (b,), [_eqn(add_p, [a, a], [b])])   # `a` bound in two graphs
    p = Var(Type(np.dtype(np.int32)))
    x = Var(Type(np.dtype(np.float64)))
    o = Var(Type(np.dtype(np.float64)))
    g = Graph((p, x), (o,), [_eqn(cond_p, [p, x], [o], branches=(branch, branch, other))])
    h = _round_trip(g)
    br = h.eqns[0].params["branches"]
    assert br[0] is br[1] and br[0] is not br[2]
    assert br[0].invars[0] is br[2].invars[0]


@pytest.mark.parametrize("bad, match", [
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d["graphs"][0]["eqns"][0].__setitem__(0, "no_such_prim"), "unknown primitive"),
    (lambda d: d["graphs"][0]["eqns"][0][3][0].__setitem__(1, "int32[3]"), "malformed"),
    (lambda d: d["graphs"][0]["out"].__setitem__(0, 99), "used before"),
    (lambda d: d["graphs"][0]["eqns"][1][1].update(axes={"$pickle": "x"}), "unknown value tag"),
])
def test_malformed_documents_are_refused(bad, match):
    g = tj.make_ir(lambda x: np.sum(np.sin(x)))(np.ones(3))
    doc = json.loads(serialize.dumps(g))
    bad(doc)
    with pytest.raises(SerializeError, match=match):
        serialize.loads(json.dumps(doc))


def test_unknown_classes_are_not_imported():
    """A pytree class named in a document is looked up among imported modules only."""
    data = {"$nt": "some_module_never_imported:Thing", "v": []}
    with pytest.raises(SerializeError, match="not a NamedTuple imported"):
        serialize.decode_value(data)
    assert "some_module_never_imported" not in sys.modules


def _loss(w, X, y):
    p = 1 / (1 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    return rng.normal(size=3), X, (rng.random(40) < .5).astype(float)


def test_artifact_files_round_trip(tmp_path, data):
    g = tj.grad(_loss)
    want = g(*data)
    art = g.export_artifact()
    assert len(art.entries) == 1 and art.entries[0].objects
    art.save(str(tmp_path))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["format"] == "tracejit-artifact" and manifest["version"] == 1
    obj = manifest["entries"][0]["objects"][0]
    assert {"cpu", "features", "llvmlite", "key", "symbols", "mac"} <= set(obj)
    back = Artifact.load(str(tmp_path))
    again = Artifact.from_bytes(back.to_bytes())
    for a in (back, again):
        assert graphs_equal(a.entries[0].graph, art.entries[0].graph)
        assert a.entries[0].signature == art.entries[0].signature
    # a new function object for the same code runs it without tracing
    fresh = tj.grad(lambda w, X, y: _loss(w, X, y))
    assert fresh.load_artifact(again) == 1
    np.testing.assert_array_equal(fresh(*data), want)
    assert fresh.cache_info().traces == 0


def test_object_code_is_trusted_only_with_the_users_mac_for_this_host(data):
    g = tj.value_and_grad(_loss)
    g(*data)
    records = g.export_artifact().entries[0].objects
    assert records
    key = records[0]["key"]
    assert key in trusted_objects(records)
    obj = bytearray(records[0]["data"])
    obj[len(obj) // 2] ^= 1
    tampered = [dict(records[0], data=bytes(obj))]
    wrong_mac = [dict(records[0], mac="00" * 32)]
    other_cpu = [dict(records[0], cpu="some-other-cpu")]
    moved = [dict(records[0], key="0" * 32)]            # a valid object under another key
    for bad in (tampered, wrong_mac, other_cpu, moved):
        assert trusted_objects(bad) == {}


_CHILD = r"""
import json, sys
import numpy as np
import tracejit as tj
from tracejit.artifact import Artifact
from tracejit.backend.engine import diskcache
art = Artifact.from_bytes(sys.stdin.buffer.read())
f = tj.trace(lambda w, X, y: 0)           # another function: the artifact's signature runs
f.load_artifact(art)
rng = np.random.default_rng(7)
X = rng.normal(size=(40, 3))
w, y = rng.normal(size=3), (rng.random(40) < .5).astype(float)
out = f(w, X, y)
print(json.dumps({"out": out.tolist(), "traces": f.cache_info().traces,
                  "graph_compiled": diskcache.stats["graph_compiled"]}))
"""


def _child(art_bytes, library_dir):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TRACEJIT_LIBRARY_CACHE_DIR=library_dir)
    env.pop("TRACEJIT_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", _CHILD], input=art_bytes, capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return json.loads(r.stdout.decode().splitlines()[-1])


def test_another_users_artifact_is_recompiled_from_its_ir(tmp_path, data):
    """In a process with another secret (another user, another machine) the object code is
    not run: the signature is compiled from the artifact's graph, still without a trace.
    With this user's secret, it is loaded (no compile)."""
    from tracejit.config import config
    g = tj.grad(_loss)
    want = g(*data)
    art = g.export_artifact().to_bytes()
    mine = _child(art, config.library_cache_dir)
    other = _child(art, str(tmp_path / "elsewhere"))
    for res in (mine, other):
        np.testing.assert_array_equal(res["out"], want)
        assert res["traces"] == 0
    assert mine["graph_compiled"] == 0
    assert other["graph_compiled"] >= 1


def test_static_arguments_without_a_data_form():
    class Opaque:
        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Opaque)

    f = tj.trace(lambda x, o: x * 2, static_argnums=1)
    f(np.ones(2), Opaque())
    f(np.ones(3), "fine")
    with pytest.raises(ArtifactError, match="no data form"):
        f.export_artifact()
    assert len(f.export_artifact(strict=False).entries) == 1
