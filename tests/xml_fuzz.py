"""What the XML readers' tests feed them to show that hostile or broken text raises only their
typed error: entity expansion, an external entity, truncated and undecodable text, and one
attribute of a valid document set to any value (the readers use defusedxml; these check that
what gets through is refused by name)."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr


def hostile_texts(root: str) -> list:
    """Texts no XML reader may accept, for a document whose root element is ``root``: a billion
    laughs, an external entity (XXE), an unclosed root, nothing, no XML, undecodable bytes and a
    number instead of text."""
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
              f'<{root} version="&lol2;"/>')
    xxe = (f'<?xml version="1.0"?><!DOCTYPE {root} [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
           f'<{root} version="&xxe;"/>')
    return [laughs, xxe, f"<{root}".encode(), "", "not xml", b"\xff\xfe<" + root.encode() + b"/>", 42]


def with_attribute(text: str, name: str, value: str, nth: int) -> str | None:
    """``text`` with the value of one occurrence of attribute ``name`` (the ``nth``, counted
    round the occurrences) replaced by ``value``, quoted; None when ``text`` has no such attribute."""
    parts = text.split(f' {name}="')
    if len(parts) < 2:
        return None
    i = 1 + nth % (len(parts) - 1)
    rest = parts[i].split('"', 1)[1]
    out = f' {name}="'.join(parts[:i]) + f" {name}={quoteattr(value)}" + rest
    return out if i + 1 >= len(parts) else out + f' {name}="' + f' {name}="'.join(parts[i + 1:])
