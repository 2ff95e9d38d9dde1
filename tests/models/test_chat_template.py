"""models.chat_template renders as transformers' apply_chat_template: Jinja settings, globals, filters."""

from __future__ import annotations

import pytest

from models.chat_template import ChatTemplate, check_messages
from models.errors import InputError

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

MESSAGES = [
    {"role": "system", "content": "Be brief. Ünïcödé & <b>html</b> \"quotes\""},
    {"role": "user", "content": "What's 2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "two plus two"},
    {"role": "user", "content": "  and 3+3?  \n"},
]

TEMPLATES = {
    # trim_blocks / lstrip_blocks: block tags on their own lines leave no newline or indentation
    "whitespace": """{% for message in messages %}
    {% if message['role'] == 'system' %}
        [SYS]{{ message['content'] }}
    {% else %}
<{{ message['role'] }}>{{ message['content'] | trim }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}<assistant>{% endif %}""",
    # special tokens as variables; loop controls
    "special tokens": "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% continue %}{% endif %}"
    "{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}"
    "{% if loop.index > 2 %}{% break %}{% endif %}{% endfor %}"
    "{{ unk_token }}|{{ pad_token is defined }}",
    # tojson: no HTML escaping, non-ASCII kept, indent and separators as json.dumps
    "tojson": "{{ messages | tojson }}\n{{ messages[0] | tojson(indent=2) }}\n"
    "{{ messages[1] | tojson(separators=(',', ':'), sort_keys=true) }}\n{{ tools | tojson }}",
    # namespace, reasoning aliases, generation blocks
    "namespace": "{% set ns = namespace(count=0, last='') %}{% for m in messages %}"
    "{% set ns.count = ns.count + 1 %}"
    "{% set ns.last = m['role'] %}{% if m.thinking is defined %}<think>{{ m.thinking }}|"
    "{{ m.reasoning_content }}</think>{% endif %}{% generation %}{{ m['content'] }}{% endgeneration %}"
    "{% endfor %}{{ ns.count }} {{ ns.last }} {{ documents is none }} {{ add_generation_prompt }}",
    "strftime": "{{ strftime_now('%Y') }}{% for m in messages %}{{ m.content[:3] }}{% endfor %}",
}


@pytest.fixture(scope="module")
def reference():
    backend = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=80, special_tokens=["[UNK]", "<s>", "</s>"])
    backend.train_from_iterator(["hello world", "what is two plus two"], trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="[UNK]"
    )


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_renders_as_transformers(reference, name: str, add_generation_prompt: bool) -> None:
    source = TEMPLATES[name]
    expected = reference.apply_chat_template(
        MESSAGES, chat_template=source, tokenize=False, add_generation_prompt=add_generation_prompt
    )
    ours = ChatTemplate(source, reference.special_tokens_map)
    assert ours.render(MESSAGES, add_generation_prompt=add_generation_prompt) == expected


def test_rendering_leaves_the_callers_messages_unchanged() -> None:
    messages = [{"role": "assistant", "content": "x", "reasoning_content": "r", "name": None}]
    ChatTemplate("{{ messages[0].thinking }}").render(messages)
    assert messages == [{"role": "assistant", "content": "x", "reasoning_content": "r", "name": None}]


def test_none_values_are_dropped_as_transformers_does() -> None:
    checked = check_messages([{"role": "user", "content": "hi", "name": None}])
    assert checked == [{"role": "user", "content": "hi"}]


def test_a_namespace_refuses_underscore_names() -> None:
    template = ChatTemplate("{% set ns = namespace(_secret=1) %}{{ ns._secret }}")
    with pytest.raises(InputError, match="SecurityError"):
        template.render([{"role": "user", "content": "hi"}])


def test_the_sandbox_refuses_python_internals() -> None:
    template = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(InputError, match="chat template failed"):
        template.render([{"role": "user", "content": "hi"}])


def test_a_missing_key_in_the_template_is_an_input_error() -> None:
    template = ChatTemplate("{{ messages[0]['name'].upper() }}")
    with pytest.raises(InputError, match="chat template failed on these messages"):
        template.render([{"role": "user", "content": "hi"}])
