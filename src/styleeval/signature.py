"""Signatures that make every score reproducible (in the manner of sacrebleu's).

A :class:`Signature` is a string ``name|key:value|key:value...`` that knows its parts: the scorer that made a number
builds it in one place, and every resume or cache check compares the whole string. Booleans are written
``yes``/``no``. A value may itself be a signature (a masked metric's inner metric): it is written in brackets,
``inner:[s_bleu|tok:13a]``, and parses back as a :class:`Signature`. A plain value may hold balanced brackets
after its first character (sacrebleu's ``smooth:floor[0.10]``): only a value that starts with ``[`` is nested.

>>> sig = Signature.build("logprob", {"model": "m@rev", "eot": True})
>>> sig
'logprob|model:m@rev|eot:yes'
>>> sig.fields["eot"], sig.renamed("logprob_style")
('yes', 'logprob_style|model:m@rev|eot:yes')
>>> Signature.parse("logprob|model:m@rev|eot:yes") == sig
True
>>> outer = Signature.build("s_masked_bleu", {"mask": "words", "inner": Signature.build("s_bleu", {"tok": "13a"})})
>>> outer
's_masked_bleu|mask:words|inner:[s_bleu|tok:13a]'
>>> Signature.parse(outer).fields["inner"].fields
{'tok': '13a'}
"""

from __future__ import annotations

from collections.abc import Mapping


class Signature(str):
    """A signature string with its ``name`` and ``fields`` (values as strings, in order).

    It is a ``str``, so it is written, compared and hashed as the text itself; two signatures are equal exactly
    when every field is.
    """

    name: str
    fields: dict[str, str]
    """Field values in order: strings, or :class:`Signature` for a nested signature."""

    def __new__(cls, text: str) -> Signature:
        name, fields = _split(text)
        obj = super().__new__(cls, text)
        obj.name, obj.fields = name, fields
        return obj

    @classmethod
    def build(cls, name: str, fields: Mapping[str, object]) -> Signature:
        """``name|key:value|...`` from a name and ordered fields (booleans as ``yes``/``no``)."""
        if not name or "|" in name:
            raise ValueError(f"a signature name must be non-empty and hold no '|', got {name!r}")
        parts = [name]
        for key, value in fields.items():
            if isinstance(value, bool):
                value = "yes" if value else "no"
            if isinstance(value, Signature):
                text = f"[{value.format()}]"
            else:
                text = str(value)
                if "|" in text or text.startswith("[") or not _balanced(text):
                    raise ValueError(f"signature field {key!r}: a value holds no '|', starts with no '[' and holds "
                                     f"brackets only in pairs (got {text!r}); nest a Signature instead")
            if not key or any(c in key for c in "|:[]"):
                raise ValueError(f"signature field {key!r}: keys hold no ':', '|', '[' or ']'")
            parts.append(f"{key}:{text}")
        return cls("|".join(parts))

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The signature written as ``text`` (``ValueError`` if it is not one)."""
        if not isinstance(text, str) or not text:
            raise ValueError(f"not a signature: {text!r}")
        return cls(text)

    def format(self) -> str:
        """The signature as plain text."""
        return str.__str__(self)

    def renamed(self, name: str) -> Signature:
        """The same fields under another name (a metric wrapper's ``logprob_style|...``)."""
        return Signature.build(name, self.fields)

    def __reduce__(self):  # pickles as its text
        return (Signature, (self.format(),))


def _top_level(text: str) -> list[str]:
    """``text`` split at the ``|`` outside brackets (``ValueError`` on unbalanced brackets)."""
    parts, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"not a signature: unbalanced ']' in {text!r}")
        elif c == "|" and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    if depth:
        raise ValueError(f"not a signature: unbalanced '[' in {text!r}")
    parts.append(text[start:])
    return parts


def _split(text: str) -> tuple[str, dict[str, str]]:
    name, *rest = _top_level(text)
    if not name or any(c in name for c in "[]"):
        raise ValueError(f"not a signature: name {name!r} of {text!r}")
    fields: dict[str, str] = {}
    for part in rest:
        if ":" not in part:
            raise ValueError(f"not a signature: field {part!r} of {text!r} has no ':'")
        key, value = part.split(":", 1)
        if value.startswith("[") and value.endswith("]") and _top_level(value[1:-1]) is not None:
            fields[key] = Signature(value[1:-1])
        elif value.startswith("[") or not _balanced(value):
            raise ValueError(f"not a signature: field {key!r} of {text!r} holds a bracket outside a nested signature")
        else:
            fields[key] = value
    return name, fields


def _balanced(text: str) -> bool:
    """Whether every ``[`` of ``text`` is closed by a later ``]`` and no ``]`` comes first."""
    depth = 0
    for c in text:
        depth += (c == "[") - (c == "]")
        if depth < 0:
            return False
    return depth == 0
