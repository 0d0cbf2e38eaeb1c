"""JSON graph files through the module: round trips, the example files, errors naming the place."""

import os

import pytest

import sinter


def small_graph():
    g = sinter.Graph("block")
    x = g.input("x", sinter.bf16, [8, 64])
    w = g.input("w", sinter.bf16, [64, 32], strides=[1, 64])
    gamma = g.input("gamma", sinter.bf16, [32])
    h = g.rmsnorm(g.matmul(x, w, out_dtype=sinter.f32), g.cast(gamma, sinter.f32), epsilon=1e-6)
    g.output(g.cast(h, sinter.fp8_e4m3, scale=g.scalar(0.5, sinter.f32)), "y")
    g.validate()
    return g


def test_round_trip_is_deterministic():
    g = small_graph()
    text = g.to_json()
    back = sinter.Graph.from_json(text)
    assert back.to_json() == text
    assert back.name == "block"
    assert [t.name for t in back.inputs] == ["x", "w", "gamma"]
    assert back.find_tensor("w").strides == (1, 64)
    assert [n["op"] for n in back.nodes] == [n["op"] for n in g.nodes]


def test_save_and_load_a_file(tmp_path):
    g = small_graph()
    path = str(tmp_path / "block.json")
    g.save(path)
    assert sinter.Graph.load(path).to_json() == g.to_json()


@pytest.mark.parametrize("name", ["mlp_layer", "conv_block", "transformer_block", "llama_decode_layer"])
def test_the_example_graphs_load(repo, name):
    g = sinter.Graph.load(os.path.join(repo, "examples", name + ".json"))
    assert g.outputs and g.inputs
    assert sinter.Graph.from_json(g.to_json()).to_json() == g.to_json()


def test_a_syntax_error_names_line_and_column():
    with pytest.raises(sinter.ParseError) as info:
        sinter.Graph.from_json('{\n  "format": "sinter.graph",\n  oops\n}', source="mine.json")
    assert info.value.message.startswith("mine.json:3:")


def test_a_content_error_names_the_json_pointer():
    text = small_graph().to_json().replace('"epsilon"', '"epsilonn"', 1)
    with pytest.raises(sinter.Error) as info:
        sinter.Graph.from_json(text, source="g.json")
    assert "/nodes/" in info.value.message and "epsilonn" in info.value.message


def test_a_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(sinter.IoError) as info:
        sinter.Graph.load(str(tmp_path / "none.json"))
    assert "none.json" in info.value.message
    assert isinstance(info.value, OSError)
