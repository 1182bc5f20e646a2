"""Chat templates rendered as untrusted input: transformers' sandbox, bounded.

A chat template comes with the model (a GGUF file's ``tokenizer.chat_template``, a tokenizer's
``chat_template.jinja``), and a model file is untrusted input. transformers renders templates in Jinja's
``ImmutableSandboxedEnvironment``, which runs no code outside the template but bounds nothing: ``{{ 'x' * 10**10 }}``
builds a 10 GB string, two nested loops over ``range(100000)`` run for hours, and every refusal (a ``SecurityError``,
an ``UndefinedError``, a ``RecursionError``...) ends in a traceback (issue 59). :func:`render_chat` renders a
conversation exactly as ``tokenizer.apply_chat_template(..., tokenize=False)`` does -- the same environment
(trim_blocks, lstrip_blocks, the ``generation`` tag and loop controls; transformers' ``tojson``, ``raise_exception``,
``strftime_now``, ``dict`` and ``namespace``), the same variables (the tokenizer's special tokens, then the keywords;
messages without their ``None`` fields), the same text, tested side by side on every template of the shared folder --
within three bounds per rendering, each refused before it is passed:

- :data:`MAX_TEXT` characters made in all: every value the template makes (an operator's result, a call's, a filter's,
  a slice, a ``~`` concatenation, the text a block or the whole template writes) is counted, and an operation whose
  result would pass what is left (a string times a count, a join, a replace, a padding width, a format width, an
  integer power...) is refused before it runs, so that the memory a rendering holds stays within a few times
  :data:`MAX_TEXT` bytes;
- :data:`MAX_STEPS` steps: every loop iteration, call and filter (a loop nest or a recursion that would run for
  hours stops within a second or two);
- :data:`MAX_SECONDS` seconds of wall-clock time, a backstop.

The first two make a refusal a function of the template and its input, never of the machine's load. Every failure of a
template -- a bound, a sandbox refusal, the template's own ``raise_exception``, a syntax error, a recursion too deep --
is one :class:`ChatTemplateError` (a :class:`~styleeval.errors.UserError`) naming the template's owner and the reason.

>>> class Tokenizer:
...     special_tokens_map = {"eos_token": "</s>"}
...     name_or_path = "models/hostile.gguf"
>>> render_chat(Tokenizer(), "{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
...             [{"role": "user", "content": "Hi"}], add_generation_prompt=True)
'Hi</s>'
>>> render_chat(Tokenizer(), "{{ 'x' * 10**10 }}", [{"role": "user", "content": "Hi"}], add_generation_prompt=True)
Traceback (most recent call last):
...
styleeval.templates.ChatTemplateError: the chat template of 'models/hostile.gguf' cannot be rendered: it makes more than 16,777,216 characters (a string of 1 character repeated 10000000000 times)
"""

from __future__ import annotations

import builtins
import copy
import functools
import json
import operator
import re
import string
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.runtime
import jinja2.sandbox
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from styleeval.errors import UserError

MAX_TEXT = 1 << 24
"""Characters (or list and mapping entries) one rendering may make in all: 16,777,216. A chat prompt is a few
thousand characters, a long document's a few hundred thousand."""
MAX_STEPS = 1 << 20
"""Loop iterations, calls and filters one rendering may run: 1,048,576 (a prompt takes hundreds)."""
MAX_SECONDS = 10.0
"""Wall-clock seconds one rendering may take (a backstop: the steps bound it first)."""
MAX_INT_BITS = 1 << 16
"""The largest integer a template may make: 65,536 bits (19,729 digits; Python prints at most 4,300)."""


class ChatTemplateError(UserError):
    """A chat template that cannot be rendered: ``source`` says whose (``of 'models/x.gguf'``, ``given as
    chat_template=``), ``reason`` why (a bound passed, a sandbox refusal, the template's own ``raise_exception``: then
    ``raised`` is true and ``reason`` its message)."""

    def __init__(self, source: str, reason: str, raised: bool = False) -> None:
        self.source, self.reason, self.raised = source, reason, raised
        super().__init__(f"the chat template {source} cannot be rendered: {reason}")


class _Refused(Exception):
    """A bound passed inside a rendering (the reason); made a :class:`ChatTemplateError` by :func:`render_chat`."""


class _Raised(jinja2.TemplateError):
    """The template's own ``raise_exception(message)``."""


