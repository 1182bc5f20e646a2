"""Chat templates rendered as untrusted input (styleeval.templates, issue 59 items 3 and 6): the same text as
transformers' apply_chat_template on every real template; a template that would build gigabytes or run for hours is
refused within the bounds (each in under 5 s, the process under 500 MB); every sandbox refusal, escape attempt and
template error is one line naming the model, in Python and the CLI; llama-cpp-python, which compiles (and folds the
constants of) every template a GGUF file holds, never sees a hostile one."""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest
from _gguf import write_gguf

from styleeval.chat import TEMPLATE_KWARGS, ChatFormat
from styleeval.errors import UserError
from styleeval.random_weights import FAMILIES, build_tokenizer
from styleeval.templates import MAX_STEPS, MAX_TEXT, ChatTemplateError, check_template, render_chat

CONVERSATIONS = [
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|eot_id|> there, ünï 😀"}], True),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], False),
    ([{"role": "user", "content": "  spaced  \n"}], True),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool_calls": None},
      {"role": "user", "content": "c"}], True),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "r", "reasoning": "because"}], False),
]


def _both(tokenizer, template: str, messages, generation: bool) -> tuple[object, object]:
    try:
        want = tokenizer.apply_chat_template(messages, chat_template=template, add_generation_prompt=generation,
                                             tokenize=False, **TEMPLATE_KWARGS)
    except Exception as err:  # noqa: BLE001 - the template's own refusal (Gemma's system turn)
        want = ("refused", str(err))
    try:
        got = render_chat(tokenizer, template, messages, generation, **TEMPLATE_KWARGS)
    except ChatTemplateError as err:
        got = ("refused", err.reason.removeprefix("it raises ").strip("'"))
    return got, want


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_real_template_renders_as_transformers_renders_it(chat_templates, family):
    """The family's tokenizer (its special tokens are template variables) with each template of the shared folder."""
    tokenizer = build_tokenizer(family=family)
    for path in sorted(chat_templates.glob("*.jinja")):
        template = path.read_text(encoding="utf-8")
        for messages, generation in CONVERSATIONS:
            got, want = _both(tokenizer, template, messages, generation)
            assert got == want, (path.name, messages)


def test_the_real_models_template_renders_as_transformers_renders_it(real_backend):
    tokenizer = real_backend.tokenizer
    for messages, generation in CONVERSATIONS:
        got, want = _both(tokenizer, tokenizer.chat_template, messages, generation)
        assert got == want and isinstance(got, str)


HOSTILE = {  # template -> what the refusal says
    "{{ 'x' * 10**10 }}": f"it makes more than {MAX_TEXT:,} characters (a string of 1 character repeated 10000000000 "
                          "times)",
    "{{ 'x' * 9999999999 }}": "a string of 1 character repeated 9999999999 times",
    "{{ [1, 2] * 10**9 }}": "a list of 2 items repeated 1000000000 times",
    "{{ 10**(10**10) }}": "it makes an integer of more than 65536 bits (10 ** 10000000000)",
    "{{ 'x'.ljust(10**10) }}": "a call of ljust with the count 10000000000",
    "{{ 'x'|center(9999999999) }}": "the filter center with the count 9999999999",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}":
        "(a ~ concatenation)",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}":
        "(a + concatenation)",
    "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + ['x' * 1000] %}{% endfor %}":
        "(a + concatenation)",
    "{{ '%9999999999s' % 'x' }}": "(a % format)",
    "{{ '{:>9999999999}'.format('x') }}": "(a format)",
    "{{ ('x' * 1000000).replace('x', 'y' * 1000000) }}": "(a replace)",
    "{{ ('\t' * 1000000).expandtabs(1000000) }}": "(expandtabs)",
    "{{ (range(100000)|list)|join('x' * 1000) }}": "(the filter join)",
    "{% set b = 'x' * 4000000 %}{{ [b, b, b, b, b]|string }}": "(the filter string)",
    "{% set b = 'x' * 4000000 %}{{ [b, b, b, b, b] }}": "(a value written as text)",
    "{{ messages|tojson(indent=9999999999) }}": "the filter tojson with the count 9999999999",
    "{{ lipsum(n=1000000) }}": "(lipsum)",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}":
        f"it runs more than {MAX_STEPS:,} steps (loop iterations, calls and filters)",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}": "it recurses deeper than Python allows (RecursionError)",
    "{{ range(10**9)|length }}": "(a call of range with the count 1000000000)",
    "{{ range(200000)|length }}": "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE",
}


