"""Chat templates: a model's Jinja template rendered as transformers' ``apply_chat_template`` renders it.

The environment is the one transformers builds: a ``jinja2`` immutable sandbox with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``{% generation %}``
block that renders its body, the globals ``raise_exception(message)`` and
``strftime_now(format)``, a ``namespace`` that refuses underscore names, and a ``tojson``
filter that is ``json.dumps`` (no HTML escaping, ``ensure_ascii=False``, with ``indent``,
``separators`` and ``sort_keys``). The template sees ``messages``, ``tools`` and ``documents``
(``None``), ``add_generation_prompt`` and the tokenizer's special tokens by name
(``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``; those the tokenizer has).

Messages are checked before rendering: a non-empty list of objects, each with a ``role`` of
:data:`ROLES` and a string ``content``; a bad one raises :class:`models.errors.InputError`
naming its index and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from models.errors import ArchitectureError, InputError

__all__ = ["ROLES", "ChatTemplate", "check_messages"]

ROLES = ("system", "developer", "user", "assistant", "tool")
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")  # names a message's reasoning goes by


class ChatTemplate:
    """A compiled chat template.

    Args:
        source: The Jinja text (``tokenizer_config.json``'s ``chat_template``, a
            ``chat_template.jinja`` file, or GGUF's ``tokenizer.chat_template``).
        special_tokens: Template variables such as ``{"bos_token": "<s>"}``; ``None`` values are left out.

    Raises:
        ArchitectureError: ``jinja2`` is missing or the template does not parse.
    """

    def __init__(self, source: str, special_tokens: Mapping[str, str | None] | None = None) -> None:
        if not isinstance(source, str):
            raise ArchitectureError(f"a chat template must be a string, not {type(source).__name__}")
        self.source = source
        self.special_tokens = {k: v for k, v in (special_tokens or {}).items() if v is not None}
        self._template = _compile(source)

    def render(self, messages: Any, *, add_generation_prompt: bool = True) -> str:
        """The conversation as the model's prompt text.

        Raises:
            InputError: a malformed message, or the template refused the conversation
                (its ``raise_exception``) or failed on it.
        """
        chat = _with_reasoning_aliases(check_messages(messages))
        try:
            return str(self._template.render(
                messages=chat, tools=None, documents=None,
                add_generation_prompt=bool(add_generation_prompt), **self.special_tokens,
            ))
        except _TemplateRaisedError as exc:
            raise InputError(f"the model's chat template refused these messages: {exc}") from None
        except Exception as exc:  # the template's own code failed on these messages
            raise InputError(
                f"the model's chat template failed on these messages: {type(exc).__name__}: {exc}"
            ) from None

    def __repr__(self) -> str:
        return f"ChatTemplate({len(self.source)} characters)"


def check_messages(messages: Any) -> list[dict[str, Any]]:
    """Validated copies of chat ``messages``: ``None`` values dropped, as transformers does.

    Raises:
        InputError: not a non-empty list of ``{"role", "content"}`` objects with a known role and
            string content; the message names the index and the fix.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise InputError(
            'messages must be a non-empty list of {"role": ..., "content": "..."} objects, '
            f"got {_kind(messages)}"
        )
    return [_check_message(index, message) for index, message in enumerate(messages)]


def _check_message(index: int, message: Any) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise InputError(
            f'message {index} is {_kind(message)}; each message must be an object like '
            '{"role": "user", "content": "Hello"}'
        )
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        got = "no 'role'" if role is None else f"role {role!r}"
        raise InputError(f"message {index} has {got}; 'role' must be one of {', '.join(ROLES)}")
    content = message.get("content")
    if not isinstance(content, str):
        raise InputError(f"message {index} ({role}) {_content_problem(content)}")
    checked: dict[str, Any] = {}
    for key, value in message.items():
        if not isinstance(key, str):
            raise InputError(f"message {index} ({role}) has a non-string key {key!r}")
        if value is not None:
            checked[key] = _plain(value, f"message {index} ({role}) key {key!r}")
    return checked


def _content_problem(content: Any) -> str:
    if content is None:
        return "has no 'content'; give the message's text as a string"
    if isinstance(content, list):
        return ("has a list as 'content'; give the text as one string (join the text parts: this model "
                "takes text only)")
    return f"has 'content' of type {type(content).__name__}; give the message's text as a string"


def _plain(value: Any, where: str) -> Any:
    """``value`` rebuilt from JSON types only (what a template may see)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    raise InputError(f"{where} is {type(value).__name__}; message values must be JSON (text, numbers, "
                     "lists, objects)")


def _with_reasoning_aliases(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message's reasoning under every name templates read it by (as transformers passes it)."""
    aliased = []
    for message in chat:
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        aliased.append(message)
    return aliased


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Sequence) and not value:
        return "an empty list"
    return f"a {type(value).__name__}"


class _TemplateRaisedError(Exception):
    """The template called ``raise_exception(message)``."""


def _compile(source: str) -> Any:
    jinja2 = _import_jinja2()
    environment = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_generation_extension(jinja2), "jinja2.ext.loopcontrols"],
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    environment.globals["namespace"] = _namespace_class(jinja2)
    try:
        return environment.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        message = f"the chat template does not parse: line {exc.lineno}: {exc.message}"
        raise ArchitectureError(message) from None


def _import_jinja2() -> Any:
    try:
        import jinja2
        import jinja2.ext
        import jinja2.sandbox
    except ImportError:
        raise ArchitectureError("chat templates need the 'jinja2' package: pip install jinja2") from None
    return jinja2


def _raise_exception(message: Any) -> None:
    raise _TemplateRaisedError(str(message))


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | str | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _generation_extension(jinja2: Any) -> type:
    """``{% generation %}...{% endgeneration %}``: marks assistant text; renders its body unchanged."""

    class GenerationBlock(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return str(caller())

    return GenerationBlock


def _namespace_class(jinja2: Any) -> type:
    """Jinja's ``namespace`` that refuses underscore-prefixed names (no reaching into internals)."""

    class Namespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's own signature trick
            self, rest = args[0], args[1:]
            for name in dict(*rest, **kwargs):
                _check_name(name)
            jinja2.utils.Namespace.__init__(self, *rest, **kwargs)

        def __setitem__(self, name: str, value: Any) -> None:
            _check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"a chat template cannot set {name!r} on a namespace")

    return Namespace
