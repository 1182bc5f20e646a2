"""Signatures that make every score reproducible (in the manner of sacrebleu's).

A :class:`Signature` is a string ``name|key:value|key:value...`` that knows its parts: the scorer that made a number
builds it in one place, and every resume or cache check compares the whole string. Booleans are written
``yes``/``no``.

>>> sig = Signature.build("logprob", {"model": "m@rev", "eot": True})
>>> sig
'logprob|model:m@rev|eot:yes'
>>> sig.fields["eot"], sig.renamed("logprob_style")
('yes', 'logprob_style|model:m@rev|eot:yes')
>>> Signature.parse("logprob|model:m@rev|eot:yes") == sig
True
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
            text = str(value)
            if "|" in key or ":" in key or "|" in text:
                raise ValueError(f"signature field {key!r}: keys hold no ':' or '|', values no '|' (got {text!r})")
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


def _split(text: str) -> tuple[str, dict[str, str]]:
    name, *rest = text.split("|")
    fields = {}
    for part in rest:
        if ":" not in part:
            raise ValueError(f"not a signature: field {part!r} of {text!r} has no ':'")
        key, value = part.split(":", 1)
        fields[key] = value
    return name, fields


def format_signature(name: str, fields: Mapping[str, object]) -> Signature:
    """``name|key:value|key:value...`` (:meth:`Signature.build`); booleans are written ``yes``/``no``."""
    return Signature.build(name, fields)


def parse_signature(signature: str) -> tuple[str, dict[str, str]]:
    """Inverse of :func:`format_signature` (values come back as strings)."""
    sig = Signature.parse(signature)
    return sig.name, dict(sig.fields)
