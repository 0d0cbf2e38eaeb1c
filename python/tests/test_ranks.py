"""sinter.run_reference_ranks and tensor-parallel sharding from Python: hand-checked collectives,
an MLP sharded at world 2 and 4 equal to the unsharded graph's reference, and the errors."""

import numpy as np
import pytest

import sinter


def all_reduce_graph(world=2, group="tp"):
    g = sinter.Graph("rank")
    x = g.input("x", sinter.f32, [2, 3])
    g.output(g.all_reduce(x, group, world), "y")
    g.validate()
    return g


def test_all_reduce_sums_over_the_ranks():
    g = all_reduce_graph()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = sinter.run_reference_ranks([g, g], [{"x": a}, {"x": 10 * a}])
    assert len(out) == 2
    for rank in out:
        assert rank["y"].dtype == np.float32
        np.testing.assert_array_equal(rank["y"], 11 * a)


def test_sharded_mlp_equals_the_unsharded_graph():
    g = sinter.Graph("mlp")
    x = g.input("x", sinter.f32, [3, 32])
    w1 = g.input("w1", sinter.f32, [32, 48])
    w2 = g.input("w2", sinter.f32, [48, 16])
    g.output(g.matmul(g.gelu(g.matmul(x, w1)), w2), "y")
    g.validate()
    rng = np.random.default_rng(5)
    values = {"x": rng.uniform(-1, 1, (3, 32)), "w1": rng.uniform(-0.2, 0.2, (32, 48)),
              "w2": rng.uniform(-0.2, 0.2, (48, 16))}
    want = sinter.run_reference(g, values)["y"]
    for world in (2, 4):
        ranks = sinter.shard_tensor_parallel(g, world)
        assert len(ranks) == world
        assert ranks[0].find_tensor("w1").shape == (32, 48 // world)
        per_rank = sinter.shard_inputs(g, ranks, values)
        assert per_rank[1]["w2"].shape == (48 // world, 16)
        got = sinter.gather_outputs(g, ranks, sinter.run_reference_ranks(ranks, per_rank))["y"]
        assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 1e-5


def test_errors_name_what_is_wrong():
    g = all_reduce_graph()
    a = np.ones((2, 3), np.float32)
    with pytest.raises(sinter.InvalidArgumentError, match="2 rank graphs but 1 input maps"):
        sinter.run_reference_ranks([g, g], [{"x": a}])
    other = all_reduce_graph(world=4)
    with pytest.raises(sinter.Error, match="world"):
        sinter.run_reference_ranks([g, other], [{"x": a}, {"x": a}])
    with pytest.raises(sinter.Error, match="no tensor 'nope'"):
        sinter.run_reference_ranks([g, g], [{"x": a}, {"nope": a}])
    lone = sinter.Graph("lone")
    lone.output(lone.relu(lone.input("x", sinter.f32, [4])), "y")
    lone.validate()
    with pytest.raises(sinter.Error):
        sinter.shard_tensor_parallel(lone, 2, column_parallel=["x"], detect=False)
