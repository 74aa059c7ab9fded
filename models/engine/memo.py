"""The cache types of :mod:`models`: a bounded memo (most recently used kept) and a table whose
entries are made when first read.

Caches in :mod:`models` are attributes of the object they belong to (a
:class:`models.engine.fabric.PreparedFabric`, its :class:`~models.engine.nccl.system.NcclSystem`),
never module globals. Most are plain dicts bounded by what they key (GPU sets of one fabric); a memo
shared between fabrics, such as the channel searches of the variants of a what-if sweep, is bounded
by count instead.

Examples
--------
>>> memo = BoundedMemo(2)
>>> memo.put("a", 1); memo.put("b", 2); memo.get("a"); memo.put("c", 3)
1
>>> memo.get("b") is None, memo.get("a"), len(memo)
(True, 1, 2)
>>> squares = LazyTable(lambda k: k * k)
>>> squares[3], dict(squares)
(9, {3: 9})
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["BoundedMemo", "LazyTable"]


class BoundedMemo:
    """A mapping of at most ``size`` entries that drops the least recently used.

    Parameters
    ----------
    size : int
        Entries kept.
    """

    __slots__ = ("size", "_entries")

    def __init__(self, size: int = 256):
        self.size = size
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, default=None):
        """The value of ``key`` (now the most recently used), or ``default``."""
        try:
            self._entries.move_to_end(key)
        except KeyError:
            return default
        return self._entries[key]

    def put(self, key, value) -> None:
        """Keep ``value`` for ``key``, dropping the least recently used entry beyond ``size``."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class LazyTable(dict):
    """A dict whose entry for a key is ``make(key)``, made the first time the key is read and then
    kept: for tables of which a caller reads a few entries of many (a key present is read at
    dict speed).

    Parameters
    ----------
    make : callable
        ``make(key)``: the entry of ``key``.
    """

    __slots__ = ("make",)

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, key):
        value = self[key] = self.make(key)
        return value
