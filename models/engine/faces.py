"""Package faces (:func:`topo.faces.lazy_face`, the one helper of the ``topo`` and ``models``
faces, on the ground floor so that ``topo`` may use it too)."""

from __future__ import annotations

from topo.faces import lazy_face

__all__ = ["lazy_face"]
