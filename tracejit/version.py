"""The package's version, in a module of its own so that the modules that read it (the disk
cache's keys in backend/engine/jit.py, artifacts' producer string in api.py) import no more
than this: nothing below the package root imports the root (tests/test_import_layout.py)."""

__version__ = "0.1.0"
