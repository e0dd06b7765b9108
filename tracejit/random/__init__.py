"""tracejit.random: counter-based random numbers with explicit keys, usable inside traces."""
from ._threefry import key, PRNGKey, split, fold_in, threefry_2x32  # noqa: F401
from ._samplers import *  # noqa: F401,F403
from ._gamma import *  # noqa: F401,F403