class _Budget:
    """What one rendering may still make and run."""

    __slots__ = ("text", "steps", "deadline")

    def __init__(self) -> None:
        self.text, self.steps, self.deadline = MAX_TEXT, MAX_STEPS, time.monotonic() + MAX_SECONDS

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise _Refused(f"it runs more than {MAX_STEPS:,} steps (loop iterations, calls and filters)")
        if not self.steps & 0x3FF and time.monotonic() > self.deadline:
            raise _Refused(f"it runs for more than {MAX_SECONDS:g} s")

    def need(self, size: int, what: str) -> None:
        if size > self.text:
            raise _Refused(f"it makes more than {MAX_TEXT:,} characters ({what})")

    def spend(self, size: int, what: str) -> None:
        self.need(size, what)
        self.text -= size


_BUDGET: ContextVar[_Budget | None] = ContextVar("styleeval_template_budget", default=None)


def _budget() -> _Budget:
    """The current rendering's budget (a fresh one for work done outside a rendering: Jinja folding constants while
    it compiles)."""
    return _BUDGET.get() or _Budget()


def _size(value: Any, limit: int) -> int:
    """About how many characters ``str(value)`` would make, counted up to just past ``limit`` (a shared value counted
    wherever it appears, as its text repeats it; a cycle stops at the limit)."""
    if isinstance(value, (str, bytes)):
        return len(value)
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item) + 2
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        elif isinstance(item, float):
            total += 24
        elif isinstance(item, Mapping):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, Namespace):
            total += 16
            stack.append(dict(item._Namespace__attrs))  # type: ignore[attr-defined]  # its repr shows them
        else:
            total += 64
    return total


def _check_counts(budget: _Budget, args: Iterable[Any], what: str) -> None:
    """An integer argument larger than what is left (a width, a count, a size) is refused before the call."""
    for value in args:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > budget.text:
            raise _Refused(f"it makes more than {MAX_TEXT:,} characters ({what} with the count {value})")


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")


def _percent_size(fmt: str, args: Any, limit: int) -> int:
    """About what ``fmt % args`` makes: its text, its widths and precisions, its arguments' text."""
    size = len(fmt) + _size(args, limit)
    for width, precision in _PERCENT.findall(fmt):
        for number in (width, precision):
            if number and number != "*":
                size += int(number)
    return size


def _format_size(fmt: str, args: Any, limit: int) -> int:
    """About what ``fmt.format(*args)`` makes: its text, the numbers of its format specs, its arguments' text."""
    size = len(fmt) + _size(args, limit)
    try:
        specs = [spec for _, _, spec, _ in string.Formatter().parse(fmt) if spec]
    except ValueError:  # str.format raises the same
        return size
    for spec in specs:
        size += sum(int(n) for n in re.findall(r"\d+", spec) if len(n) < 30) + sum(
            limit + 1 for n in re.findall(r"\d+", spec) if len(n) >= 30)
    return size


def _expands(obj: Any, args: tuple, kwargs: dict, limit: int) -> tuple[int, str] | None:
    """What a ``str`` method that can make more text than its inputs would make (``replace``, ``join``,
    ``expandtabs``, ``translate``, ``format``...), and what it is; ``None`` for any other call."""
    owner, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    wrapped = getattr(obj, "__wrapped__", None)  # the sandbox's str.format / format_map wrapper
    if wrapped is not None and isinstance(getattr(wrapped, "__self__", None), str):
        owner, name = wrapped.__self__, wrapped.__name__
    if not isinstance(owner, (str, bytes)):
        return None
    if name == "replace" and args:
        old, new = args[0], args[1] if len(args) > 1 else ""
        hits = len(owner) + 1 if not old else owner.count(old) if type(old) is type(owner) else 0
        return len(owner) + hits * _size(new, limit), "a replace"
    if name == "join" and args:
        items = args[0]
        count = len(items) if isinstance(items, (list, tuple, str, Mapping)) else 1
        return _size(items, limit) + len(owner) * count, "a join"
    if name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        return len(owner) + owner.count("\t" if isinstance(owner, str) else b"\t") * max(int(tab), 0), "expandtabs"
    if name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((_size(v, limit) for v in args[0].values()), default=1)
        return len(owner) * max(longest, 1), "a translate"
    if name in ("format", "format_map") and isinstance(owner, str):
        return _format_size(owner, (args, kwargs), limit), "a format"
    return None


