"""The sampler against transformers' logits processors, and every parameter's validation."""

from __future__ import annotations

import numpy as np
import pytest

from app.errors import BadRequestError, UnprocessableError
from app.runtime.sampling import Sampler, SamplingParams, filter_logits, raw_logprobs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def logits_rows(seed: int, rows: int = 6, vocab: int = 300) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, vocab)) * 3
    x[:, :5] = x[:, 5:10]  # ties, so equal logits are kept or dropped together as the warpers do
    return x


def transformers_filter(x: np.ndarray, params: SamplingParams) -> np.ndarray:
    warpers = []
    if params.temperature not in (0, 1):
        warpers.append(transformers.TemperatureLogitsWarper(params.temperature))
    if params.top_k > 0:
        warpers.append(transformers.TopKLogitsWarper(params.top_k))
    if params.top_p < 1:
        warpers.append(transformers.TopPLogitsWarper(params.top_p))
    if params.min_p > 0:
        warpers.append(transformers.MinPLogitsWarper(params.min_p))
    scores = torch.from_numpy(x.copy())
    ids = torch.zeros((x.shape[0], 1), dtype=torch.long)
    for warper in warpers:
        scores = warper(ids, scores)
    return scores.numpy()


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=0.7),
        SamplingParams(top_k=1),
        SamplingParams(top_k=17),
        SamplingParams(top_p=0.9),
        SamplingParams(top_p=0.3, temperature=1.5),
        SamplingParams(min_p=0.05),
        SamplingParams(min_p=0.3, temperature=0.5),
        SamplingParams(temperature=0.8, top_k=40, top_p=0.95, min_p=0.02),
        SamplingParams(temperature=2.0, top_k=250, top_p=0.5),
        SamplingParams(top_p=1e-9),  # keeps only the best token
    ],
    ids=repr,
)
def test_filtered_distribution_equals_transformers_warpers(params: SamplingParams) -> None:
    x = logits_rows(1)
    expected = transformers_filter(x, params)
    for row, want in zip(x, expected, strict=True):
        got = filter_logits(row, params)
        assert np.array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], rtol=1e-15)
        kept = np.isfinite(got).sum()
        assert kept >= 1
        assert params.top_k <= 0 or kept >= min(params.top_k, 1)


@pytest.mark.parametrize("top_p", [0.05, 0.5, 0.9, 0.99, 0.999999])
@pytest.mark.parametrize("scale", [0.5, 3.0, 12.0])
def test_top_p_on_a_large_vocabulary_equals_the_warper(top_p: float, scale: float) -> None:
    x = np.random.default_rng(int(scale * 10)).standard_normal((2, 49152)) * scale  # flat to peaked
    params = SamplingParams(top_p=top_p, temperature=0.9)
    expected = transformers_filter(x, params)
    for row, want in zip(x, expected, strict=True):
        got = filter_logits(row, params)
        assert np.array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], rtol=1e-15)


def test_filter_logits_leaves_its_input_alone() -> None:
    x = logits_rows(2)[0]
    before = x.copy()
    filter_logits(x, SamplingParams(temperature=0.5, top_k=3, top_p=0.5, min_p=0.1))
    assert np.array_equal(x, before)


@pytest.mark.parametrize("penalty", [1.3, 0.7])
def test_repetition_penalty_equals_transformers_processor(penalty: float) -> None:
    x = logits_rows(3, rows=1)[0]
    prompt, generated = [3, 7, 7, 50], [7, 120, 299]
    sampler = Sampler(SamplingParams(repetition_penalty=penalty, temperature=0), prompt, x.size)
    for token in generated:
        sampler._seen[token] = True  # as choose() records them
        sampler._counts[token] += 1
    processor = transformers.RepetitionPenaltyLogitsProcessor(penalty)
    want = processor(torch.tensor([prompt + generated]), torch.from_numpy(x[None].copy())).numpy()[0]
    np.testing.assert_array_equal(sampler.penalize(x), want)


def test_presence_and_frequency_penalties_follow_openai_over_generated_tokens_only() -> None:
    x = logits_rows(4, rows=1)[0]
    params = SamplingParams(presence_penalty=0.5, frequency_penalty=-0.25, temperature=0)
    sampler = Sampler(params, [1, 2, 2], x.size)
    for token in (9, 9, 9, 4):
        sampler._counts[token] += 1
    want = x.copy()
    want[9] -= 0.5 + -0.25 * 3
    want[4] -= 0.5 + -0.25 * 1
    np.testing.assert_array_equal(sampler.penalize(x), want)  # prompt tokens 1, 2 untouched


