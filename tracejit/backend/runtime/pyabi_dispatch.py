"""``FastDispatch``: the user-facing callable of a jitted function, a native heap type.

Calling a Python object with ``__call__`` costs ~60 ns and a ``def`` shim ~15 ns; a builtin costs
~15 ns. So the decorated function is an instance of a heap type made once per process with
``PyType_FromSpec`` (through ctypes) whose slots are LLVM IR functions compiled here:

- ``Py_TPFLAGS_HAVE_VECTORCALL`` with ``__vectorcalloffset__``: CPython calls ``tj_fd_call``
  directly with the argument vector (no tuple), which tries the instance's specialisation table
  (entries emitted by ``pyabi.emit_entry``; each returns ``NOMATCH`` cheaply) in order, then
  vectorcalls the Python fallback ``fallback(*args, **kwargs)`` with the original arguments.
  An entry gets, as its first argument, the address of its cell in ``caches`` (parallel to the
  table): NULL or the list in which it keeps outputs for reuse (``pyabi_reuse``), owned here;
- ``__dictoffset__`` and ``__weaklistoffset__``: instances take attributes (``__wrapped__``,
  ``__name__``...) and weak references;
- GC support (traverse/clear/dealloc in IR), because the fallback is typically a bound method of
  something that refers back to the instance.

Instance layout (bytes): 0 header, 16 vectorcall, 24 __dict__, 32 weaklist, 40 fallback,
48 keep (list of keepalives, parallel to the table), 56 nspec, 64 entries[MAX_SPECIALIZATIONS],
128 caches[MAX_SPECIALIZATIONS] (owned references, parallel to the table; NULL when unused).

Python methods come from mixin classes whose attributes are copied onto the native type by
``make_dispatch_type`` (heap types from PyType_FromSpec are mutable). Copying, not subclassing:
in CPython 3.11 a Python subclass of a vectorcall type loses ``Py_TPFLAGS_HAVE_VECTORCALL`` (it is
inherited only by immutable types), so its calls would go through ``tp_call`` and build a tuple.
Such subclasses still work, just slower.

Table order: most recently added first; when full, the oldest entry is evicted, and an entry
added again is moved first (the caller, ``api.Traced``, adds an evicted signature's entry again
when it is called again: least recently used).
"""
from __future__ import annotations

import ctypes
import threading

from llvmlite import ir

from ..engine import jit, objects
from . import pyabi, pyabi_reuse, pyobj
from .pyabi import NOMATCH
from .pyobj import declare, external, field_ptr, i32, i64, load_at, ptr

MAX_SPECIALIZATIONS = 8
OFF_VECTORCALL, OFF_DICT, OFF_WEAKLIST, OFF_FALLBACK, OFF_KEEP, OFF_NSPEC, OFF_TABLE = (
    16, 24, 32, 40, 48, 56, 64)
OFF_CACHES = OFF_TABLE + 8 * MAX_SPECIALIZATIONS
BASICSIZE = OFF_CACHES + 8 * MAX_SPECIALIZATIONS
_OWNED = (OFF_DICT, OFF_FALLBACK, OFF_KEEP) + tuple(     # PyObject* fields the instance owns
    OFF_CACHES + 8 * k for k in range(MAX_SPECIALIZATIONS))

_TPFLAGS = (1 << 18) | (1 << 10) | (1 << 14) | (1 << 11)  # VERSION_TAG|BASETYPE|HAVE_GC|VECTORCALL
_SLOT = dict(call=50, clear=51, dealloc=52, doc=56, new=65, traverse=71, members=72)
T_OBJECT, T_PYSSIZET, READONLY = 6, 19, 1


class _PyType_Slot(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("pfunc", ctypes.c_void_p)]


class _PyType_Spec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("basicsize", ctypes.c_int), ("itemsize", ctypes.c_int),
                ("flags", ctypes.c_uint), ("slots", ctypes.POINTER(_PyType_Slot))]


class _PyMemberDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("offset", ctypes.c_ssize_t),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


