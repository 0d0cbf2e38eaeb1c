"""Errors: sinter.Error subclasses carrying the library's code and message, never a crash."""

import pytest

import sinter


def test_every_error_code_has_a_class():
    for code in sinter.ErrorCode.__members__.values():
        cls = sinter.errors.ERROR_CLASSES[code]
        assert issubclass(cls, sinter.Error) and cls.code == code


def test_a_builder_error_carries_code_and_message():
    g = sinter.Graph("bad")
    a = g.input("a", sinter.f32, [4, 8])
    b = g.input("b", sinter.f32, [7, 3])
    with pytest.raises(sinter.InvalidGraphError) as info:
        g.matmul(a, b)
    e = info.value
    assert isinstance(e, sinter.Error)
    assert e.code == sinter.ErrorCode.invalid_graph
    assert str(e) == "invalid graph: " + e.message
    assert e.message == ("node 'matmul0' (matmul): contraction sizes differ: input 0 'a' is [..., M=4, K=8] "
                         "but input 1 'b' is [..., K=7, N=3]")


def test_broadcast_error_message():
    g = sinter.Graph("bad")
    a = g.input("a", sinter.f32, [4, 8])
    b = g.input("b", sinter.f32, [3])
    with pytest.raises(sinter.InvalidGraphError) as info:
        g.add(a, b)
    assert info.value.message == ("node 'add0' (add): cannot broadcast input 0 'a' with dims [4, 8] against "
                                  "input 1 'b' [3] (trailing dimensions must be equal or 1)")


def test_a_tensor_of_another_graph_is_refused():
    g1, g2 = sinter.Graph("one"), sinter.Graph("two")
    x = g1.input("x", sinter.f32, [4])
    y = g2.input("y", sinter.f32, [4])
    with pytest.raises(sinter.InvalidArgumentError) as info:
        g2.add(y, x)
    assert info.value.message == "b: tensor 'x' belongs to graph 'one', not to graph 'two'"
    assert str(info.value) == "invalid argument: b: tensor 'x' belongs to graph 'one', not to graph 'two'"
    with pytest.raises(sinter.InvalidArgumentError, match="operand: tensor 'x' belongs to graph 'one'"):
        y + x


def test_duplicate_names_and_unknown_dtypes():
    g = sinter.Graph()
    g.input("x", sinter.f32, [4])
    with pytest.raises(sinter.InvalidArgumentError) as info:
        g.input("x", sinter.f32, [4])
    assert info.value.message == "graph 'graph' already has a tensor named 'x'"
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.DType.parse("f64")
    assert info.value.message == ("unknown dtype 'f64'; expected one of f32, f16, bf16, fp8_e4m3, "
                                  "fp8_e5m2, i32, i64, bool")
    assert sinter.DType.parse("bool") == sinter.boolean


def test_validate_reports_an_unproduced_output():
    g = sinter.Graph("lonely")
    x = g.input("x", sinter.f32, [4])
    g.output(g.relu(x), "y")
    g.validate()
    empty = sinter.Graph("empty")
    with pytest.raises(sinter.InvalidGraphError):
        empty.validate()


def test_python_type_errors_stay_type_errors():
    g = sinter.Graph()
    with pytest.raises(TypeError):
        g.input("x", "f32", [4])