_FILTERS_OF_TEXT = {"join", "replace", "indent", "center", "wordwrap", "format", "tojson", "string", "pprint",
                    "urlize", "xmlattr"}
"""Filters whose result is text made from their value: refused where that value's text would pass what is left."""


def _filter_size(name: str, args: tuple, kwargs: dict, limit: int) -> int:
    """About what filter ``name`` makes of ``args``/``kwargs`` (its value first)."""
    value = args[0] if args else ""
    size = _size(value, limit)
    if name == "join":
        sep = args[1] if len(args) > 1 else kwargs.get("d", "")
        count = len(value) if isinstance(value, (list, tuple, str, Mapping)) else 1
        return size + _size(sep, limit) * count
    if name == "replace" and len(args) > 2:
        text, old, new = str(value) if isinstance(value, str) else "", args[1], args[2]
        hits = len(text) + 1 if not old else text.count(old) if isinstance(old, str) else 0
        return size + hits * _size(new, limit)
    if name == "indent":
        width = args[1] if len(args) > 1 else kwargs.get("width", 4)
        lines = (value.count("\n") + 1) if isinstance(value, str) else 1
        return size + lines * (width if isinstance(width, int) else _size(width, limit))
    if name == "wordwrap":
        width = args[1] if len(args) > 1 else kwargs.get("width", 79)
        wrap = args[4] if len(args) > 4 else kwargs.get("wrapstring") or "\n"
        return size + (size // max(int(width), 1) + 1) * _size(wrap, limit)
    if name == "format":
        return _percent_size(str(value), (args[1:], kwargs), limit)
    if name == "tojson":
        indent = args[2] if len(args) > 2 else kwargs.get("indent") or 0
        depth = 8  # each nested line indented once per level: bounded by a small depth in any real tool list
        return (size + 2) * (1 + depth * (indent if isinstance(indent, int) else _size(indent, limit)))
    return size


def _bounded_filter(name: str, func: Any) -> Any:
    """``func`` (a filter) counted as a step, its integer arguments and the text it would make checked against what
    is left before it runs, its result counted after."""

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.step()
        values = [a for a in args if not isinstance(a, (jinja2.runtime.Context, jinja2.nodes.EvalContext,
                                                          jinja2.Environment))]
        _check_counts(budget, [*values[1:], *kwargs.values()], f"the filter {name}")
        if name in _FILTERS_OF_TEXT:
            budget.need(_filter_size(name, tuple(values), kwargs, budget.text), f"the filter {name}")
        result = func(*args, **kwargs)
        budget.spend(_size(result, budget.text), f"the filter {name}")
        return result

    return bounded


class _GenerationTag(jinja2.ext.Extension):
    """transformers' ``{% generation %}...{% endgeneration %}`` (it marks the assistant's tokens when asked for a
    mask): its body, as transformers renders it without one."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.CallBlock:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    @staticmethod
    def _body(caller: Any) -> str:
        return caller()


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator with every loop's iterable counted step by step and every ``~`` concatenation checked
    (the two things a sandbox does not intercept)."""

    def visit_For(self, node: jinja2.nodes.For, frame: Frame) -> None:
        node = copy.copy(node)
        node.iter = jinja2.nodes.Call(jinja2.nodes.EnvironmentAttribute("bounded_iter"), [node.iter], [], None, None,
                                      lineno=node.lineno)
        super().visit_For(node, frame)

    @optimizeconst
    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:  # never here: no autoescaping
            return super().visit_Concat(node, frame)
        self.write("environment.bounded_str_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")
        return None


class _TemplateDict:
    """transformers' ``dict`` global: a call and ``fromkeys``, nothing else reachable."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(Namespace):
    """transformers' ``namespace`` global: no attribute starting with an underscore."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Namespace's own signature trick
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                "Please rename the attribute.")


