"""The report's analysis of the built-in systems, computed once and shipped as data.

Most of ``dgxtopo report``'s time is model work that is the same for every user: NCCL's channel
searches and estimates of the built-in systems, the bounds of every GPU set, the planner's layouts,
the simulated steps, and the drawings of their fabrics and channels.
:mod:`models.present.report.analysis` computes each section once per content: it reads a section
from the shipped file (``data/analysis.json.gz``) when the file holds a record under that section's
:func:`fingerprint` (a digest of what a user can change: the fabrics' whole graphs, the NCCL
release, the section's parameters), and computes it otherwise (any other fabric, release or
option). The models' code is not in the key: the file ships with the code that wrote it, and the
tests recompute it (a sample always, the whole file in the check marked slow, ``python -m pytest
-m slow``, which CI runs), so a model change that moves a shipped number fails them until the
file is rewritten.

The records are the analysis's own result objects (frozen dataclasses, numpy arrays, enums,
tuples and dicts), written by :func:`encode` and read back equal by :func:`decode`: the page is
drawn from the same objects either way. ``tests/models/present/test_shipped_analysis.py``
recomputes the file and compares. After a change to a model the report reads, rewrite it from the
repository root (about 5 s of CPU)::

    python -c "from models.present.report.analysis import write_shipped_analysis as w; w()"

Examples
--------
>>> import numpy as np
>>> from topo.units import GiB
>>> value = {"sizes": np.array([8, GiB]), "pair": (0, 3), 2: None}
>>> back = decode(json.loads(json.dumps(encode(value))))
>>> back["pair"], back[2], back["sizes"].dtype == value["sizes"].dtype
((0, 3), None, True)
"""

from __future__ import annotations

import dataclasses
import enum
import gzip
import hashlib
import importlib
import json
import os
from importlib import resources
from pathlib import Path
from types import MappingProxyType

import numpy as np

from topo.errors import DgxTopoError

__all__ = ["SHIPPED_FILE", "NO_RECORDS", "encode", "decode", "loads", "fingerprint", "shipped_records",
           "shipped_record", "shipped_text", "shipped_text_of_file", "write_shipped"]

#: The shipped file, package data of :mod:`models.present.report`.
SHIPPED_FILE = ("data", "analysis.json.gz")

# Keys of the encoding: a one-character key marks a value JSON has no type for.
_TUPLE, _DICT, _ARRAY, _SCALAR, _ENUM, _CLASS, _SET = "(", "{", "#", "0", "!", "@", "|"