def test_greedy_is_argmax_of_the_penalized_logits_and_draws_nothing() -> None:
    x = logits_rows(5, rows=1)[0]
    sampler = Sampler(SamplingParams(temperature=0, seed=1), [], x.size)
    state = sampler.rng.bit_generator.state
    assert sampler.choose(x) == int(np.argmax(x))
    assert sampler.rng.bit_generator.state == state
    tied = np.zeros(10)
    tied[[3, 6]] = 1.0
    assert Sampler(SamplingParams(temperature=0), [], 10).choose(tied) == 3  # the first maximum, as torch


def test_same_seed_gives_same_tokens_and_samples_follow_the_distribution() -> None:
    x = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    sampler = Sampler(SamplingParams(seed=0), [], 4)  # no penalties: the history changes nothing
    draws = [sampler.choose(x) for _ in range(5000)]
    frequencies = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(frequencies, [0.5, 0.3, 0.15, 0.05], atol=0.03)  # 4 sigma
    a, b = Sampler(SamplingParams(seed=7), [], 4), Sampler(SamplingParams(seed=7), [], 4)
    assert [a.choose(x) for _ in range(50)] == [b.choose(x) for _ in range(50)]


def test_filtered_tokens_are_never_drawn() -> None:
    x = np.log(np.array([0.4, 0.35, 0.2, 0.05]))
    for params in (SamplingParams(seed=1, top_k=2), SamplingParams(seed=1, min_p=0.6)):
        sampler = Sampler(params, [], 4)
        assert {sampler.choose(x) for _ in range(500)} == {0, 1}


def test_raw_logprobs_equal_torch_log_softmax() -> None:
    x = logits_rows(6, rows=1)[0].astype(np.float32)
    want = torch.log_softmax(torch.from_numpy(x).double(), dim=-1).numpy()
    np.testing.assert_allclose(raw_logprobs(x), want, rtol=0, atol=1e-12)


def test_nan_logits_raise() -> None:
    with pytest.raises(FloatingPointError, match="NaN"):
        Sampler(SamplingParams(), [], 3).choose(np.array([0.0, np.nan, 1.0]))


@pytest.mark.parametrize(
    ("kwargs", "field", "error"),
    [
        ({"temperature": -0.1}, "temperature", UnprocessableError),
        ({"temperature": "hot"}, "temperature", BadRequestError),
        ({"temperature": float("nan")}, "temperature", UnprocessableError),
        ({"top_p": 0.0}, "top_p", UnprocessableError),
        ({"top_p": 1.5}, "top_p", UnprocessableError),
        ({"top_k": -2}, "top_k", UnprocessableError),
        ({"top_k": 2.5}, "top_k", BadRequestError),
        ({"min_p": 1.1}, "min_p", UnprocessableError),
        ({"max_tokens": 0}, "max_tokens", UnprocessableError),
        ({"max_tokens": True}, "max_tokens", BadRequestError),
        ({"repetition_penalty": 0.0}, "repetition_penalty", UnprocessableError),
        ({"presence_penalty": 2.5}, "presence_penalty", UnprocessableError),
        ({"frequency_penalty": -3}, "frequency_penalty", UnprocessableError),
        ({"logprobs": 21}, "logprobs", UnprocessableError),
        ({"logprobs": -1}, "logprobs", UnprocessableError),
        ({"seed": "7"}, "seed", BadRequestError),
        ({"stop": ["a"]}, "stop", BadRequestError),
        ({"stop": ("",)}, "stop", UnprocessableError),
        ({"stop_token_ids": (-1,)}, "stop_token_ids", UnprocessableError),
        ({"stop_token_ids": ("a",)}, "stop_token_ids", BadRequestError),
        ({"ignore_eos": 1}, "ignore_eos", BadRequestError),
        ({"n": 2}, "n", UnprocessableError),
    ],
)
def test_bad_sampling_values_name_the_field(kwargs: dict, field: str, error: type) -> None:
    with pytest.raises(error, match=f"'{field}'") as info:
        SamplingParams(**kwargs)
    assert type(info.value) is error
    assert ", got " in info.value.message


def test_n_above_one_is_refused_with_the_way_out() -> None:
    with pytest.raises(UnprocessableError, match="send n requests instead"):
        SamplingParams(n=3)


def test_off_values_are_accepted() -> None:
    params = SamplingParams(top_k=-1, top_p=1.0, min_p=0.0, seed=-5, logprobs=0, max_tokens=None)
    x = logits_rows(7, rows=1)[0]
    assert np.array_equal(filter_logits(x, params), x)
    Sampler(params, [], x.size).choose(x)  # a negative seed is taken modulo 2**64
