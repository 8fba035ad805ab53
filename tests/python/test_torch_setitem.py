"""Writes into part of a tensor through torch.compile(backend="ember"): ``x[index] = v``,
in-place ops on views (``x[:, 0].fill_(2)``, ``x.narrow(...).copy_(z)``), ``index_put_``
and ``masked_fill_``. Each must leave what eager PyTorch leaves, in the results and in the
graph inputs it updates."""

from __future__ import annotations

import warnings

import pytest
import torch

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def as_list(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def check(fn, *args, strict=True, dynamic=None, calls=None):
    """fn compiled by ember against eager PyTorch, on copies of the arguments (which fn may
    update): the results and the arguments afterwards must agree. strict: ember converts
    every operator, with no warning of eager PyTorch running any. calls: further argument
    tuples for the same compiled function."""
    compiled = torch.compile(fn, backend="ember", dynamic=dynamic,
                             options={"strict": strict})
    for call in [args, *(calls or [])]:
        mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in call]
        theirs = [a.clone() if isinstance(a, torch.Tensor) else a for a in call]
        with torch.no_grad(), warnings.catch_warnings():
            if strict:  # and not run eagerly as a whole either
                warnings.filterwarnings("error", message="ember")
            actual = as_list(compiled(*mine))
            expected = as_list(fn(*theirs))
        assert len(actual) == len(expected)
        for i, (a, e) in enumerate([*zip(actual, expected, strict=True),
                                    *zip(mine, theirs, strict=True)]):
            if not isinstance(e, torch.Tensor):
                assert a == e
                continue
            assert a.dtype == e.dtype and a.shape == e.shape, f"value {i}"
            torch.testing.assert_close(a, e, atol=1e-6, rtol=1e-6,
                                       msg=lambda m, i=i: f"value {i}: {m}")


def test_slice_assignment_of_a_new_tensor():
    def f(x):
        y = x.new_zeros(x.shape)
        y[:, 1:] = x[:, :-1]
        y[:, 0] = 2
        return y

    check(f, torch.randn(3, 5))


def shift_tokens_right(input_ids, pad_token_id: int, decoder_start_token_id: int):
    """HuggingFace's, as BART makes its decoder inputs."""
    shifted = input_ids.new_zeros(input_ids.shape)
    shifted[:, 1:] = input_ids[:, :-1].clone()
    shifted[:, 0] = decoder_start_token_id
    shifted.masked_fill_(shifted == -100, pad_token_id)
    return shifted


def test_shift_tokens_right():
    ids = torch.tensor([[5, 6, -100, 7, 8], [9, -100, 3, 4, 1]])
    check(lambda ids: shift_tokens_right(ids, 1, 2), ids)


def test_shift_tokens_right_dynamic_shapes():
    ids = torch.randint(0, 50, (2, 6))
    ids[0, 2] = -100
    check(lambda ids: shift_tokens_right(ids, 1, 2), ids, dynamic=True,
          calls=[(torch.randint(0, 50, (3, 9)),), (torch.randint(-100, -99, (4, 4)),)])


def test_basic_indices_and_broadcast_values():
    def f(x, z):
        y = x.clone()
        y[1] = 0.5                      # a row
        y[..., -1] = z[:, 0]            # Ellipsis, negative index, a value of fewer dims
        y[2:4, None, 1:3] = z[:2, None, :2]  # None in the index
        y[:, 3:] = z[0, :2]             # broadcast across rows
        y[-1:] = y[0]                   # reads the updated tensor
        y[0, 0] = y[1, 1] * 3           # a 0-d value
        y[5:9] = 7                      # clamped to the end
        y[3:3] = 1                      # empty: nothing written
        return y

    check(f, torch.randn(6, 5), torch.randn(6, 5))


