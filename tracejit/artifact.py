"""Artifacts: the compiled signatures of a function as portable files.

An ``Artifact`` holds ``Entry`` records, one per compiled signature: the signature (the cache
key of ``signature.py``), the simplified graph, the output structure, and optionally the
object code of the graph's modules for one or more hosts. As files::

    manifest.json      {"format": "tracejit-artifact", "version": 1,
                        "producer": "tracejit 0.1.0", "name": "loss", "entries": [{"variant", "signature", "backend",
                        "ir": "0.ir.json", "outputs", "range_facts",
                        "objects": [{"file": "0.0.o", "key", "symbols", "opt", "cpu",
                                     "features", "llvmlite", "mac"}]}]}
    0.ir.json          the graph (serialize.py: versioned JSON that reads back exactly)
    0.0.o              object code (an ELF object for that CPU, features and llvmlite)

``save(directory)`` / ``load(directory)`` write and read those files; ``to_bytes`` /
``from_bytes`` carry them in one uncompressed zip (what a pickled function holds).

Trust: reading an artifact runs nothing. The manifest and graphs are JSON read by
``serialize.py`` (no pickle, no import); a graph is verified before use. Object code is run
only when its record's MAC verifies with this user's secret (``diskcache.seal``: the key of
the user's trusted cache directory) and its cache key is the one of the module compiled from
the graph here (a hash of the LLVM IR, CPU name and features, llvmlite and tracejit versions).
So an artifact from another user or machine, or for another CPU, is recompiled from its IR;
one from this user on this host (a pickle sent to a local worker process) loads its objects.

This module is data only: ``api.py`` and ``derivatives.py`` make entries from their caches
and give entries back to them (``Traced.export_artifact`` / ``load_artifact``).
"""
from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import zipfile
from typing import Any

from . import serialize
from .ir import Graph
from .serialize import SerializeError

log = logging.getLogger("tracejit")

FORMAT = "tracejit-artifact"
VERSION = 1
MANIFEST = "manifest.json"
_OBJECT_FIELDS = ("key", "symbols", "opt", "cpu", "features", "llvmlite", "mac")


class ArtifactError(Exception):
    """An artifact that cannot be written or read (named: which entry, which field)."""


@dataclasses.dataclass
class Entry:
    """One compiled signature of a function.

    ``variant``: which trace of a derivative object it belongs to (its static arguments and
    options; None for a traced function). ``outputs``: ``tree`` (the output TreeDef),
    ``writes`` (the argument write-back, a dict of ``api.WriteBack`` fields, or None),
    ``arrays0d`` and ``values`` (frozensets of output / argument leaf positions).
    ``objects``: records of ``backend.sealed_objects`` (dicts with ``data`` bytes)."""
    variant: Any
    signature: Any
    backend: str
    graph: Graph
    outputs: dict
    range_facts: frozenset
    objects: list


def portable(entries, strict: bool, name: str) -> list:
    """The entries that have a data form. Another (a static argument that is an arbitrary
    object) raises ``ArtifactError`` when ``strict``, else it is left out (logged)."""
    out = []
    for e in entries:
        try:
            _encode_entry(0, e, {})
        except SerializeError as err:
            if strict:
                raise ArtifactError(f"{name}: signature {e.signature.types} has no data "
                                    f"form: {err}") from None
            log.debug("tracejit: %s: signature left out of the artifact: %s", name, err)
            continue
        out.append(e)
    return out


def _encode_entry(k: int, e: Entry, files: dict) -> dict:
    ir_name = f"{k}.ir.json"
    files[ir_name] = serialize.dumps(e.graph).encode()
    objects = []
    for j, rec in enumerate(e.objects):
        name = f"{k}.{j}.o"
        files[name] = rec["data"]
        objects.append(dict({f: rec[f] for f in _OBJECT_FIELDS}, file=name))
    return {"variant": serialize.encode_value(e.variant),
            "signature": serialize.encode_value(e.signature),
            "backend": e.backend, "ir": ir_name,
            "outputs": serialize.encode_value(e.outputs),
            "range_facts": serialize.encode_value(e.range_facts),
            "objects": objects}