def _emit_type_module() -> ir.Module:
    """IR of the type's slot functions: call (vectorcall), new, dealloc, traverse, clear."""
    m = ir.Module("tj_fastdispatch")
    void = ir.VoidType()
    null = ir.Constant(ptr, None)
    incref = declare(m, "Py_IncRef", void, [ptr])
    decref = declare(m, "Py_DecRef", void, [ptr])
    vcall = declare(m, "PyObject_Vectorcall", ptr, [ptr, ptr, i64, ptr])
    entry_ty = ir.FunctionType(ptr, [ptr, ptr, i64, ptr])

    # ptr tj_fd_call(self, args, nargsf, kwnames): try the table, then the fallback.
    call = ir.Function(m, entry_ty, "tj_fd_call")
    self, args, nargsf, kwnames = call.args
    b = ir.IRBuilder(call.append_basic_block("entry"))
    n = load_at(b, self, OFF_NSPEC, i64)
    loop, body, fallback = (call.append_basic_block(x) for x in ("loop", "body", "fallback"))
    pre = b.block
    b.branch(loop)
    b = ir.IRBuilder(loop)
    i = b.phi(i64, "i")
    i.add_incoming(ir.Constant(i64, 0), pre)
    b.cbranch(b.icmp_signed("<", i, n), body, fallback)
    b = ir.IRBuilder(body)
    slot = b.gep(field_ptr(b, self, OFF_TABLE), [i], source_etype=ptr)
    cell = b.gep(field_ptr(b, self, OFF_CACHES), [i], source_etype=ptr)
    # Loading as a typed function pointer gives llvmlite the callee's type (prints as ``ptr``).
    res = b.call(b.load(slot, typ=entry_ty.as_pointer()), [cell, args, nargsf, kwnames])
    i.add_incoming(b.add(i, ir.Constant(i64, 1)), body)
    found = call.append_basic_block("found")
    b.cbranch(b.icmp_unsigned("==", res, ir.Constant(i64, NOMATCH).inttoptr(ptr)), loop, found)
    ir.IRBuilder(found).ret(res)
    b = ir.IRBuilder(fallback)
    fb = load_at(b, self, OFF_FALLBACK, ptr)
    with b.if_then(b.icmp_unsigned("==", fb, null), likely=False):
        exc = b.load(external(m, "PyExc_TypeError"), typ=ptr)
        msg = pyabi._cstring(m, "tracejit: FastDispatch has no fallback")
        b.call(declare(m, "PyErr_SetString", void, [ptr, ptr]), [exc, msg])
        b.ret(null)
    b.call(incref, [fb])   # the fallback may replace itself while running
    out = b.call(vcall, [fb, args, nargsf, kwnames])
    b.call(decref, [fb])
    b.ret(out)

    # ptr tj_fd_new(type, args, kwds): allocate (zeroed, GC-tracked) and set the vectorcall slot.
    new = ir.Function(m, ir.FunctionType(ptr, [ptr, ptr, ptr]), "tj_fd_new")
    b = ir.IRBuilder(new.append_basic_block("entry"))
    alloc = declare(m, "PyType_GenericAlloc", ptr, [ptr, i64])
    obj = b.call(alloc, [new.args[0], ir.Constant(i64, 0)])
    with b.if_then(b.icmp_unsigned("!=", obj, null)):
        b.store(call, field_ptr(b, obj, OFF_VECTORCALL))
    b.ret(obj)

    # int tj_fd_clear(self): drop owned references (and the table, whose keepalives and output
    # caches go too).
    clear = ir.Function(m, ir.FunctionType(i32, [ptr]), "tj_fd_clear")
    b = ir.IRBuilder(clear.append_basic_block("entry"))
    b.store(ir.Constant(i64, 0), field_ptr(b, clear.args[0], OFF_NSPEC))
    for off in _OWNED:
        p = field_ptr(b, clear.args[0], off)
        v = b.load(p, typ=ptr)
        b.store(null, p)
        with b.if_then(b.icmp_unsigned("!=", v, null)):
            b.call(decref, [v])
    b.ret(ir.Constant(i32, 0))

    # int tj_fd_traverse(self, visit, arg): heap-type instances must also visit their type.
    visit_ty = ir.FunctionType(i32, [ptr, ptr])
    trav = ir.Function(m, ir.FunctionType(i32, [ptr, visit_ty.as_pointer(), ptr]), "tj_fd_traverse")
    tself, visit, varg = trav.args
    b = ir.IRBuilder(trav.append_basic_block("entry"))
    for off in _OWNED + (pyobj.OB_TYPE,):
        v = load_at(b, tself, off, ptr)
        with b.if_then(b.icmp_unsigned("!=", v, null)):
            r = b.call(visit, [v, varg])
            with b.if_then(b.icmp_signed("!=", r, ir.Constant(i32, 0))):
                b.ret(r)
    b.ret(ir.Constant(i32, 0))

    # void tj_fd_dealloc(self)
    dealloc = ir.Function(m, ir.FunctionType(void, [ptr]), "tj_fd_dealloc")
    dself = dealloc.args[0]
    b = ir.IRBuilder(dealloc.append_basic_block("entry"))
    b.call(declare(m, "PyObject_GC_UnTrack", void, [ptr]), [dself])
    with b.if_then(b.icmp_unsigned("!=", load_at(b, dself, OFF_WEAKLIST, ptr), null)):
        b.call(declare(m, "PyObject_ClearWeakRefs", void, [ptr]), [dself])
    b.call(clear, [dself])
    tp = load_at(b, dself, pyobj.OB_TYPE, ptr)
    b.call(declare(m, "PyObject_GC_Del", void, [ptr]), [dself])
    b.call(decref, [tp])
    b.ret_void()
    return m


