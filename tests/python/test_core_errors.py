"""User-facing errors of the tensor API: each is an ember.EmberError whose message names the
operator, the shapes (or dtypes, or dimensions) involved and the rule that was broken.

One representative per rule has its full text asserted; shape rules are checked on both
concrete and symbolic tensors (the rule is the operator's, applied before anything runs).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import ember

E = ember.ops


def ones(shape: list, dtype: str = "float32") -> ember.Tensor:
    return ember.ones(shape, dtype)


def sym(shape: list, dtype: str = "float32", name: str | None = None) -> ember.Tensor:
    return ember.symbol(shape, dtype, name=name)


def message(fn: Callable[[], object]) -> str:
    with pytest.raises(ember.EmberError) as info:
        fn()
    assert type(info.value) is ember.EmberError  # a user error, not an InternalError
    assert isinstance(info.value, RuntimeError)
    return str(info.value)


VALID_DTYPES = (
    "valid dtypes are float32, float16, bfloat16, float64, int8, int16, int32, int64, uint8, "
    'bool (also: float, half, double, int, long, short, bfloat; a "torch." prefix is accepted)'
)

# (id, failing call, exact message)
CASES: list[tuple[str, Callable[[], object], str]] = [
    (
        "broadcast",
        lambda: ones([2, 3]) + ones([4]),
        "add: cannot broadcast shapes [2, 3] and [4]: dimension -1 is 3 vs 4; "
        "sizes must be equal or 1",
    ),
    (
        "broadcast-symbolic",
        lambda: E.mul(sym(["n", 3]), sym(["m", 3])),
        "mul: cannot broadcast shapes [n, 3] and [m, 3]: dimension -2 is n vs m; "
        "sizes must be equal or 1",
    ),
    (
        "broadcast-where",
        lambda: E.where(ones([2], "bool"), ones([3]), ones([3])),
        "where: cannot broadcast shapes [2] and [3]: dimension -1 is 2 vs 3; "
        "sizes must be equal or 1",
    ),
    (
        "dtype-mismatch",
        lambda: ones([2]) + ones([2], "int32"),
        "add: dtypes differ: float32 vs int32; cast one operand with ember.ops.cast "
        "(both operands must have the same dtype)",
    ),
    (
        "dtype-mismatch-matmul",
        lambda: E.matmul(sym([2, 2]), sym([2, 2], "float64")),
        "matmul: dtypes differ: float32 vs float64; cast one operand with ember.ops.cast "
        "(both operands must have the same dtype)",
    ),
    (
        "matmul-k",
        lambda: E.matmul(ones([2, 3]), ones([4, 5])),
        "matmul: shapes [2, 3] and [4, 5] are not aligned: a has 3 columns but b has 4 rows; "
        "a's last dimension must equal b's second-to-last dimension",
    ),
    (
        "matmul-k-vector",
        lambda: sym([2, 3]) @ sym([4]),
        "matmul: shapes [2, 3] and [4] are not aligned: a has 3 columns but b has 4 rows; "
        "a's last dimension must equal b's only dimension",
    ),
    (
        "matmul-batch",
        lambda: E.matmul(ones([2, 2, 3]), ones([3, 3, 4])),
        "matmul: cannot broadcast shapes [2] and [3]: dimension -1 is 2 vs 3; sizes must be "
        "equal or 1 (the batch dimensions of [2, 2, 3] and [3, 3, 4])",
    ),
    (
        "reshape-numel",
        lambda: E.reshape(ones([2, 3]), [4, 2]),
        "reshape: cannot reshape float32[2, 3] (6 elements) into [4, 2] (8 elements); "
        "the number of elements must stay the same",
    ),
    (
        "reshape-infer",
        lambda: E.reshape(sym([2, 3]), [4, -1]),
        "reshape: cannot reshape float32[2, 3] (6 elements) into [4, -1]: 6 is not a multiple "
        "of 4; the number of elements must stay the same",
    ),
    (
        "reshape-two-minus-one",
        lambda: E.reshape(ones([2, 3]), [-1, -1]),
        "reshape: only one dimension can be -1, got [-1, -1]",
    ),
    (
        "bad-dim",
        lambda: E.sum(ones([2, 3]), 2),
        "sum: dimension 2 is out of range for a tensor of rank 2 (expected a dimension in [-2, 1])",
    ),
    (
        "bad-negative-dim",
        lambda: E.softmax(sym([2, 3]), -3),
        "softmax: dimension -3 is out of range for a tensor of rank 2 "
        "(expected a dimension in [-2, 1])",
    ),
    (
        "repeated-dim",
        lambda: E.sum(ones([2, 3]), [1, -1]),
        "sum: dimension 1 appears more than once; give each dimension once",
    ),
    (
        "bad-dim-transpose",
        lambda: E.transpose(ones([2, 3]), 0, 2),
        "transpose: dimension 2 is out of range for a tensor of rank 2 "
        "(expected a dimension in [-2, 1])",
    ),
    (
        "permute-length",
        lambda: E.permute(ones([2, 3]), [0]),
        "permute: the permutation [0] has 1 dimensions but float32[2, 3] has 2; "
        "list every dimension once",
    ),
    (
        "flatten-order",
        lambda: E.flatten(ones([2, 3, 4]), 2, 1),
        "flatten: start_dim 2 comes after end_dim 1 in a tensor of rank 3",
    ),
    (
        "bad-dtype-name",
        lambda: ember.zeros([2], "float33"),
        f"unknown dtype 'float33'; {VALID_DTYPES}",
    ),
    (
        "bad-dtype-cast",
        lambda: E.cast(ones([2]), "complex64"),
        f"unknown dtype 'complex64'; {VALID_DTYPES}",
    ),
    (
        "float-only",
        lambda: E.mean(ones([2], "int32")),
        "mean: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
        "int32; cast it first with ember.ops.cast(x, ember.float32)",
    ),
    (
        "bool-arithmetic",
        lambda: ones([2], "bool") + ones([2], "bool"),
        "add: bool tensors are not supported; cast to an integer or floating-point dtype first "
        "with ember.ops.cast",
    ),
    (
        "where-condition",
        lambda: E.where(ones([2]), ones([2]), ones([2])),
        "where: the condition must be a bool tensor, got float32; compare first (e.g. x > 0) or "
        "cast it with ember.ops.cast",
    ),
    (
        "reduce-empty",
        lambda: E.max(ones([3, 0]), 1),
        "max: cannot reduce over a zero-size dimension (dimension 1 of float32[3, 0]): max of no "
        "elements is undefined; only sum, mean and prod accept it",
    ),
    (
        "concat-shape",
        lambda: E.concat([ones([2, 3]), ones([3, 3])], 1),
        "concat: input 1 has shape [3, 3] but input 0 has shape [2, 3]; sizes must match in "
        "every dimension except the concat axis 1",
    ),
    (
        "concat-rank",
        lambda: E.concat([ones([2, 3]), ones([3])], 0),
        "concat: input 1 has rank 1 but input 0 has rank 2; every input needs the same rank",
    ),
    (
        "slice-step",
        lambda: E.slice(ones([4]), [0], [0], [4], [0]),
        "slice: step must be >= 1, got 0 for axis 0; reversed (negative-step) slices are not "
        "supported",
    ),
    (
        "expand",
        lambda: E.expand(ones([2, 3]), [4, 3]),
        "expand: cannot expand float32[2, 3] to [4, 3]: dimension 0 has size 2; only size-1 "
        "dimensions can be expanded",
    ),
    (
        "softmax-0d",
        lambda: E.softmax(ones([])),
        "softmax: expected a tensor with at least one dimension, got a 0-d tensor; "
        "unsqueeze it first",
    ),
    (
        "gelu-approximate",
        lambda: E.gelu(ones([2]), approximate="fast"),
        "gelu: approximate must be 'none' (the exact erf form) or 'tanh', got 'fast'",
    ),
    (
        "device",
        lambda: ember.ones([2], device="tpu"),
        'unknown device \'tpu\'; valid devices are "cpu", "cuda" and "cuda:N" '
        '(N a device index, e.g. "cuda:1")',
    ),
    (
        "float-of-many",
        lambda: float(ones([2])),
        "float() of a tensor with 2 elements is ambiguous; it needs exactly one element "
        "(reduce it first, e.g. ember.ops.sum(t) or ember.ops.max(t))",
    ),
    (
        "bool-of-symbol",
        lambda: bool(sym([1])),
        "bool() of a symbolic tensor: its value is not known until the graph runs "
        "(build the graph and run it first)",
    ),
]


@pytest.mark.parametrize(("fn", "text"), [pytest.param(f, t, id=i) for i, f, t in CASES])
def test_error_message(fn: Callable[[], object], text: str) -> None:
    assert message(fn) == text


def test_trace_from_missing_input() -> None:
    a = sym([2], name="a")
    b = sym([3, 2], name="b")
    y = E.mul(a, b)
    assert message(lambda: ember.trace_from(y, [a])) == (
        "trace_from: the outputs depend on symbolic tensor 'b' of type float32[3, 2] that is "
        "not among the inputs; pass it in `inputs`"
    )
    # Naming every input works, and so does letting trace_from discover them.
    assert ember.trace_from(y, [a, b]).num_nodes == 1
    assert len(ember.trace_from(y).inputs) == 2


def test_trace_from_bad_inputs() -> None:
    x = sym([2])
    assert message(lambda: ember.trace_from(x + 1.0, [ones([2])])) == (
        "trace_from: inputs must be symbolic tensors made by ember.symbol or ember.symbol_like "
        "(got a concrete tensor)"
    )
    assert message(lambda: ember.trace_from(x + 1.0, [x + 1.0])) == (
        "trace_from: inputs must be symbolic tensors made by ember.symbol or ember.symbol_like "
        "(got the output of an operator)"
    )
    assert message(lambda: ember.trace_from(x + 1.0, [x, x])) == (
        "trace_from: the same input is listed twice"
    )
    assert message(lambda: ember.trace_from([])) == "trace_from: no output tensors given"
    assert message(lambda: ember.trace_from(3)) == (  # type: ignore[arg-type]
        "trace_from(outputs): expected an ember.Tensor or a list of them, got an object of type int"
    )


def test_a_list_given_to_call_says_to_pass_the_tensors() -> None:
    """g([x, w]) where __call__ takes the tensors as arguments (it had said "expected an
    ember.Tensor or a list of them, got an object of type list")."""
    x, w = sym([2], name="x"), sym([2], name="w")
    graph = ember.trace_from(x * w, [x, w])
    a, b = ones([2]), E.full([2], 3.0)
    for g, what in ((graph.build(), "CompiledGraph.__call__"), (graph, "FlowGraph.__call__")):
        assert message(lambda g=g: g([a, b])) == (
            f"{what}: expected ember.Tensor items, got a list as item 0 of the tuple: a list "
            "inside a list (call g(x, w), not g([x, w]))")
        assert g(a, b).numpy().tolist() == [3.0, 3.0]


def test_errors_leave_nothing_half_done() -> None:
    """A failed operator raises before compiling or tracing anything: the same call with
    valid inputs works afterwards, and the cache counters did not move for the failure."""
    before = ember.cache_stats()
    message(lambda: ones([2, 3]) + ones([4]))
    assert ember.cache_stats()["builds"] == before["builds"]
    x = sym([2, 3])
    message(lambda: E.reshape(x, [5]))
    assert E.reshape(x, [3, 2]).shape == (3, 2)


def test_creation_with_symbolic_shape_names_python_api() -> None:
    text = message(lambda: ember.zeros(["n", 2]))
    assert "Tensor::" not in text
    assert "ember.symbol" in text