def test_boolean_mask_assignment():
    def f(x):
        y = x.clone()
        y[y > 1] = -1.0
        m = x[:, 0] < 0
        y[m] = 0.0                      # a mask over the first dimension
        y[x < -1] = x[0, 0]             # a 0-d tensor value
        return y

    check(f, torch.randn(5, 4) * 2)


def test_values_used_before_and_after_the_assignment():
    def f(x):
        y = x * 1.0
        before = y * 2
        y[:, 1] = 5
        after = y + before
        y[0] = after[1]
        return before, after, y

    check(f, torch.randn(3, 4))


def test_inplace_ops_on_basic_views_write_back():
    def f(x, z):
        y = x.clone()
        y[:, 0].fill_(2)
        y[:, :2].mul_(3)
        y.narrow(1, 2, 2).copy_(z)
        y.select(0, 1).zero_()
        y[..., -1].add_(1)
        y[1:, 3:] += 4
        y[0][1] = 7                     # a write into a view of a view of y
        y[2].masked_fill_(y[2] > 3, -5.0)
        return y

    check(f, torch.randn(4, 5), torch.randn(4, 2))


def test_graph_inputs_updated_through_an_index():
    def f(x, y):
        x[:, 0] = 0
        y[1:].mul_(2)
        return x * 2, y.sum()

    check(f, torch.randn(3, 4), torch.randn(3, 4))


def test_input_updated_and_read_in_the_same_graph():
    def f(x):
        before = x.sum(1)
        x[:, 1:] = x[:, :-1].clone()
        x[0, :2].fill_(-1)
        return before, x + 1

    check(f, torch.randn(3, 5))


def test_operators_named_with_an_underscore_update_nothing():
    """``a & b`` and ``a | b`` are ``operator.and_`` and ``operator.or_`` in Dynamo's graph:
    their trailing underscore is not an in-place update. (They were taken for one: the result
    was copied into ``a``, which changed the caller's tensor and the next result, and failed
    where ``a`` broadcasts.)"""
    def f(a, b):
        return a & b, a | b, a ^ b, ~a

    a, b = torch.rand(2, 3, 4) > 0.5, torch.rand(2, 3, 4) > 0.5
    check(f, a, b)
    check(f, torch.randint(-8, 8, (2, 3, 4)), torch.randint(-8, 8, (2, 3, 4)))
    check(f, a[:1], b)  # a broadcasts against b


def test_index_put_and_tensor_index_assignment():
    def f(x, i):
        y = x.clone()
        y.index_put_((x > 0,), torch.tensor(9.0))
        y[i] = 3.0                       # integer tensor index: runs eagerly
        y.index_put_((i,), torch.tensor(1.5), accumulate=True)
        return y

    check(f, torch.randn(4, 3), torch.tensor([0, 2, 2]), strict=False)


def test_inplace_on_a_tensor_index_copy_does_not_write_back():
    def f(x, i):
        y = x.clone()
        c = y[i]                        # a copy, not a view
        c.mul_(10)
        c[0] = -1
        y[:, 0].add_(c[:, 0].sum())     # a view of y: written back
        return y, c

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(f, torch.randn(4, 3), torch.tensor([1, 3]), strict=False)


def test_unsupported_writes_run_eagerly_and_stay_correct():
    def f(x):
        y = x.clone()
        y[::2] = 0.0                    # a step: not converted
        y[1:, 1] = 4.0                  # converted
        return y * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(f, torch.randn(5, 3), strict=False)


def test_inplace_on_a_result_of_a_multi_output_operator():
    """A result picked from topk, max(dim) or _foreach_add is a tensor of its own: updating
    it in place leaves the other results as they were (split's results, views of their
    input, are still views)."""

    def f(x):
        values, indices = x.topk(2, dim=1)
        values.mul_(2)
        best, where = x.max(dim=0)
        best.add_(1)
        a, b = torch._foreach_add([x, x * 2], 1.0)
        a.neg_()
        return values, indices, best, where, a, b

    check(f, torch.randn(4, 5))
