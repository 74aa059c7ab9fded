"""dgx-topo models: what a fabric delivers, and the ``dgxtopo`` command line.

The cost layer imports :mod:`topo`, never the reverse, and does not import plotly.
"""

__all__: list[str] = []