def _raise_exception(message: str) -> None:
    raise _Raised(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    _budget().need(len(fmt) * 32, "strftime_now")  # a directive makes at most a few dozen characters
    return datetime.now().strftime(fmt)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002 - Jinja's names
    _budget().need(builtins.max(int(n), 0) * builtins.max(int(max), 0) * 12, "lipsum")  # ~12 characters a word
    return jinja2.utils.generate_lorem_ipsum(n, html, min, max)


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """transformers' chat-template environment, every value it makes counted and every step (module docstring)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True,
                         extensions=[_GenerationTag, jinja2.ext.loopcontrols], finalize=self._finalize)
        self.filters["tojson"] = _tojson
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now, dict=_TemplateDict(),
                            namespace=_TemplateNamespace, lipsum=_lipsum)

    # -- what the generated code calls -------------------------------------------------------------------------
    def bounded_iter(self, iterable: Iterable[Any]) -> Iterator[Any]:
        budget = _budget()
        for item in iterable:
            budget.step()
            yield item

    def bounded_str_join(self, items: Iterable[Any]) -> str:
        items = list(items)
        budget = _budget()
        budget.need(sum(_size(i, budget.text) for i in items), "a ~ concatenation")
        text = "".join(map(str, items))
        budget.spend(len(text), "a ~ concatenation")
        return text

    def concat(self, parts: Iterable[str]) -> str:  # type: ignore[override]  # "".join, counted (blocks, output)
        parts = list(parts)
        budget = _budget()
        budget.spend(sum(len(p) for p in parts if isinstance(p, str)), "the text it writes")
        return "".join(parts)

    def _finalize(self, value: Any) -> Any:
        if not isinstance(value, str):  # written as str(value): a list's text may be far more than the list
            budget = _budget()
            budget.spend(_size(value, budget.text), "a value written as text")
        return value

    # -- the sandbox's hooks -------------------------------------------------------------------------------------
    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        budget.step()
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(count, int) and not isinstance(count, bool) and isinstance(seq, (str, bytes, list,
                                                                                              tuple)):
                    size, kind = _size(seq, budget.text), "list" if isinstance(seq, (list, tuple)) else "string"
                    unit = "item" if kind == "list" else "character"
                    budget.need(size * max(count, 0), f"a {kind} of {len(seq)} {unit}{'s' * (len(seq) != 1)} "
                                f"repeated {count} times")
            if _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise _Refused(f"it makes an integer of more than {MAX_INT_BITS} bits (a product)")
        elif operator == "**" and _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            if right * left.bit_length() > MAX_INT_BITS + left.bit_length():
                raise _Refused(f"it makes an integer of more than {MAX_INT_BITS} bits ({left} ** {right})")
        elif operator == "+" and not (_is_number(left) and _is_number(right)):
            budget.need(_size(left, budget.text) + _size(right, budget.text), "a + concatenation")
        elif operator == "%" and isinstance(left, str):
            budget.need(_percent_size(left, right, budget.text), "a % format")
            _check_counts(budget, right if isinstance(right, tuple) else (right,), "a % format")
        result = super().call_binop(context, operator, left, right)
        if _is_int(result) and result.bit_length() > MAX_INT_BITS:
            raise _Refused(f"it makes an integer of more than {MAX_INT_BITS} bits")
        if not _is_number(result):
            budget.spend(_size(result, budget.text), f"a {operator} result")
        return result

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget = _budget()
        budget.step()
        name = "range" if __obj is jinja2.sandbox.safe_range else getattr(__obj, "__name__", type(__obj).__name__)
        what = f"a call of {name}"
        _check_counts(budget, [*args, *kwargs.values()], what)
        if isinstance(__obj, jinja2.runtime.LoopContext) and args:  # a recursive loop's next level: counted too
            args = (__self.bounded_iter(args[0]), *args[1:])
        expands = _expands(__obj, args, kwargs, budget.text)
        if expands is not None:
            budget.need(expands[0], expands[1])
        result = super().call(__context, __obj, *args, **kwargs)
        budget.spend(_size(result, budget.text), what)
        return result

    def getitem(self, obj: Any, argument: Any) -> Any:
        result = super().getitem(obj, argument)
        if isinstance(argument, slice):  # a copy
            budget = _budget()
            budget.spend(_size(result, budget.text), "a slice")
        return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, complex))


MAX_TEMPLATE = 1 << 20
"""The longest template compiled: 1,048,576 characters (real chat templates hold a few thousand; tool-calling ones
tens of thousands)."""


@functools.cache
def _environment() -> _BoundedSandbox:
    return _BoundedSandbox()


@functools.lru_cache(maxsize=64)
def _compiled(template: str) -> jinja2.Template:
    """``template`` compiled once (a compiled template renders in any number of threads at once)."""
    if len(template) > MAX_TEMPLATE:
        raise _Refused(f"it is {len(template):,} characters long, more than {MAX_TEMPLATE:,}")
    return _environment().from_string(template)


_REASONING = ("reasoning_content", "thinking", "reasoning")
"""The names a message's reasoning is passed under; transformers fills the first two from any (templates read
them)."""


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as transformers hands it to a template: its ``None`` fields dropped, plain data, reasoning aliased."""
    plain = {k: _plain(v) for k, v in message.items() if v is not None}
    reasoning = next((plain[k] for k in _REASONING if plain.get(k) is not None), None)
    return plain if reasoning is None else {"thinking": reasoning, **plain, "reasoning_content": reasoning}


