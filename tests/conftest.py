"""Shared test setup: IR verification after every pass (``check_ir`` also runs the backend's plan
verifier after every partition and buffer plan), hypothesis profile for CI."""
import os

import pytest
from hypothesis import HealthCheck, settings

import tracejit

tracejit.config.check_ir = True

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="module")
def interpret_backend():
    """Run a module on the reference interpreter (tests of transforms and of the NumPy layer;
    the llvm backend is checked against the interpreter in test_backend_*)."""
    saved = tracejit.config.backend
    tracejit.config.backend = "interpret"
    yield
    tracejit.config.backend = saved


@pytest.fixture(params=["llvm", "interpret"])
def backend(request):
    """Run a test once on each backend (the llvm backend and its oracle, the interpreter)."""
    saved = tracejit.config.backend
    tracejit.config.backend = request.param
    yield request.param
    tracejit.config.backend = saved
