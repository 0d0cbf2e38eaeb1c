"""A gather whose indices are known at import time, as the graph ops Sinter has: one slice per run
of consecutive indices, concatenated along the axis (the ONNX and torch importers share it)."""

from typing import Sequence


def gather_constant(g, x, axis: int, indices: Sequence[int]):
    """x's elements at `indices` (in range, non-negative, at least one) along `axis`."""
    runs = []  # [start, end) of consecutive indices
    for i in indices:
        if runs and runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, i + 1])
    pieces = [g.slice(x, [axis], [s], [e]) for s, e in runs]
    return pieces[0] if len(pieces) == 1 else g.concat(pieces, axis)