def _decode_entry(rec: dict, files) -> Entry:
    objects = []
    for o in rec["objects"]:
        data = files.get(o["file"])
        if data is not None:             # a missing object is compiled, not an error
            objects.append(dict({f: o[f] for f in _OBJECT_FIELDS}, data=data))
    return Entry(serialize.decode_value(rec["variant"]),
                 serialize.decode_value(rec["signature"]), str(rec["backend"]),
                 serialize.loads(files[rec["ir"]]),
                 serialize.decode_value(rec["outputs"]),
                 serialize.decode_value(rec["range_facts"]), objects)


class Artifact:
    """Compiled signatures of one function (``entries``), as files (see the module docstring).

    Made by ``f.export_artifact()`` of a traced function or derivative object; given to
    ``f.load_artifact(artifact)`` of the same function in another process, which then runs
    those signatures without tracing (and without compiling where the object code is
    trusted: this user, this host)."""

    def __init__(self, entries: list, name: str = "", producer: str = ""):
        self.entries = list(entries)
        self.name = name
        self.producer = producer        # e.g. "tracejit 0.1.0" (information only)

    def __repr__(self):
        n = sum(len(e.objects) for e in self.entries)
        return f"<tracejit Artifact {self.name!r}: {len(self.entries)} signature(s), " \
               f"{n} object(s)>"

    # files -------------------------------------------------------------------------------------
    def files(self) -> dict:
        """{file name: bytes}: the manifest, one IR file per entry, the object files."""
        files: dict = {}
        entries = [_encode_entry(k, e, files) for k, e in enumerate(self.entries)]
        manifest = {"format": FORMAT, "version": VERSION, "producer": self.producer,
                    "name": self.name, "entries": entries}
        files[MANIFEST] = json.dumps(manifest, indent=1, allow_nan=False).encode()
        return files

    @classmethod
    def from_files(cls, files) -> "Artifact":
        """The artifact of ``files`` (a mapping of names to bytes, as ``files()`` gives)."""
        try:
            manifest = json.loads(files[MANIFEST])
        except (KeyError, ValueError) as e:
            raise ArtifactError(f"no readable {MANIFEST}: {e}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArtifactError("not a tracejit artifact (manifest format)")
        if manifest.get("version") != VERSION:
            raise ArtifactError(f"artifact version {manifest.get('version')!r}; this tracejit "
                                f"reads version {VERSION}")
        entries = []
        for k, rec in enumerate(manifest.get("entries", [])):
            try:
                entries.append(_decode_entry(rec, files))
            except (SerializeError, KeyError, TypeError, ValueError) as e:
                raise ArtifactError(f"entry {k} of the artifact: {e}") from None
        return cls(entries, str(manifest.get("name", "")), str(manifest.get("producer", "")))

    def save(self, directory: str) -> None:
        """Write the files into ``directory`` (created if missing)."""
        os.makedirs(directory, exist_ok=True)
        for name, data in self.files().items():
            with open(os.path.join(directory, name), "wb") as f:
                f.write(data)

    @classmethod
    def load(cls, directory: str) -> "Artifact":
        """The artifact saved in ``directory`` (only the files its manifest names are read)."""
        def read(name):
            if os.path.basename(name) != name or name.startswith("."):
                raise ArtifactError(f"file name {name!r} in the manifest")
            with open(os.path.join(directory, name), "rb") as f:
                return f.read()
        manifest = read(MANIFEST)
        try:
            doc = json.loads(manifest)
            names = {e[k] for e in doc.get("entries", []) for k in ("ir",)} | \
                {o["file"] for e in doc.get("entries", []) for o in e.get("objects", [])}
        except (ValueError, AttributeError, KeyError, TypeError) as e:
            raise ArtifactError(f"unreadable {MANIFEST}: {e}") from None
        files = {MANIFEST: manifest}
        for name in names:
            try:
                files[name] = read(name)
            except FileNotFoundError:
                if name.endswith(".o"):
                    continue
                raise
        return cls.from_files(files)

    def to_bytes(self) -> bytes:
        """The files in one uncompressed zip archive."""
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
            for name, data in sorted(self.files().items()):
                z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Artifact":
        """The artifact of ``to_bytes``."""
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                files = {name: z.read(name) for name in z.namelist()}
        except zipfile.BadZipFile as e:
            raise ArtifactError(f"not an artifact archive: {e}") from None
        return cls.from_files(files)