def _plain(value: Any) -> Any:
    """Template data rebuilt of plain JSON types, as transformers does (``_plain_template_data``)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return f"<{type(value).__name__}>"


def render_chat(tokenizer: Any, template: str, messages: list[dict[str, Any]], add_generation_prompt: bool,
                source: str | None = None, **kwargs: Any) -> str:
    """``messages`` rendered with ``template`` as ``tokenizer.apply_chat_template(messages, chat_template=template,
    add_generation_prompt=..., tokenize=False, **kwargs)`` renders them, within the module's bounds. ``source`` says
    whose template it is in errors (default: ``of '<the tokenizer's name_or_path>'``). Any failure is one
    :class:`ChatTemplateError`."""
    if source is None:
        source = f"of {str(getattr(tokenizer, 'name_or_path', '') or type(tokenizer).__name__)!r}"
    variables = _plain({**getattr(tokenizer, "special_tokens_map", {}), **kwargs})
    chat = [_message(m) for m in messages]
    token = _BUDGET.set(_Budget())
    try:
        compiled = _compiled(template)
        return compiled.render(messages=chat, tools=None, documents=None, add_generation_prompt=add_generation_prompt,
                               **variables)
    except _Refused as err:
        raise ChatTemplateError(source, str(err)) from None
    except _Raised as err:
        raise ChatTemplateError(source, f"it raises {_line(err)!r}", raised=True) from None
    except jinja2.TemplateSyntaxError as err:
        raise ChatTemplateError(source, f"TemplateSyntaxError: {_line(err)} (line {err.lineno})") from None
    except RecursionError:
        raise ChatTemplateError(source, "it recurses deeper than Python allows (RecursionError)") from None
    except MemoryError:
        raise ChatTemplateError(source, "it ran out of memory (MemoryError)") from None
    except Exception as err:  # noqa: BLE001  the sandbox's refusals, and whatever the template's code raises
        raise ChatTemplateError(source, f"{type(err).__name__}: {_line(err)}") from None
    finally:
        _BUDGET.reset(token)


def check_template(template: str, source: str) -> None:
    """``template`` compiled here (a syntax error, a template too long: :class:`ChatTemplateError`) and every constant
    expression Jinja folds while compiling it evaluated within the bounds first: an environment that intercepts no
    operator -- llama-cpp-python's, which compiles every template a GGUF file holds when it opens the file -- computes
    ``{{ 'x' * 10**10 }}`` at compile time (10 GB before any rendering). ``source`` says whose template it is
    (``of 'models/x.gguf'``)."""
    token = _BUDGET.set(_Budget())
    try:
        _compiled(template)
        environment = _environment()
        folder = _Folder(environment)
        for node in environment.parse(template).find_all(jinja2.nodes.Expr):
            try:
                folder.value(node)
            except jinja2.nodes.Impossible:
                pass
    except _Refused as err:
        raise ChatTemplateError(source, f"{err}, folding its constants as Jinja does while compiling") from None
    except jinja2.TemplateSyntaxError as err:
        raise ChatTemplateError(source, f"TemplateSyntaxError: {_line(err)} (line {err.lineno})") from None
    except RecursionError:
        raise ChatTemplateError(source, "it nests deeper than Python allows (RecursionError)") from None
    finally:
        _BUDGET.reset(token)


_BINARY = {"Mul": "*", "Div": "/", "FloorDiv": "//", "Add": "+", "Sub": "-", "Mod": "%", "Pow": "**"}
_UNARY = {"Neg": operator.neg, "Pos": operator.pos, "Not": operator.not_}
_IMPOSSIBLE = object()


class _Folder:
    """The constants Jinja's optimizer folds (``Node.as_const``), computed through the bounded environment's own
    operators and filters: a value past the bounds is refused instead of built."""

    def __init__(self, environment: _BoundedSandbox) -> None:
        self.environment = environment
        self.eval_ctx = jinja2.nodes.EvalContext(environment)
        self.memo: dict[int, Any] = {}

    def value(self, node: jinja2.nodes.Node) -> Any:
        known = self.memo.get(id(node), None)
        if known is _IMPOSSIBLE:
            raise jinja2.nodes.Impossible()
        if id(node) in self.memo:
            return known
        try:
            result = self._value(node)
        except jinja2.nodes.Impossible:
            self.memo[id(node)] = _IMPOSSIBLE
            raise
        self.memo[id(node)] = result
        return result

    def _value(self, node: jinja2.nodes.Node) -> Any:
        kind = type(node).__name__
        if isinstance(node, jinja2.nodes.Const):
            return node.value
        if isinstance(node, jinja2.nodes.TemplateData):
            return node.data
        if isinstance(node, (jinja2.nodes.Tuple, jinja2.nodes.List)):
            items = [self.value(item) for item in node.items]
            return tuple(items) if isinstance(node, jinja2.nodes.Tuple) else items
        if isinstance(node, jinja2.nodes.Dict):
            return {self.value(pair.key): self.value(pair.value) for pair in node.items}
        if kind in _BINARY:
            left, right = self.value(node.left), self.value(node.right)  # type: ignore[attr-defined]
            return self._try(lambda: self.environment.call_binop(None, _BINARY[kind], left, right))  # type: ignore[arg-type]
        if kind in _UNARY:
            operand = self.value(node.node)  # type: ignore[attr-defined]
            return self._try(lambda: _UNARY[kind](operand))
        if isinstance(node, jinja2.nodes.Concat):
            parts = [self.value(part) for part in node.nodes]
            return self._try(lambda: self.environment.bounded_str_join(parts))
        if isinstance(node, jinja2.nodes.CondExpr):
            if self.value(node.test):
                return self.value(node.expr1)
            if node.expr2 is None:
                raise jinja2.nodes.Impossible()
            return self.value(node.expr2)
        if isinstance(node, jinja2.nodes.Getitem) and node.ctx == "load":
            obj, arg = self.value(node.node), self.value(node.arg)
            return self._try(lambda: self.environment.getitem(obj, arg))
        if isinstance(node, jinja2.nodes.Getattr) and node.ctx == "load":
            obj = self.value(node.node)
            return self._try(lambda: self.environment.getattr(obj, node.attr))
        if isinstance(node, jinja2.nodes.Slice):
            return slice(*(None if part is None else self.value(part) for part in (node.start, node.stop, node.step)))
        if isinstance(node, jinja2.nodes.Filter):
            return self._filter(node)
        raise jinja2.nodes.Impossible()

    def _filter(self, node: jinja2.nodes.Filter) -> Any:
        func = self.environment.filters.get(node.name)
        passed = jinja2.utils._PassArg.from_obj(func) if func is not None else None  # Jinja's own test
        if func is None or passed is jinja2.utils._PassArg.context:
            raise jinja2.nodes.Impossible()
        args = [self.value(node.node), *(self.value(a) for a in node.args)]
        kwargs = {k.key: self.value(k.value) for k in node.kwargs}
        if node.dyn_args is not None:
            args.extend(self.value(node.dyn_args))
        if node.dyn_kwargs is not None:
            kwargs.update(self.value(node.dyn_kwargs))
        if passed is jinja2.utils._PassArg.eval_context:
            args.insert(0, self.eval_ctx)
        elif passed is jinja2.utils._PassArg.environment:
            args.insert(0, self.environment)
        return self._try(lambda: func(*args, **kwargs))

    @staticmethod
    def _try(compute: Any) -> Any:
        try:
            return compute()
        except _Refused:
            raise
        except Exception as err:  # what Jinja's as_const does: not a constant, left to the rendering
            raise jinja2.nodes.Impossible() from err


def _line(err: BaseException) -> str:
    """An error's message as one line of at most 300 characters."""
    text = " ".join(str(getattr(err, "message", None) or err).split())
    return text if len(text) <= 300 else text[:297] + "..."
