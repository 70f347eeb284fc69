"""The ``%XX`` escapes of stored concept graphs: which characters the list form writes escaped,
how one character is written, how escapes are read back (the PENMAN roles use the same codes).

A character that would change what :func:`grapher_core.metadata.read_list` reads back (``%``, a
delimiter, a colon after a space, whitespace at either end, a leading ``[``) is written as
``%XX`` / ``%uXXXX`` / ``%UXXXXXXXX``, so a stored concept or role comes back exactly.
"""

from __future__ import annotations

import re

from grapher_core.errors import InputError

#: Always escaped: the escape itself and every list delimiter ``read_list`` splits on.
_ALWAYS_ESCAPED = frozenset("%|;,\n\r")
_ESCAPE = re.compile(r"%(?:([0-9A-F]{2})|u([0-9A-F]{4})|U([0-9A-F]{8}))")
#: Whether a concept (or a role) holds anything :func:`escape` would change: most do not.
_NEEDS_ESCAPE = re.compile(r"[%|;,\n\r]| :|^\[|^\s|\s$")
_ROLE_NEEDS_ESCAPE = re.compile(r"[%|;,\s]|^\[")


def code(ch: str) -> str:
    """One character as its escape, in the shortest of the three widths that holds it."""
    point = ord(ch)
    if point < 0x100:
        return f"%{point:02X}"
    return f"%u{point:04X}" if point < 0x10000 else f"%U{point:08X}"


def escape(text: str, role: bool = False) -> str:
    """``text`` with the characters the list form would lose or misread written as ``%XX``:
    see the module docstring. Roles also escape all whitespace (the form's role is one word)."""
    if not isinstance(text, str) or not text:
        raise InputError(
            f"a concept graph's concepts and roles must be non-empty strings, got {text!r}"
        )
    if (_ROLE_NEEDS_ESCAPE if role else _NEEDS_ESCAPE).search(text) is None:
        return text
    last = len(text) - 1
    out: list[str] = []
    for i, ch in enumerate(text):
        if (
            ch in _ALWAYS_ESCAPED
            or (ch.isspace() and (role or i == 0 or i == last))
            or (ch == ":" and i > 0 and text[i - 1] == " ")
            or (ch == "[" and i == 0)
        ):
            out.append(code(ch))
        else:
            out.append(ch)
    return "".join(out)


def unescape(text: str) -> str:
    """``text`` with every escape :func:`code` writes read back as its character."""
    if "%" not in text:
        return text
    return _ESCAPE.sub(_unescaped_code, text)


def _unescaped_code(match: re.Match[str]) -> str:
    point = int(next(g for g in match.groups() if g), 16)
    return chr(point) if point <= 0x10FFFF else match.group(0)  # not ours: kept as written
