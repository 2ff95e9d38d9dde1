"""``torch.utils.data`` on mininn: datasets, samplers, ``DataLoader`` and collation.

Model files often import these beside the model (``from torch.utils.data
import Dataset, DataLoader``); in served code that import answers with this
package. Names, arguments, batches and error messages follow torch 2.13;
random orders (``shuffle``, ``random_split``, random samplers) are
reproducible with mininn's generators but are not torch's numbers.

``DataLoader`` loads in the calling process: ``num_workers > 0`` warns and runs
as ``num_workers=0`` (see :mod:`mininn.utils.data.dataloader`).
"""

from mininn.utils.data._utils.collate import default_collate, default_convert
from mininn.utils.data._utils.worker import get_worker_info
from mininn.utils.data.dataloader import DataLoader
from mininn.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from mininn.utils.data.distributed import DistributedSampler
from mininn.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
