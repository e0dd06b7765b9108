"""The primitive set, grouped by kind. Importing this package defines every primitive once."""
from . import elementwise, reductions, structural, contraction, control, fft, sorting  # noqa: F401
from ..core import REGISTRY  # noqa: F401