_lock = threading.Lock()
jit.register_fork_lock(_lock)
_slot_addresses = None
_spec_keep = []       # PyType_Spec / members / names: kept for the life of the process


def _compiled_slots():
    global _slot_addresses
    with _lock:
        if _slot_addresses is None:
            # library code: object cached on disk (config.library_cache_dir), keyed by the
            # generating sources and the Python version (the slot functions bake in offsets)
            import sys
            jit.compile_library("dispatch", _emit_type_module,
                                objects.source_key(sys.modules[__name__], pyabi, pyobj) + sys.version,
                                opt=2)
            _slot_addresses = {k: jit.function_address(f"tj_fd_{k}")
                               for k in ("call", "new", "clear", "traverse", "dealloc")}
        return _slot_addresses


class DispatchMethods:
    """Methods every dispatch type has (copied onto the native type, or used as the base of the
    pure-Python fallback class)."""

    def __init__(self, fallback):
        """``fallback(*args, **kwargs)`` handles every call no specialisation matches."""
        self._tj_fallback = fallback
        self._tj_keep = []

    def add_specialization(self, entry, keepalive=None) -> list:
        """Put ``entry`` (an address from ``pyabi.build_entry``) first in the table: moved
        there, with its output cache, when it is already in it (a least-recently-added table
        becomes least-recently-used when callers re-add an entry that is hot again); else
        added, evicting the oldest when there are already MAX_SPECIALIZATIONS. ``keepalive``
        lives as long as the entry stays in the table, and so does the entry's output cache.
        Returns the keepalives of the evicted entries (their owners may add them again)."""
        if not isinstance(entry, int) or entry in (0, NOMATCH):
            raise TypeError(f"entry must be a native entry address, got {entry!r}")
        _check_native(self)
        table = (ctypes.c_void_p * MAX_SPECIALIZATIONS).from_address(id(self) + OFF_TABLE)
        caches = (ctypes.c_void_p * MAX_SPECIALIZATIONS).from_address(id(self) + OFF_CACHES)
        nspec = ctypes.c_int64.from_address(id(self) + OFF_NSPEC)
        keep = self._tj_keep
        present = table[:nspec.value]
        if entry in present:         # (the GIL is held throughout: no call sees the move)
            k = present.index(entry)
            cache = caches[k]
            table[1:k + 1], caches[1:k + 1] = table[0:k], caches[0:k]
            table[0], caches[0] = entry, cache
            keep.insert(0, keep.pop(k))
            return []
        cache = _new_cache(pyabi_reuse.cache_length(entry))     # before anything changes
        n = min(nspec.value, MAX_SPECIALIZATIONS - 1)
        # Shrink first so a concurrent call (GIL held by us, so none) never sees a half table.
        nspec.value = n
        dropped = keep[n:]
        del keep[n:]
        evicted = caches[n:]
        caches[n:] = [None] * (MAX_SPECIALIZATIONS - n)
        table[1:n + 1] = table[0:n]
        caches[1:n + 1] = caches[0:n]
        table[0] = entry
        caches[0] = cache
        keep.insert(0, keepalive)
        nspec.value = n + 1
        _release(evicted)           # last: freeing arrays may run Python code
        return dropped

    def clear_specializations(self):
        """Empty the table: every call goes to the fallback until specialisations are added."""
        _check_native(self)
        ctypes.c_int64.from_address(id(self) + OFF_NSPEC).value = 0
        self._tj_keep = []
        caches = (ctypes.c_void_p * MAX_SPECIALIZATIONS).from_address(id(self) + OFF_CACHES)
        evicted = caches[:]
        caches[:] = [None] * MAX_SPECIALIZATIONS
        _release(evicted)

    def specializations(self):
        """The keepalives of the table's entries, in the order they are tried."""
        return list(self._tj_keep[:self._tj_nspec])

    @property
    def fallback(self):
        return self._tj_fallback


def _new_cache(n):
    """Address of a new reference to a list of ``n`` Nones (an output cache), or None if n=0."""
    if not n:
        return None
    cache = [None] * n
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(cache))
    return id(cache)


def _release(addresses):
    """Drop the references at ``addresses`` (None entries skipped)."""
    for a in addresses:
        if a:
            ctypes.pythonapi.Py_DecRef(ctypes.c_void_p(a))


_native_types = ()    # every type made by make_dispatch_type (instances have our layout)


def _check_native(obj):
    # The methods poke the instance layout: refuse anything that is not a dispatch instance.
    if not isinstance(obj, _native_types):
        raise TypeError(f"not a native dispatch object: {type(obj).__name__}")