def _qualified(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(name: str):
    module, _, qualname = name.partition(":")
    if not module.startswith(("models.", "topo.")):
        raise DgxTopoError(f"shipped analysis names class {name!r}: expected a class of models or topo")
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def encode(value, classes=None):
    """A JSON-able form of an analysis result that :func:`decode` reads back equal.

    Frozen dataclasses (every field, in field order, and their class), numpy arrays and scalars
    (with their dtype), enums, tuples, sets and dicts with any keys; JSON's own types as they are.

    Parameters
    ----------
    value : object
    classes : dict, optional
        Class name -> number, filled as classes are met: a dataclass is written with its class's
        number (the file holds the names once, in that order). Default: the names inline.

    Raises
    ------
    topo.DgxTopoError
        For a value of another type.
    """
    def again(x):
        return encode(x, classes)

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):  # before int: IntEnum members are ints
        return {_ENUM: _qualified(type(value)), "v": value.name}
    if type(value) in (int, float):  # exactly: a subclass (numpy's float64) is encoded below
        return value
    if isinstance(value, np.ndarray):
        return {_ARRAY: value.dtype.str, "v": value.tolist()}
    if isinstance(value, np.generic):
        return {_SCALAR: value.dtype.str, "v": value.item()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {_TUPLE: [again(v) for v in value]}
    if type(value) is list:
        return [again(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return {_SET: [again(v) for v in sorted(value, key=repr)], "frozen": isinstance(value, frozenset)}
    if type(value) is dict:
        return {_DICT: [[again(k), again(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = _qualified(type(value))
        if classes is not None:
            name = classes.setdefault(name, len(classes))
        return {_CLASS: name, "v": [again(getattr(value, f.name)) for f in dataclasses.fields(value)]}
    raise DgxTopoError(f"cannot ship a {type(value).__name__}: expected dataclasses, numpy arrays, enums, "
                       "tuples, lists, sets, dicts and JSON values")


def decode(data, classes=()):
    """The value :func:`encode` was given, from its (parsed) encoding.

    Parameters
    ----------
    data : object
    classes : sequence of str, optional
        The class names by number, when :func:`encode` was given a ``classes`` dict.
    """
    return _Decoder(classes).value(data)


def loads(text: str, classes=()):
    """:func:`decode` of ``text``, decoded as JSON is parsed (json's ``object_hook``): what a shipped
    record costs to read is the parse.

    >>> loads(json.dumps(encode({"pair": (0, 3), "sizes": np.array([8, 16])})))["pair"]
    (0, 3)
    """
    return json.loads(text, object_hook=_Decoder(classes).tagged)


class _Decoder:
    """One decoding: each class named is resolved once (a record holds thousands of objects of a
    few dozen classes)."""

    def __init__(self, classes):
        self.names = list(classes)
        self.classes = {}

    def _class(self, name):
        if name not in self.classes:
            cls = _resolve(self.names[name] if isinstance(name, int) else name)
            self.classes[name] = (cls, tuple(f.name for f in dataclasses.fields(cls)))
        return self.classes[name]

    def value(self, data):
        """``data`` decoded bottom up, as json's ``object_hook`` decodes it while parsing: lists
        rebuilt, every object its :meth:`tagged` value."""
        if type(data) is list:
            return [self.value(item) if type(item) is list or type(item) is dict else item for item in data]
        if type(data) is dict:
            return self.tagged({key: self.value(item) for key, item in data.items()})
        return data

    def tagged(self, data: dict):
        """The value of one encoded object whose members are decoded already (every JSON object
        of an encoding is one of these forms: :func:`encode` writes a dict as ``{"{": pairs}``)."""
        if _CLASS in data:
            name = data[_CLASS]
            cls, names = self.classes[name] if name in self.classes else self._class(name)
            value = object.__new__(cls)  # frozen: set the fields as dataclasses' __init__ does
            for name, v in zip(names, data["v"], strict=True):
                object.__setattr__(value, name, v)
            return value
        if _TUPLE in data:
            return tuple(data[_TUPLE])
        if _ARRAY in data:
            return np.array(data["v"], dtype=np.dtype(data[_ARRAY]))
        if _DICT in data:
            return {k: v for k, v in data[_DICT]}
        if _SCALAR in data:
            return np.dtype(data[_SCALAR]).type(data["v"])
        if _ENUM in data:
            return _resolve(data[_ENUM])[data["v"]]
        if _SET in data:
            return (frozenset if data["frozen"] else set)(data[_SET])
        raise DgxTopoError(f"unreadable shipped value with keys {sorted(data)[:4]}: expected an encode() result")


def fingerprint(section: str, *parts) -> str:
    """The key of one section's record: a digest of the section's name and of what determines its
    numbers (each part's text: a fabric's whole graph and release, a parameter)."""
    text = "\n".join([section, *map(str, parts)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: A shipped file with no record: every section is computed.
NO_RECORDS = MappingProxyType({"classes": (), "records": MappingProxyType({})})


def _path():
    return resources.files(__package__).joinpath(*SHIPPED_FILE)


def shipped_records() -> dict:
    """The shipped file, parsed: ``{"classes": [...], "records": {key: record}}``, each record's
    value still JSON text (:func:`shipped_record` reads the ones asked for); :data:`NO_RECORDS`
    when the file is missing."""
    try:
        data = gzip.decompress(_path().read_bytes())
    except FileNotFoundError:
        return NO_RECORDS
    return json.loads(data)


def shipped_record(key: str, records=None):
    """The decoded value shipped under ``key``, or None when the file has no such record.

    Parameters
    ----------
    key : str
        A :func:`fingerprint`.
    records : dict, optional
        The parsed file (:func:`shipped_records`), when a caller reads several records; default:
        read it.
    """
    records = shipped_records() if records is None else records
    record = records["records"].get(key)
    return None if record is None else loads(record["value"], records["classes"])


def shipped_text(records) -> str:
    """The file's text for ``{key: (section, label, value)}``: one line per record, in key order,
    each value :func:`encode` d (with one table of class names for the file)."""
    classes = {}
    lines = [json.dumps(key) + ":" + json.dumps({"section": section, "label": label,
                                                  "value": json.dumps(encode(value, classes), separators=(",", ":"))})
             for key, (section, label, value) in sorted(records.items())]
    return ("{\"classes\":" + json.dumps(list(classes)) + ",\n\"records\":{\n" + ",\n".join(lines) + "}}\n")


def shipped_text_of_file() -> str:
    """The shipped file's text (decompressed), "" when there is none."""
    try:
        return gzip.decompress(_path().read_bytes()).decode("utf-8")
    except FileNotFoundError:
        return ""


def write_shipped(text: str):
    """Write the shipped file (gzip, reproducible: no time stamp) from :func:`shipped_text`; a
    developer's step (the package's data), atomic."""
    path = Path(str(_path()))
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(gzip.compress(text.encode("utf-8"), 9, mtime=0))
    os.replace(temporary, path)
    return path
