"""The dgx-topo version, written once (pyproject.toml reads it; ``topo.__version__`` and
``models.__version__`` are this)."""

__version__ = "0.4.0"