def test_hostile_templates_are_refused_in_seconds_within_500_mb(tmp_path):
    """On main each built its gigabytes (10 GB for the first: issue 59, item 3) or ran for hours inside Jinja's
    sandbox. A fresh process (its address space capped at 4 GB: a regression fails instead of filling the machine)
    refuses each as one UserError naming the reason, in under 5 s each, its peak RSS under 500 MB."""
    script = textwrap.dedent(f"""
        import json, resource, time
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        from styleeval.chat import ChatFormat
        from styleeval.errors import UserError
        from styleeval.random_weights import build_tokenizer
        tokenizer = build_tokenizer()
        out = {{}}
        for template in {json.dumps(list(HOSTILE))}:
            start = time.perf_counter()
            try:
                ChatFormat(tokenizer, chat_template=template)
                out[template] = ["accepted", 0]
            except UserError as err:
                out[template] = [str(err), time.perf_counter() - start]
        status = open("/proc/self/status").read()  # this process's own peak (ru_maxrss counts the forking parent's)
        out["peak MB"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out.pop("peak MB") < 500
    for template, (message, seconds) in out.items():
        assert message.startswith("the chat template given as chat_template= cannot be rendered: "), message
        assert HOSTILE[template] in message and seconds < 5 and "\n" not in message, (template, message, seconds)


ESCAPES = {  # the adversarial run's seven escape attempts (all blocked on main, each a traceback), and other failures
    "{{ cycler.__init__.__globals__.os }}": "SecurityError: access to attribute '__init__' of 'type' object is unsafe.",
    "{{ joiner.__init__.__globals__ }}": "SecurityError: access to attribute '__init__' of 'type' object is unsafe.",
    "{{ namespace.__init__.__globals__ }}": "SecurityError: access to attribute '__init__' of 'type' object is "
                                            "unsafe.",
    "{{ lipsum.__globals__['os'].popen('id').read() }}": "SecurityError: access to attribute '__globals__' of "
                                                          "'function' object is unsafe.",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}": "SecurityError: access to attribute '__class__' of 'str' "
                                                      "object is unsafe.",
    "{{ (''|attr('__class__')).__mro__ }}": "SecurityError: access to attribute '__class__' of 'str' object is unsafe.",
    "{{ '{0.__class__.__mro__}'.format('') }}": "SecurityError: access to attribute '__class__' of 'str' object is "
                                                "unsafe.",
    "{{ messages[0].content.no.such }}": "UndefinedError: 'str object' has no attribute 'no'",
    "{{ raise_exception('Only user and assistant roles are supported!') }}":
        "it raises 'Only user and assistant roles are supported!'",
    "{% for m in messages %}{{ m.content }": "TemplateSyntaxError: unexpected '}' (line 1)",
    "{{ 1 / 0 }}": "ZeroDivisionError: division by zero",
}


@pytest.mark.parametrize("template", list(ESCAPES))
def test_every_sandbox_refusal_and_template_error_is_one_line_naming_the_model(tiny_tokenizer, template):
    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template, tokenizer.name_or_path = template, "models/hostile.gguf"
    with pytest.raises(UserError) as caught:
        ChatFormat(tokenizer)
    message = str(caught.value)
    assert message.startswith("the chat template of 'models/hostile.gguf' cannot be rendered: ") and "\n" not in message
    assert ESCAPES[template] in message, message
    assert isinstance(caught.value, ChatTemplateError) and caught.value.__cause__ is None


def test_gemmas_system_refusal_still_folds_and_other_refusals_are_errors(chat_templates):
    gemma = build_tokenizer(family="gemma-2", chat_template=(chat_templates / "google-gemma-2-2b-it.jinja").read_text())
    assert ChatFormat(gemma).folds
    with pytest.raises(UserError, match="system_prompt='system': this chat template rejects a system turn"):
        ChatFormat(gemma, system_prompt="system")
    with pytest.raises(ChatTemplateError, match="it raises 'System role not supported'") as caught:
        ChatFormat(gemma).render([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], True)
    assert caught.value.raised


@pytest.fixture(scope="module")
def hostile_gguf(tiny_model, tiny_tokenizer, tmp_path_factory):
    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template = "{{ 'x' * 10**10 }}" + tiny_tokenizer.chat_template
    return write_gguf(tiny_model, tokenizer, tmp_path_factory.mktemp("hostile") / "hostile.gguf")


def _capped() -> None:
    """A child process's address space capped at 4 GB: a regression fails with MemoryError instead of filling the
    machine (on main, the in-process version of the test below was killed by the kernel at 21.9 GB)."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_a_gguf_files_hostile_template_is_one_line_naming_the_file_in_python_and_the_cli(hostile_gguf, tmp_path):
    """In the CLI (its main) and in Python (LogProb), in one capped child (one load of torch; the CLI's -q has silenced
    the libraries' bars, so its stderr is its one line)."""
    why = "it makes more than 16,777,216 characters (a string of 1 character repeated 10000000000 times)"
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "a b", "rewrite": "c d", "style": "formal"}\n', encoding="utf-8")
    command = ["score", str(source), "--out", str(tmp_path / "o.jsonl"), "--model", str(hostile_gguf), "-q"]
    script = ("from styleeval import LogProb\nfrom styleeval.cli import main\n"
              "from styleeval.templates import ChatTemplateError\n"
              f"print(main({command!r}))\n"
              f"try:\n    LogProb({str(hostile_gguf)!r}, progress=False)\n"
              "except ChatTemplateError as err:\n    print(err)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, preexec_fn=_capped)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == f"2\nthe chat template of {str(hostile_gguf)!r} cannot be rendered: {why}\n"
    assert done.stderr == f"styleeval score: error: the chat template of {str(hostile_gguf)!r} cannot be rendered: {why}\n"


def test_constants_jinja_would_fold_while_compiling_are_checked_first():
    """llama-cpp-python compiles every template of a GGUF file when it opens it, in a sandbox that intercepts no
    operator: Jinja folds ``'x' * 10**10`` then, at compile time (10 GB). check_template evaluates those constants
    within the bounds first (past them by a few times here: a regression builds megabytes, not gigabytes)."""
    for template, why in [("{{ 'x' * 10**8 }}", "a string of 1 character repeated 100000000 times"),
                          ("{% if false %}{{ 'ab' * (10**4) * (10**4) }}{% endif %}", "repeated 10000 times"),
                          ("{{ ('x' * 10**6) ~ ('x' * 10**6)|center(10**8) }}", "the filter center"),
                          ("{{ 2 ** (2 ** 20) }}", "it makes an integer of more than 65536 bits")]:
        with pytest.raises(ChatTemplateError, match="folding its constants as Jinja does while compiling") as caught:
            check_template(template, "of 'm.gguf'")
        assert why in str(caught.value)
    with pytest.raises(ChatTemplateError, match=r"TemplateSyntaxError: .* \(line 1\)"):
        check_template("{% for %}", "of 'm.gguf'")
    for path in FAMILIES:  # real templates fold nothing big
        check_template(build_tokenizer(family=path).chat_template or "{{ messages }}", "of 'm.gguf'")
