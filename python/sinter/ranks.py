"""Several ranks on the CPU reference, and tensor-parallel sharding, on numpy arrays.

    ranks = sinter.shard_tensor_parallel(graph, 4)                # one Graph per rank
    per_rank = sinter.shard_inputs(graph, ranks, values)          # each rank's share of the inputs
    outs = sinter.run_reference_ranks(ranks, per_rank)            # collectives among the ranks
    y = sinter.gather_outputs(graph, ranks, outs)                 # the unsharded graph's outputs

The array conventions are run_reference's (reference.py): inputs of any real kind for float
tensors, rounded to the tensor's dtype; outputs as numpy arrays of numpy_type(dtype).
"""

from typing import List, Mapping, Sequence

import numpy as np

from . import _core
from .errors import InvalidArgumentError
from .reference import _NUMPY_TYPE, _input_values


def _as_float64(graph: "_core.Graph", values: Mapping[str, object]) -> dict:
    out = {}
    for name, value in values.items():
        tensor = graph.find_tensor(name)
        # A name the graph lacks is reported by the extension, naming the graph.
        out[name] = _input_values(name, tensor.dtype, value) if tensor is not None else np.zeros((), np.float64)
    return out


def _typed(graph: "_core.Graph", arrays: Mapping[str, np.ndarray]) -> dict:
    return {name: array.astype(_NUMPY_TYPE[graph.find_tensor(name).dtype]) for name, array in arrays.items()}


def run_reference_ranks(rank_graphs: Sequence["_core.Graph"],
                        rank_inputs: Sequence[Mapping[str, object]]) -> List[dict]:
    """Runs one graph per rank in lockstep on the CPU, performing their collectives among them
    (matched per group by order of issue); rank r's outputs at index r. Collectives that differ
    between ranks, a rank that never reaches one and a deadlock across groups raise
    sinter.Error naming the node and rank."""
    graphs, rank_inputs = list(rank_graphs), list(rank_inputs)
    if len(rank_inputs) != len(graphs):
        raise InvalidArgumentError(f"run_reference_ranks: {len(graphs)} rank graphs but {len(rank_inputs)} "
                                   "input maps; give one map per rank")
    results = _core._run_reference_ranks(graphs, [_as_float64(g, v) for g, v in zip(graphs, rank_inputs)])
    return [_typed(g, r) for g, r in zip(graphs, results)]


def shard_tensor_parallel(graph: "_core.Graph", world: int, *, group: str = "tp",
                          column_parallel: Sequence[str] = (), detect: bool = True) -> List["_core.Graph"]:
    """The graph of every rank of a Megatron-style tensor-parallel split (include/sinter/shard.hpp):
    column-parallel projections found by structure (and those named in ``column_parallel``),
    row-parallel ones after them with an all_reduce over ``group``."""
    return _core._shard_tensor_parallel(graph, world, group, list(column_parallel), detect)


def shard_inputs(full: "_core.Graph", rank_graphs: Sequence["_core.Graph"],
                 values: Mapping[str, object]) -> List[dict]:
    """Each rank's inputs from the unsharded graph's input values: a split input's r-th part
    along its split axis for rank r, a replicated one copied."""
    ranks = list(rank_graphs)
    return [_typed(g, r) for g, r in zip(ranks, _core._shard_inputs(full, ranks, _as_float64(full, values)))]


def gather_outputs(full: "_core.Graph", rank_graphs: Sequence["_core.Graph"],
                   rank_outputs: Sequence[Mapping[str, object]]) -> dict:
    """The unsharded graph's outputs from every rank's: split outputs joined along their axis in
    rank order, replicated ones taken from rank 0."""
    ranks, rank_outputs = list(rank_graphs), list(rank_outputs)
    if len(rank_outputs) != len(ranks):
        raise InvalidArgumentError(f"gather_outputs: {len(ranks)} rank graphs but {len(rank_outputs)} "
                                   "output maps; give one map per rank")
    outputs = [{name: np.asarray(v, dtype=np.float64, order="C") for name, v in out.items()}
               for out in rank_outputs]
    return _typed(full, _core._gather_outputs(full, ranks, outputs))
