"""``mininn.utils.data`` against ``torch.utils.data``: batches, collation, samplers, splits and errors.

Each case runs the same code on torch and on mininn (``lib.t`` is the top-level
module, ``lib.d`` its ``utils.data``) and compares the outcome: the value (tensors
as dtype and values, containers by type) or the exception's type and message.
Random orders are compared by what torch defines (sizes, coverage, repeats), not
by value, as mininn's random stream is not torch's.
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.utils.data as mdata
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")
torch_data = pytest.importorskip("torch.utils.data")

MININN = SimpleNamespace(t=mininn, d=mdata, name="mininn")
TORCH = SimpleNamespace(t=torch, d=torch_data, name="torch")

Point = collections.namedtuple("Point", "x y")


def plain(obj: Any) -> Any:
    """``obj`` as plain data to compare across libraries: a tensor is ``("tensor", dtype, values)``."""
    if isinstance(obj, (torch.Tensor, mininn.Tensor)):
        return ("tensor", str(obj.dtype).rpartition(".")[2], obj.tolist())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [plain(v) for v in obj])
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: plain(v) for k, v in obj.items()})
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [plain(v) for v in obj])
    return obj


def outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", plain value)`` or ``(exception type, message)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", plain(run())
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return type(exc).__name__, str(exc)


def same_in_both(case: Callable[[SimpleNamespace], Any]) -> tuple[str, Any]:
    expected = outcome(lambda: case(TORCH))
    got = outcome(lambda: case(MININN))
    assert got == expected
    return got


def rows(lib: SimpleNamespace, n: int = 10) -> Any:
    return lib.d.TensorDataset(lib.t.arange(n).float(), lib.t.arange(n))


class Squares:
    """A map-style dataset that is not a ``Dataset`` subclass (torch takes any indexable with a length)."""

    def __len__(self) -> int:
        return 7

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"x": np.full(2, i, np.float32), "y": i * i, "name": f"s{i}"}


def counting(lib: SimpleNamespace, n: int = 7) -> Any:
    class Counting(lib.d.IterableDataset):
        def __iter__(self) -> Any:
            return iter(range(n))

        def __len__(self) -> int:
            return n

    return Counting()


def fetched_in_batches(lib: SimpleNamespace) -> Any:
    class Batched(lib.d.Dataset):
        calls: list[Any] = []

        def __len__(self) -> int:
            return 5

        def __getitem__(self, i: int) -> int:
            raise AssertionError("__getitems__ is used when defined")

        def __getitems__(self, indices: list[int]) -> list[int]:
            self.calls.append(list(indices))
            return [i * 10 for i in indices]

    dataset = Batched()
    return list(lib.d.DataLoader(dataset, batch_size=2)), dataset.calls


# -- default_collate and default_convert -----------------------------------------------------------------

COLLATE = {
    "bools": lambda lib: [True, False],
    "ints": lambda lib: [1, 2],
    "floats": lambda lib: [1.0, 2.0],
    "int then float": lambda lib: [1, 2.5],
    "numpy float32 scalars": lambda lib: [np.float32(1), np.float32(2)],
    "numpy int32 scalars": lambda lib: [np.int32(1), np.int32(2)],
    "numpy mixed scalars": lambda lib: [np.int64(1), np.float32(2)],
    "numpy bool scalars": lambda lib: [np.bool_(True), np.bool_(False)],
    "numpy arrays": lambda lib: [np.ones(2, np.float32), np.zeros(2, np.float32)],
    "numpy 0-d arrays": lambda lib: [np.array(1.5), np.array(2.5)],
    "numpy mixed arrays": lambda lib: [np.ones(2), np.ones(2, np.float32)],
    "numpy strings": lambda lib: [np.array(["a"]), np.array(["b"])],
    "strings": lambda lib: ["a", "b"],
    "bytes": lambda lib: [b"a", b"b"],
    "tuples become lists": lambda lib: [(1, 2.0), (3, 4.0)],
    "lists": lambda lib: [[1, 2.0], [3, 4.0]],
    "ragged lists": lambda lib: [[1, 2.0], [3]],
    "dicts": lambda lib: [{"a": 1, "b": lib.t.ones(2)}, {"a": 2, "b": lib.t.zeros(2)}],
    "ordered dicts": lambda lib: [collections.OrderedDict(a=1, b=2.0), collections.OrderedDict(a=3, b=4.0)],
    "default dicts": lambda lib: [collections.defaultdict(list, a=1)],
    "namedtuples": lambda lib: [Point(1, 2.0), Point(3, 4.0)],
    "nested": lambda lib: [{"p": Point(lib.t.ones(1), [1, "x"])}, {"p": Point(lib.t.zeros(1), [2, "y"])}],
    "tensors": lambda lib: [lib.t.ones(2, 3), lib.t.zeros(2, 3)],
    "tensors of two dtypes": lambda lib: [lib.t.ones(2, dtype=lib.t.int64), lib.t.ones(2)],
    "0-d tensors": lambda lib: [lib.t.tensor(1), lib.t.tensor(2)],
    "tensors of two shapes": lambda lib: [lib.t.ones(2), lib.t.ones(3)],
    "ranges": lambda lib: [range(2), range(2)],
    "None": lambda lib: [None, None],
    "objects": lambda lib: [object()],
}


@pytest.mark.parametrize("name", list(COLLATE))
def test_default_collate_equals_torch(name: str) -> None:
    same_in_both(lambda lib: lib.d.default_collate(COLLATE[name](lib)))


CONVERT = {
    "mixed sample": lambda lib: [np.ones(2), (1, np.ones(1)), {"a": np.zeros(1)}, "s", 3],
    "string array": lambda lib: np.array(["a"]),
    "numpy scalar": lambda lib: np.float32(3),
    "namedtuple": lambda lib: Point(np.ones(1), 2),
    "tensor": lambda lib: lib.t.ones(2),
}


@pytest.mark.parametrize("name", list(CONVERT))
def test_default_convert_equals_torch(name: str) -> None:
    same_in_both(lambda lib: lib.d.default_convert(CONVERT[name](lib)))


def test_a_custom_type_is_collated_through_collate_fn_map() -> None:
    from mininn.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v: int) -> None:
            self.v = v

    def boxes(batch: list[Box], *, collate_fn_map: Any = None) -> list[int]:
        return sorted(b.v for b in batch)

    fns = {**default_collate_fn_map, Box: boxes}
    assert collate([(Box(2), 1.0), (Box(1), 2.0)], collate_fn_map=fns)[0] == [1, 2]


# -- DataLoader ------------------------------------------------------------------------------------------

LOADERS = {
    "batches": lambda lib: list(lib.d.DataLoader(rows(lib), batch_size=4)),
    "drop_last": lambda lib: list(lib.d.DataLoader(rows(lib), batch_size=4, drop_last=True)),
    "no batching": lambda lib: list(lib.d.DataLoader(rows(lib, 3), batch_size=None)),
    "sampler": lambda lib: list(lib.d.DataLoader(rows(lib), batch_size=2, sampler=[9, 1, 0])),
    "batch_sampler": lambda lib: list(lib.d.DataLoader(rows(lib), batch_sampler=[[0, 1], [7], [2, 3, 4]])),
    "BatchSampler": lambda lib: list(lib.d.DataLoader(
        rows(lib), batch_sampler=lib.d.BatchSampler(lib.d.SequentialSampler(range(5)), 2, True))),
    "collate_fn": lambda lib: list(lib.d.DataLoader(rows(lib, 5), batch_size=2, collate_fn=len)),
    "plain list": lambda lib: list(lib.d.DataLoader([1, 2, 3], batch_size=2)),
    "dict samples": lambda lib: list(lib.d.DataLoader(Squares(), batch_size=3)),
    "dict samples unbatched": lambda lib: list(lib.d.DataLoader(Squares(), batch_size=None))[:2],
    "__getitems__": fetched_in_batches,
    "iterable": lambda lib: list(lib.d.DataLoader(counting(lib), batch_size=3)),
    "iterable drop_last": lambda lib: list(lib.d.DataLoader(counting(lib), batch_size=3, drop_last=True)),
    "iterable unbatched": lambda lib: list(lib.d.DataLoader(counting(lib), batch_size=None)),
    "iterable exact batches": lambda lib: list(lib.d.DataLoader(counting(lib, 6), batch_size=3)),
    "lengths": lambda lib: [len(lib.d.DataLoader(rows(lib), batch_size=4)),
                            len(lib.d.DataLoader(rows(lib), batch_size=4, drop_last=True)),
                            len(lib.d.DataLoader(rows(lib), batch_size=None)),
                            len(lib.d.DataLoader(counting(lib), batch_size=3)),
                            len(lib.d.DataLoader(counting(lib), batch_size=3, drop_last=True))],
    "iterator length": lambda lib: len(iter(lib.d.DataLoader(rows(lib), batch_size=3))),
    "default collate_fn": lambda lib: [lib.d.DataLoader(rows(lib)).collate_fn.__name__,
                                       lib.d.DataLoader(rows(lib), batch_size=None).collate_fn.__name__],
    "default samplers": lambda lib: [type(lib.d.DataLoader(rows(lib)).sampler).__name__,
                                     type(lib.d.DataLoader(rows(lib), shuffle=True).sampler).__name__,
                                     type(lib.d.DataLoader(rows(lib)).batch_sampler).__name__,
                                     lib.d.DataLoader(rows(lib), batch_size=None).batch_sampler,
                                     lib.d.DataLoader(rows(lib), batch_sampler=[[0]]).batch_size,
                                     lib.d.DataLoader(rows(lib), batch_size=3, drop_last=True)
                                     .batch_sampler.drop_last],
    "getitem error surfaces": lambda lib: list(lib.d.DataLoader(rows(lib, 3), sampler=[0, 5])),
}


@pytest.mark.parametrize("name", list(LOADERS))
def test_dataloader_batches_equal_torch(name: str) -> None:
    same_in_both(LOADERS[name])


LOADER_ERRORS = {
    "sampler with shuffle": lambda lib: lib.d.DataLoader(rows(lib), shuffle=True, sampler=[0]),
    "batch_sampler with batch_size": lambda lib: lib.d.DataLoader(rows(lib), batch_sampler=[[0]],
                                                                  batch_size=2),
    "batch_sampler with drop_last": lambda lib: lib.d.DataLoader(rows(lib), batch_sampler=[[0]],
                                                                 drop_last=True),
    "batch_sampler with sampler": lambda lib: lib.d.DataLoader(rows(lib), batch_sampler=[[0]], sampler=[0]),
    "batch_size None with drop_last": lambda lib: lib.d.DataLoader(rows(lib), batch_size=None,
                                                                   drop_last=True),
    "negative workers": lambda lib: lib.d.DataLoader(rows(lib), num_workers=-1),
    "negative timeout": lambda lib: lib.d.DataLoader(rows(lib), timeout=-1),
    "prefetch without workers": lambda lib: lib.d.DataLoader(rows(lib), prefetch_factor=2),
    "negative prefetch": lambda lib: lib.d.DataLoader(rows(lib), num_workers=1, prefetch_factor=-1),
    "persistent without workers": lambda lib: lib.d.DataLoader(rows(lib), persistent_workers=True),
    "context without workers": lambda lib: lib.d.DataLoader(rows(lib), multiprocessing_context="spawn"),
    "unknown context": lambda lib: lib.d.DataLoader(rows(lib), num_workers=2,
                                                    multiprocessing_context="bogus"),
    "iterable shuffled": lambda lib: lib.d.DataLoader(counting(lib), shuffle=True),
    "iterable sampler": lambda lib: lib.d.DataLoader(counting(lib), sampler=[1]),
    "iterable batch_sampler": lambda lib: lib.d.DataLoader(counting(lib), batch_sampler=[[1]]),
    "batch_size 0": lambda lib: lib.d.DataLoader(rows(lib), batch_size=0),
    "batch_size float": lambda lib: lib.d.DataLoader(rows(lib), batch_size=2.0),
    "set batch_size": lambda lib: setattr(lib.d.DataLoader(rows(lib)), "batch_size", 3),
    "set sampler": lambda lib: setattr(lib.d.DataLoader(rows(lib)), "sampler", [0]),
    "set dataset": lambda lib: setattr(lib.d.DataLoader(rows(lib)), "dataset", [0]),
    "len of unsized iterable": lambda lib: len(lib.d.DataLoader(unsized(lib), batch_size=2)),
}


def unsized(lib: SimpleNamespace) -> Any:
    class Unsized(lib.d.IterableDataset):
        def __iter__(self) -> Any:
            return iter(range(3))

    return Unsized()


@pytest.mark.parametrize("name", list(LOADER_ERRORS))
def test_dataloader_refuses_what_torch_refuses_with_its_message(name: str) -> None:
    kind, message = same_in_both(LOADER_ERRORS[name])
    assert kind != "ok"


def test_dataloader_takes_every_torch_argument_by_name() -> None:
    loader = mdata.DataLoader(rows(MININN), batch_size=2, shuffle=False, sampler=None, batch_sampler=None,
                              num_workers=0, collate_fn=None, pin_memory=True, drop_last=False, timeout=0,
                              worker_init_fn=None, multiprocessing_context=None, generator=None,
                              prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                              in_order=True)
    assert len(list(loader)) == 5
    loader.foo = 3  # other attributes stay settable, as in torch
    import inspect

    ours = inspect.signature(mdata.DataLoader).parameters
    theirs = inspect.signature(torch_data.DataLoader).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]


def test_num_workers_loads_in_process_with_a_warning_and_the_same_batches() -> None:
    loader = mdata.DataLoader(rows(MININN), batch_size=3, num_workers=4)
    assert loader.prefetch_factor == 2
    with pytest.warns(UserWarning, match="num_workers=4 runs as num_workers=0"):
        batches = list(loader)
    expected = list(torch_data.DataLoader(rows(TORCH), batch_size=3, num_workers=0))
    assert plain(batches) == plain(expected)
    calls = []
    loader = mdata.DataLoader(counting(MININN), num_workers=2, worker_init_fn=calls.append)
    with pytest.warns(UserWarning):
        assert len(list(loader)) == 7  # iterated once, as by one worker
    assert calls == []
    assert mdata.get_worker_info() is None


def test_shuffle_is_a_new_permutation_each_epoch_and_reproducible_with_a_seed() -> None:
    loader = mdata.DataLoader(rows(MININN, 20), batch_size=6, shuffle=True)
    mininn.manual_seed(3)
    first = [b[1].tolist() for b in loader]
    second = [b[1].tolist() for b in loader]
    assert [len(b) for b in first] == [6, 6, 6, 2]
    assert sorted(sum(first, [])) == list(range(20)) == sorted(sum(second, []))
    assert first != second
    mininn.manual_seed(3)
    assert [b[1].tolist() for b in loader] == first
    seeded = [mdata.DataLoader(rows(MININN, 20), shuffle=True, generator=mininn.Generator().manual_seed(5))
              for _ in range(2)]
    assert [int(b[1]) for b in seeded[0]] == [int(b[1]) for b in seeded[1]]


# -- datasets --------------------------------------------------------------------------------------------

DATASETS = {
    "TensorDataset item": lambda lib: rows(lib)[2],
    "TensorDataset negative": lambda lib: rows(lib)[-1],
    "TensorDataset list index": lambda lib: rows(lib)[[1, 2]],
    "TensorDataset out of range": lambda lib: rows(lib)[10],
    "TensorDataset mismatch": lambda lib: lib.d.TensorDataset(lib.t.ones(3), lib.t.ones(4)),
    "Dataset abstract": lambda lib: lib.d.Dataset()[0],
    "Dataset no len": lambda lib: len(lib.d.Dataset()),
    "IterableDataset abstract": lambda lib: lib.d.IterableDataset(),
    "add makes ConcatDataset": lambda lib: type(rows(lib) + rows(lib)).__name__,
    "add makes ChainDataset": lambda lib: (type(counting(lib) + counting(lib)).__name__,
                                           list(counting(lib, 2) + counting(lib, 3))),
    "ChainDataset len": lambda lib: len(lib.d.ChainDataset([counting(lib, 2), counting(lib, 3)])),
    "ChainDataset of a map dataset": lambda lib: list(lib.d.ChainDataset([counting(lib), rows(lib)])),
    "ConcatDataset empty": lambda lib: lib.d.ConcatDataset([]),
    "ConcatDataset iterable": lambda lib: lib.d.ConcatDataset([rows(lib), counting(lib)]),
    "ConcatDataset indexing": lambda lib: (
        lambda c: (len(c), c.cumulative_sizes, c[10], c[-1], c[-13], c[0])
    )(lib.d.ConcatDataset([rows(lib), lib.d.TensorDataset(lib.t.ones(3))])),
    "ConcatDataset too negative": lambda lib: lib.d.ConcatDataset([[1, 2], [3]])[-4],
    "ConcatDataset past the end": lambda lib: lib.d.ConcatDataset([[1, 2], [3]])[3],
    "ConcatDataset of lists": lambda lib: [lib.d.ConcatDataset(x for x in [[1, 2], [3]])[i]
                                           for i in range(3)],
    "Subset": lambda lib: (lambda s: (len(s), s[0], s[[0, 1]], s[-1], s.indices, s.__getitems__([1, 0])))(
        lib.d.Subset(rows(lib), [3, 1])),
    "Subset out of range": lambda lib: lib.d.Subset(rows(lib), [3, 1])[2],
    "StackDataset tuple": lambda lib: lib.d.StackDataset(rows(lib), lib.t.arange(10))[1],
    "StackDataset dict": lambda lib: lib.d.StackDataset(a=rows(lib), b=[0] * 10)[1],
    "StackDataset both": lambda lib: lib.d.StackDataset(rows(lib), b=rows(lib)),
    "StackDataset none": lambda lib: lib.d.StackDataset(),
    "StackDataset mismatch": lambda lib: lib.d.StackDataset(rows(lib), [1]),
    "StackDataset len": lambda lib: len(lib.d.StackDataset(rows(lib), rows(lib))),
}


@pytest.mark.parametrize("name", list(DATASETS))
def test_datasets_equal_torch(name: str) -> None:
    same_in_both(DATASETS[name])


def test_datasets_are_generic_as_in_torch() -> None:
    class Pairs(mdata.Dataset[tuple[int, int]]):
        def __getitem__(self, i: int) -> tuple[int, int]:
            return (i, i)

    assert Pairs()[3] == (3, 3)
    assert mdata.Sampler[int] is not None and mdata.DataLoader[int] is not None


def test_cummulative_sizes_warns_as_torch() -> None:
    with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
        assert mdata.ConcatDataset([[1], [2, 3]]).cummulative_sizes == [1, 3]


# -- random_split ----------------------------------------------------------------------------------------

SPLITS = [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.5, 0.5], [0, 1.0], [3, 6], [3, 8], [0.5, 0.6],
          [1.5, -0.5], [0.5, 0.4], [], [0.1, 0.1, 0.1, 0.7]]


@pytest.mark.parametrize("lengths", SPLITS, ids=str)
@pytest.mark.parametrize("n", [3, 10, 11])
def test_random_split_sizes_and_errors_equal_torch(n: int, lengths: list[float]) -> None:
    def sizes(lib: SimpleNamespace) -> Any:
        parts = lib.d.random_split(range(n), lengths, generator=lib.t.Generator().manual_seed(0))
        assert all(type(p).__name__ == "Subset" for p in parts)
        assert sorted(i for p in parts for i in p) == list(range(n))
        return [len(p) for p in parts]

    same_in_both(sizes)


def test_random_split_warns_on_an_empty_split_and_is_reproducible() -> None:
    with pytest.warns(UserWarning) as record:
        mdata.random_split(range(3), [0.1, 0.1, 0.1, 0.7])  # sizes 1, 0, 0, 2
    assert [str(w.message) for w in record] == [
        f"Length of split at index {i} is 0. This might result in an empty dataset." for i in (1, 2)]
    a = mdata.random_split(range(10), [5, 5], generator=mininn.Generator().manual_seed(1))
    b = mdata.random_split(range(10), [5, 5], generator=mininn.Generator().manual_seed(1))
    assert [list(p) for p in a] == [list(p) for p in b]
    assert [list(p) for p in a] != [list(range(5)), list(range(5, 10))]
    mininn.manual_seed(0)
    c = mdata.random_split(range(10), [5, 5])
    mininn.manual_seed(0)
    assert [list(p) for p in mdata.random_split(range(10), [5, 5])] == [list(p) for p in c]


# -- samplers --------------------------------------------------------------------------------------------

SAMPLERS = {
    "Sampler takes no arguments": lambda lib: lib.d.Sampler([1]),
    "Sampler iter": lambda lib: iter(lib.d.Sampler()),
    "Sampler len": lambda lib: len(lib.d.Sampler()),
    "SequentialSampler": lambda lib: (list(lib.d.SequentialSampler(range(3))),
                                      len(lib.d.SequentialSampler([4]))),
    "RandomSampler replacement": lambda lib: lib.d.RandomSampler(range(3), replacement=1),
    "RandomSampler num_samples 0": lambda lib: lib.d.RandomSampler(range(3), num_samples=0),
    "RandomSampler num_samples float": lambda lib: lib.d.RandomSampler(range(3), num_samples=1.5),
    "RandomSampler empty": lambda lib: lib.d.RandomSampler(range(0)),
    "RandomSampler permutation": lambda lib: sorted(lib.d.RandomSampler(range(5))),
    "RandomSampler repeats permutations": lambda lib: sorted(
        collections.Counter(lib.d.RandomSampler(range(5), num_samples=12)).values()),
    "RandomSampler lengths": lambda lib: [len(lib.d.RandomSampler(range(5), num_samples=12)),
                                         len(list(lib.d.RandomSampler(range(5), True, 70))),
                                         lib.d.RandomSampler(range(5)).num_samples],
    "SubsetRandomSampler": lambda lib: (sorted(lib.d.SubsetRandomSampler([5, 7, 9])),
                                        len(lib.d.SubsetRandomSampler([5, 7]))),
    "Weighted num_samples 0": lambda lib: lib.d.WeightedRandomSampler([0.1, 0.9], 0),
    "Weighted num_samples float": lambda lib: lib.d.WeightedRandomSampler([0.1, 0.9], 2.0),
    "Weighted num_samples bool": lambda lib: lib.d.WeightedRandomSampler([0.1, 0.9], True),
    "Weighted replacement": lambda lib: lib.d.WeightedRandomSampler([0.1, 0.9], 2, replacement=0),
    "Weighted 2-d": lambda lib: lib.d.WeightedRandomSampler([[0.1, 0.9]], 2),
    "Weighted weights": lambda lib: lib.d.WeightedRandomSampler([0.1, 0.9], 2).weights,
    "Weighted one choice": lambda lib: list(lib.d.WeightedRandomSampler([0, 1.0, 0], 5)),
    "Weighted too many without replacement": lambda lib: list(
        lib.d.WeightedRandomSampler([0, 1.0, 0], 5, replacement=False)),
    "Weighted permutation": lambda lib: sorted(
        lib.d.WeightedRandomSampler([1, 2.0, 3], 3, replacement=False)),
    "BatchSampler batch_size 0": lambda lib: lib.d.BatchSampler(range(5), 0, False),
    "BatchSampler batch_size bool": lambda lib: lib.d.BatchSampler(range(5), True, False),
    "BatchSampler batch_size numpy": lambda lib: lib.d.BatchSampler(range(5), np.int64(2), False),
    "BatchSampler drop_last": lambda lib: lib.d.BatchSampler(range(5), 2, 1),
    "BatchSampler batches": lambda lib: (list(lib.d.BatchSampler(range(5), 2, False)),
                                         list(lib.d.BatchSampler(range(5), 2, True)),
                                         list(lib.d.BatchSampler(iter(range(5)), 2, False)),
                                         len(lib.d.BatchSampler(range(5), 2, False)),
                                         len(lib.d.BatchSampler(range(5), 2, True))),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_samplers_equal_torch(name: str) -> None:
    same_in_both(SAMPLERS[name])


def test_random_samplers_draw_from_their_generator() -> None:
    def draw(generator: Any) -> list[int]:
        return list(mdata.RandomSampler(range(50), generator=generator))

    assert draw(mininn.Generator().manual_seed(4)) == draw(mininn.Generator().manual_seed(4))
    mininn.manual_seed(9)
    unseeded = list(mdata.RandomSampler(range(50)))
    mininn.manual_seed(9)
    assert list(mdata.RandomSampler(range(50))) == unseeded
    with_replacement = list(mdata.RandomSampler(range(3), replacement=True, num_samples=300))
    assert set(with_replacement) == {0, 1, 2}
    generator = mininn.Generator().manual_seed(0)
    weighted = list(mdata.WeightedRandomSampler([0.0, 1.0, 3.0], 400, generator=generator))
    counts = np.bincount(weighted, minlength=3)
    assert counts[0] == 0 and 0.15 < counts[1] / 400 < 0.35


# -- served code: `torch.utils.data` answers with this package --------------------------------------------

MODEL_FILE = '''
import torch
import torch.utils.data
from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split
from torch.utils.data.sampler import SubsetRandomSampler
from torch.utils.data.dataloader import default_collate
from torch.utils.data._utils.collate import default_collate as collate_too
from torch.utils.data.distributed import DistributedSampler


class Pairs(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.full((2,), float(i)), i


def batches():
    return list(DataLoader(Pairs(), batch_size=3)), torch.utils.data.get_worker_info()


SEEN = (TensorDataset, random_split, SubsetRandomSampler, default_collate, collate_too, DistributedSampler)
'''


def test_model_code_imports_torch_utils_data_as_this_package(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL_FILE)
    module = load_code(tmp_path, "model.py")
    found, info = module.batches()
    assert info is None
    assert plain(found) == plain(list(torch_data.DataLoader(
        [(torch.full((2,), float(i)), i) for i in range(4)], batch_size=3)))
    assert module.SEEN == (mdata.TensorDataset, mdata.random_split, mdata.SubsetRandomSampler,
                           mdata.default_collate, mdata.default_collate, mdata.DistributedSampler)


def test_a_training_loop_over_a_dataloader_ends_at_torchs_weights() -> None:
    """The same data, order and init through DataLoader + SGD: the weights after two epochs agree."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((22, 3)).astype(np.float32), rng.standard_normal((22, 1)).astype(np.float32)

    def fit(lib: SimpleNamespace, weight: np.ndarray, bias: np.ndarray) -> Any:
        model = lib.t.nn.Linear(3, 1)
        model.load_state_dict({"weight": lib.t.tensor(weight), "bias": lib.t.tensor(bias)})
        optimizer = lib.t.optim.SGD(model.parameters(), lr=0.1)
        loader = lib.d.DataLoader(lib.d.TensorDataset(lib.t.from_numpy(x), lib.t.from_numpy(y)),
                                  batch_size=4, sampler=list(range(21, -1, -1)), drop_last=True)
        for _ in range(2):
            for inputs, targets in loader:
                loss = ((model(inputs) - targets) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        return model.weight.detach().numpy(), model.bias.detach().numpy()

    weight, bias = rng.standard_normal((1, 3)).astype(np.float32), np.zeros(1, np.float32)
    for ours, theirs in zip(fit(MININN, weight, bias), fit(TORCH, weight, bias)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert not np.allclose(fit(MININN, weight, bias)[0], weight)


def distributed(lib: SimpleNamespace) -> Any:
    return (lib.d.DistributedSampler if lib is MININN else pytest.importorskip(
        "torch.utils.data.distributed").DistributedSampler)


@pytest.mark.parametrize(("n", "replicas", "drop_last"), [(10, 3, False), (10, 3, True), (9, 3, False),
                                                        (2, 4, False), (7, 2, True)])
def test_distributed_sampler_shares_equal_torchs(n: int, replicas: int, drop_last: bool) -> None:
    def shares(lib: SimpleNamespace) -> Any:
        samplers = [distributed(lib)(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
                    for rank in range(replicas)]
        return [(list(s), len(s)) for s in samplers]

    same_in_both(shares)

    def shuffled(lib: SimpleNamespace) -> Any:
        samplers = [distributed(lib)(range(n), replicas, rank, drop_last=drop_last)
                    for rank in range(replicas)]
        for s in samplers:
            s.set_epoch(1)
        counts = collections.Counter(i for s in samplers for i in s)
        return sorted(counts.values()), [len(s) for s in samplers]

    same_in_both(shuffled)


def test_distributed_sampler_reshuffles_per_epoch_and_checks_rank_as_torch() -> None:
    sampler = mdata.DistributedSampler(range(20), num_replicas=2, rank=0)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first
    same_in_both(lambda lib: distributed(lib)(range(4), num_replicas=2, rank=2))
    with pytest.raises(RuntimeError, match="give DistributedSampler num_replicas= and rank="):
        mdata.DistributedSampler(range(4))
