from . import functional, attention  # noqa: F401
