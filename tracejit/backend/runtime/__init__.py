"""Running compiled graphs: ``executable`` (plan, emit, compile, call; hybrid programs with
NumPy fallbacks, ``control_fallback`` for control flow driven from Python), ``stack_arrays``
(NumPy arrays in and out of stack descriptors), the native CPython entries (``pyobj``: the
object layout, ``pyabi``: one entry per signature, ``pyabi_reuse``: output reuse,
``pyabi_dispatch``: the dispatch type) and the hot tier (``tiers``).

Invariant: the top of the backend: it may import every other part, and nothing in the backend
imports it (the front end does, through ``backend/__init__.py`` and these modules).
"""