_SKIP = {"__dict__", "__weakref__", "__call__", "__new__", "__slots__", "__init_subclass__",
         "__class_getitem__", "__module__", "__qualname__"}


def make_dispatch_type(name: str, *mixins, doc: str | None = None, module: str = "tracejit"):
    """A new native dispatch type named ``name`` carrying the attributes of ``mixins`` (first
    wins) on top of ``DispatchMethods``. Instances are built as ``T(fallback)`` (a mixin may
    override ``__init__`` and must then call ``DispatchMethods.__init__``).

    Falls back to a plain Python class with ``__call__`` when ``pyobj.NATIVE_OK`` is False.
    """
    bases = tuple(mixins) + (DispatchMethods,)
    if not pyobj.NATIVE_OK:
        return type(name, tuple(mixins) + (PyDispatch, DispatchMethods),
                    {"__doc__": doc, "__module__": module})
    slots = _compiled_slots()
    members = (_PyMemberDef * 7)(
        _PyMemberDef(b"__vectorcalloffset__", T_PYSSIZET, OFF_VECTORCALL, READONLY, None),
        _PyMemberDef(b"__dictoffset__", T_PYSSIZET, OFF_DICT, READONLY, None),
        _PyMemberDef(b"__weaklistoffset__", T_PYSSIZET, OFF_WEAKLIST, READONLY, None),
        _PyMemberDef(b"_tj_fallback", T_OBJECT, OFF_FALLBACK, 0, None),
        _PyMemberDef(b"_tj_keep", T_OBJECT, OFF_KEEP, 0, None),
        _PyMemberDef(b"_tj_nspec", T_PYSSIZET, OFF_NSPEC, READONLY, None),
        _PyMemberDef())
    call_addr = ctypes.cast(ctypes.pythonapi.PyVectorcall_Call, ctypes.c_void_p).value
    slot_list = [(_SLOT["call"], call_addr), (_SLOT["members"], ctypes.addressof(members))]
    slot_list += [(_SLOT[k], slots[k]) for k in ("new", "clear", "traverse", "dealloc")]
    slot_arr = (_PyType_Slot * (len(slot_list) + 1))(*[_PyType_Slot(s, p) for s, p in slot_list])
    qualname = f"{module}.{name}".encode()
    spec = _PyType_Spec(qualname, BASICSIZE, 0, _TPFLAGS, slot_arr)
    from_spec = ctypes.pythonapi.PyType_FromSpec
    from_spec.restype, from_spec.argtypes = ctypes.py_object, [ctypes.c_void_p]
    tp = from_spec(ctypes.addressof(spec))
    _spec_keep.append((members, slot_arr, qualname, spec))
    global _native_types
    _native_types += (tp,)
    for base in reversed(bases):
        for k, v in vars(base).items():
            if k not in _SKIP and not (k == "__doc__" and v is None):
                setattr(tp, k, v)
    tp.__doc__ = doc if doc is not None else (mixins[0].__doc__ if mixins else None)
    return tp


class PyDispatch:
    """Pure-Python stand-in used when the native path is disabled (``pyobj.NATIVE_OK`` False):
    entries are ``pyabi.python_entry`` callables. Same semantics, ~60 ns slower per call."""

    def __call__(self, *args, **kwargs):
        for entry in self._tj_entries:
            out = entry(args, kwargs)
            if out is not NOMATCH:
                return out
        return self._tj_fallback(*args, **kwargs)

    def __init__(self, fallback):
        self._tj_fallback, self._tj_keep, self._tj_entries = fallback, [], []

    def add_specialization(self, entry, keepalive=None) -> list:
        if entry in self._tj_entries:                 # moved first (see DispatchMethods)
            k = self._tj_entries.index(entry)
            self._tj_entries.insert(0, self._tj_entries.pop(k))
            self._tj_keep.insert(0, self._tj_keep.pop(k))
            return []
        self._tj_entries.insert(0, entry)
        self._tj_keep.insert(0, keepalive)
        dropped = self._tj_keep[MAX_SPECIALIZATIONS:]
        del self._tj_entries[MAX_SPECIALIZATIONS:], self._tj_keep[MAX_SPECIALIZATIONS:]
        return dropped

    def clear_specializations(self):
        self._tj_entries, self._tj_keep = [], []

    @property
    def _tj_nspec(self):
        return len(self._tj_entries)


_fast_dispatch = None


def __getattr__(name):
    # ``FastDispatch`` is built on first use: it compiles a small module (~tens of ms).
    global _fast_dispatch
    if name == "FastDispatch":
        if _fast_dispatch is None:
            _fast_dispatch = make_dispatch_type(
                "FastDispatch", doc="A callable with native fast-path specialisations.")
        return _fast_dispatch
    raise AttributeError(name)
