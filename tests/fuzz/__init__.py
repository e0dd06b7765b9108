"""A differential fuzzer for tracejit: random NumPy programs on the llvm backend against the
interpreter, with transforms, threads/tiers and memory checks. See README.md in this folder."""
