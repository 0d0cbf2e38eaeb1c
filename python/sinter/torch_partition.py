"""Splitting an ATen FX graph (what torch.compile's AOT stage hands a backend) into the regions
Sinter computes and the ops left to torch.

A node that no graph input reaches (``torch.arange`` and what is computed from it) is left to
torch, which computes it at each call, and read by the regions as an input. Any other node is
supported when fx_converter converts it alone: the node is copied into a graph of its
own whose placeholders are its tensor inputs (with the shapes and dtypes torch recorded), and the
conversion must succeed, including every output of the node that the graph reads. So the
decision is made by the same code that converts, and says why when it fails.

``partition(gm)`` groups supported nodes into maximal connected regions that create no cycle
(torch's CapabilityBasedPartitioner), drops regions that compute nothing (views and slices only),
and fuses each remaining region into a submodule (``fused_<i>``) of the returned GraphModule;
unsupported nodes stay as they are, eager torch calls between the regions.
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .aten_layout import NON_COMPUTE
from .errors import Error
from .fx_converter import IGNORED, FxConverter
from .fx_values import Placeholder, meta_value, packet_name
from .torch_types import torch_module


def unsupported_reason(node) -> Optional[str]:
    """None when Sinter can compute `node` (a call_function node of an FX graph with recorded
    values), else why not."""
    if node.op != "call_function":
        return f"a {node.op} node"
    if node.target is operator.getitem:
        producer = node.args[0]
        return unsupported_reason(producer) if hasattr(producer, "op") else "indexes a constant"
    if packet_name(node.target) in IGNORED:
        return "a check that computes nothing"
    torch = torch_module()
    graph = torch.fx.Graph()
    placeholders, mapping = {}, {}
    for i, a in enumerate(node.all_input_nodes):
        p = graph.placeholder(f"in_{i}")
        p.meta = dict(a.meta)
        placeholders[p] = Placeholder(f"in_{i}", "input")
        mapping[a] = p
    copy = graph.node_copy(node, lambda a: mapping[a])
    outputs = [copy]
    if isinstance(meta_value(node), (tuple, list)):
        used = sorted({u.args[1] for u in node.users if u.target is operator.getitem})
        outputs = []
        for index in used:
            item = graph.call_function(operator.getitem, (copy, index))
            item.meta = dict(next(u for u in node.users if u.args[1] == index).meta)
            outputs.append(item)
    graph.output(tuple(outputs))
    try:
        FxConverter("support_check", placeholders, canonical=True).run(graph)
    except Error as e:
        return e.message
    except Exception as e:  # noqa: BLE001 -- a torch op that fails on stand-ins is unsupported, not a crash
        return f"{type(e).__name__}: {e}"
    return None


@dataclass
class Partitioning:
    """The split: the GraphModule with a submodule per Sinter region, and what went where."""

    module: object
    regions: List[str] = field(default_factory=list)         # the submodules' names, in order
    in_sinter: Counter = field(default_factory=Counter)      # op name -> count, over the regions
    in_torch: Counter = field(default_factory=Counter)       # op name -> count, left to torch
    reasons: Dict[str, str] = field(default_factory=dict)    # op name -> why (the first one seen)


def partition(gm) -> Partitioning:
    """Fuses the supported regions of `gm` (changed in place) into submodules fused_0, ..."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    reasons: Dict[object, Optional[str]] = {}
    runtime = set()  # nodes some graph input reaches
    for node in gm.graph.nodes:
        if node.op == "placeholder" or any(a in runtime for a in node.all_input_nodes):
            runtime.add(node)

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            if node not in reasons:
                reasons[node] = unsupported_reason(node) if node in runtime else \
                    "reads no graph input: a constant torch computes"
            return reasons[node] is None

    partitioner = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    proposed = partitioner.propose_partitions()
    kept = [p for p in proposed if any(_computes(n) for n in p.nodes)]
    result = Partitioning(gm)
    in_regions = set()
    for p in kept:
        in_regions.update(p.nodes)
        result.in_sinter.update(packet_name(n.target) for n in p.nodes if n.target is not operator.getitem)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node not in in_regions and node.target is not operator.getitem \
                and packet_name(node.target) not in IGNORED:
            name = packet_name(node.target)
            result.in_torch[name] += 1
            result.reasons.setdefault(name, reasons.get(node) or "in a region of views only")
    if kept:
        result.module = partitioner.fuse_partitions(kept)
        # An ATen graph has no call_module nodes of its own: every one is a fused region.
        result.regions = [n.target for n in result.module.graph.nodes if n.op == "call_module"]
    return result


def _computes(node) -> bool:
    return node.op == "call_function" and packet_name(node.target) not in NON_COMPUTE \
        and node.target is not operator.getitem
