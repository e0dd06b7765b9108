"""Shared test setup: IR verification after every pass, hypothesis profile for CI."""
import os

from hypothesis import HealthCheck, settings

import tracejit

tracejit.config.check_ir = True

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")
