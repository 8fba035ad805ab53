"""Views, copies, splits, stacks and creation functions (converters/views.py): each compiled in
strict mode (ember must convert it) and compared with eager PyTorch, over shapes, negative
dims, integer dtypes, empty tensors and nan/inf; the calls ember leaves to eager PyTorch
are checked by strict mode's message."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check

import ember.torch

NAN, INF = float("nan"), float("inf")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def values(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    if x.numel() > 2:
        x.view(-1)[0], x.view(-1)[-1] = NAN, -INF
    return x


def strict_message(fn, *args) -> str:
    compiled = torch.compile(fn, backend="ember", options={"strict": True})
    with pytest.raises(Exception) as info, torch.no_grad():
        compiled(*args)
    return str(info.value)


# ---- diagonals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (2, 0, 1), (-2, 1, 0), (1, -1, 0),
                                              (7, 0, 2)])
def test_diagonal_forms(offset, dim1, dim2):
    x = values(4, 5, 3)
    check(lambda x: (torch.diagonal(x, offset, dim1, dim2), x.diagonal(offset, dim1, dim2),
                     torch.diagonal_copy(x, offset, dim1, dim2),
                     torch.linalg.diagonal(x, offset=offset, dim1=dim1, dim2=dim2)), x)


def test_diagonal_integer_and_empty():
    check(lambda i, e: (torch.diagonal(i, 1), torch.diagonal(e, 0, 1, 2)),
          torch.arange(20).view(4, 5), torch.zeros(0, 3, 3))


@pytest.mark.parametrize("shape,offset", [((4,), 0), ((4,), 2), ((4,), -1), ((3, 5), 0),
                                          ((5, 3), -2), ((3, 5), 1)])
def test_diag_and_diagflat(shape, offset):
    x = values(*shape)
    check(lambda x: (torch.diag(x, offset), torch.diagflat(x, offset)), x)


def test_diagflat_0d_and_int():
    check(lambda s, i: (torch.diagflat(s), torch.diag(i, -1)), torch.tensor(3.5),
          torch.arange(3, dtype=torch.int32))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 1, 0), (-2, 0, 2), (2, 2, 0)])
def test_diag_embed(offset, dim1, dim2):
    x = values(2, 3)
    check(lambda x: torch.diag_embed(x, offset, dim1, dim2), x)


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (2, 0, 1), (-1, 1, 0), (1, -1, -2)])
def test_diagonal_scatter(offset, dim1, dim2):
    x = values(4, 5, 2)
    src = torch.diagonal(values(4, 5, 2, seed=1), offset, dim1, dim2).contiguous()
    check(lambda x, s: torch.diagonal_scatter(x, s, offset, dim1, dim2), x, src)


def test_select_and_slice_scatter():
    x, row = values(4, 5), values(5, seed=1)
    cols = values(4, 2, seed=2)
    check(lambda x, r, c: (torch.select_scatter(x, r, 0, -1),
                           torch.slice_scatter(x, c, 1, 1, None, 2),
                           torch.slice_scatter(x, c, -1, -2)), x, row, cols)
    i = torch.arange(6)
    check(lambda i: torch.select_scatter(i, torch.tensor(-7), 0, 2), i)


# ---- as_strided ----------------------------------------------------------------------------------
def test_as_strided_of_a_graph_input_without_offset():
    x = values(3, 3)
    check(lambda x: (torch.as_strided(x, (2, 2), (1, 2)), x.as_strided((2, 3), (3, 1)),
                     torch.as_strided_copy(x, (4,), (2,))), x)


def test_as_strided_with_offset_of_an_intermediate():
    x = values(16)
    check(lambda x: torch.as_strided(x * 2, (2, 1, 1, 2), (1, 7, 7, 1), 3), x)


def test_as_strided_offset_of_a_graph_input_runs_eagerly():
    """The storage offset of a graph input is not guarded: a view of a larger tensor reads
    other elements, so ember leaves the call to eager PyTorch (which stays right)."""
    assert "storage_offset of a graph input" in strict_message(
        lambda x: torch.as_strided(x, (2, 2), (1, 2), 1), values(3, 3))
    base = torch.arange(12.0)
    fn = torch.compile(lambda x: torch.as_strided(x, (2, 2), (1, 2), 1) + 0, backend="ember")
    with pytest.warns(UserWarning):
        fn(base[:10])
    torch.testing.assert_close(fn(base[2:]), torch.as_strided(base[2:], (2, 2), (1, 2), 1))


def test_as_strided_outside_the_tensor_runs_eagerly():
    assert "outside" in strict_message(lambda x: torch.as_strided(x * 1, (3,), (4,)), values(5))


def test_as_strided_scatter():
    x, src = values(3, 3), values(2, 2, seed=1)
    check(lambda x, s: (torch.as_strided_scatter(x, s, (2, 2), (1, 2), 1),
                        torch.as_strided_scatter(x, s, (2, 2), (2, 1))), x, src)


# ---- unfold, movedim, rot90, copies ------------------------------------------------------------
@pytest.mark.parametrize("dim,size,step", [(0, 3, 1), (1, 2, 3), (-1, 4, 2), (2, 5, 5)])
def test_unfold(dim, size, step):
    x = values(5, 6, 5)
    check(lambda x: (x.unfold(dim, size, step), torch.unfold_copy(x, dim, size, step)), x)


def test_unfold_0d_and_int():
    check(lambda s, i: (s.unfold(0, 1, 1), i.unfold(0, 3, 2)), torch.tensor(2.0),
          torch.arange(10))


def test_movedim_rot90():
    x = values(2, 3, 4)
    check(lambda x: (torch.movedim(x, 0, -1), torch.movedim(x, (0, -1), (2, 0)),
                     torch.moveaxis(x, 1, 0), x.movedim(2, 1)), x)
    for k in range(-5, 6):
        check(lambda x, k=k: (torch.rot90(x, k), torch.rot90(x, k, (2, -3))), x)


def test_view_copies():
    x = values(2, 1, 3)
    check(lambda x: (torch.expand_copy(x, (4, 2, 5, 3)), torch.narrow_copy(x, -1, 1, 2),
                     torch.permute_copy(x, (2, 0, 1)), torch.squeeze_copy(x),
                     torch.squeeze_copy(x, 1), torch.t_copy(x[0]),
                     torch.transpose_copy(x, 0, -1), torch.unsqueeze_copy(x, -1),
                     torch.view_copy(x, (3, -1)), *torch.unbind_copy(x, 2),
                     torch.alias_copy(x), torch.ravel(x), x.reshape_as(x.view(3, 2).t()),
                     x.view(6).view_as(x)), x)


def test_identities_of_real_tensors():
    x, i = values(3, 4), torch.arange(5)
    check(lambda x, i: (torch.conj(x), torch.conj_physical(x), torch.resolve_conj(i),
                        torch.resolve_neg(x), torch.real(i), torch.positive(x)), x, i)


# ---- splits and stacks ----------------------------------------------------------------------
def test_splits():
    x = values(6, 4, 6)
    check(lambda x: (*torch.split_with_sizes(x, [1, 3, 2]), *torch.unsafe_split(x, 4, -1),
                     *torch.unsafe_chunk(x, 4, 1), *torch.split_with_sizes_copy(x, [4, 0], 1),
                     *torch.hsplit(x, 2), *torch.hsplit(x, [1, 3, 9]), *torch.vsplit(x, 3),
                     *torch.dsplit(x, [-2]), *torch.tensor_split(x, 4, 2)), x)
    check(lambda v: torch.hsplit(v, [2, 5]), torch.arange(6))


def test_chunk_cat():
    a, b = values(2, 3, 5), values(2, 3, 1, 2, seed=1)
    check(lambda a, b: (torch._chunk_cat([a, b], 1, 2), torch._chunk_cat([a, b], 0, 3)), a, b)


def test_stacks():
    s, v, m = torch.tensor(1.5), values(3), values(3, 2, seed=1)
    check(lambda s, v, m: (torch.atleast_1d(s), torch.atleast_2d(v), torch.atleast_3d(m),
                           torch.atleast_3d(v), *torch.atleast_3d([s, v, m]),
                           torch.hstack([v, v]), torch.vstack([v, v]), torch.dstack([m, m]),
                           torch.column_stack([v, m]), torch.column_stack([s, s])), s, v, m)
    i = torch.arange(3, dtype=torch.int32)
    check(lambda i, v: (torch.hstack([i, v]), torch.vstack([i, i])), i, v)


def test_broadcasts():
    a, b = values(3, 1), values(1, 4, seed=1)
    check(lambda a, b: (*torch.broadcast_tensors(a, b), torch.broadcast_to(a, (2, 3, 4)),
                        torch.broadcast_to(b, (-1, 4))), a, b)


def test_meshgrid_cartesian_prod_block_diag():
    a, b, s = values(3), values(4, seed=1), torch.tensor(2.0)
    check(lambda a, b, s: (*torch.meshgrid(a, b, indexing="ij"),
                           *torch.meshgrid([a, s, b], indexing="xy"),
                           torch.cartesian_prod(a, b), torch.cartesian_prod(a)), a, b, s)
    i = torch.arange(6).view(2, 3)
    check(lambda i, a, s: (torch.block_diag(i, a, s), torch.block_diag(i)), i, a, s)


# ---- shuffles, shifts, values -----------------------------------------------------------------
def test_shuffles_and_shifts():
    x = values(2, 18, 4, 6)
    check(lambda x: (F.pixel_shuffle(x, 3), F.pixel_unshuffle(x, 2), F.channel_shuffle(x, 6),
                     torch.fft.fftshift(x), torch.fft.ifftshift(x, (1, -1)),
                     torch.fft.fftshift(x, 3)), x)


def test_fill_zero_sum_to_size_radd():
    x, i = values(2, 3, 4), torch.arange(6).view(2, 3)
    check(lambda x, i: (torch.fill(x, True), torch.fill(i, -3), torch.zero_(x.clone()),
                        x.sum_to_size(3, 1), x.sum_to_size((2, 1, 4)),
                        i.sum_to_size(1, 3), x.__radd__(2.5), i.__rmul__(i)), x, i)
    assert "filling an integer tensor with 2.5" in strict_message(
        lambda i: torch.fill(i, 2.5) + 1, i)


def test_out_arguments_run_eagerly():
    x = values(3, 4)
    assert "out= arguments" in strict_message(
        lambda x, o: torch.diagonal_copy(x, out=o), x, torch.empty(3))


# ---- creation ----------------------------------------------------------------------------------
def test_windows_and_logspace():
    windows = torch.signal.windows
    check(lambda x: (x + windows.hann(7), x + windows.kaiser(7, beta=12.0),
                     x + windows.general_cosine(7, a=[0.5, 0.5], sym=False),
                     x + windows.gaussian(7, std=2.0), x + windows.nuttall(7),
                     x + torch.logspace(-3, 2, 7, base=2.0),
                     torch.empty_permuted((2, 7), (1, 0)).shape[0] * x), values(7))


@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
def test_linspace_and_logspace_with_bounds_known_at_run_time(steps):
    # torch's formula in the graph: counted up from start for the first half, down from end
    # for the second
    check(lambda a, b: (torch.linspace(a, b, steps), torch.linspace(-2.5, b, steps),
                        torch.logspace(a, 2, steps, base=3.0),
                        torch.linspace(a.long(), 7, steps, dtype=torch.float64)),
          torch.tensor(-3.25), torch.tensor(4.5), tol=1e-5)


def test_linspace_with_steps_and_bounds_that_change_between_calls():
    # Dynamo makes the numbers symbolic after they change: steps a size, bounds run-time
    # scalars; a guard keeps 0 and 1 steps apart
    fn = lambda a, n: torch.linspace(a, 2 * a + 1, n) + torch.logspace(0, a, n, base=2.0)  # noqa: E731
    compiled = torch.compile(fn, backend="ember", options={"strict": True})
    for a, n in [(1.5, 5), (-2.0, 9), (0.25, 1), (3.0, 0), (0.5, 33)]:
        with torch.no_grad():
            torch.testing.assert_close(compiled(a, n), fn(a, n), atol=1e-5, rtol=1e-5)


def test_nonzero_static():
    x = values(4, 5)
    x[1] = 0
    for size in (0, 3, 17, 40):
        check(lambda x, size=size: torch.nonzero_static(x, size=size, fill_value=-7), x)
    check(lambda x: torch.nonzero_static(x > 0.5, size=6), x)
    check(lambda x: torch.nonzero_static(x.sum() * 0, size=2), x)  # 0-d: [2, 0]
    compiled = torch.compile(lambda x, k: torch.nonzero_static(x, size=k), backend="ember",
                             dynamic=True, options={"strict": True})
    for shape, k in [((3, 4), 5), ((6, 2), 20)]:
        y = values(*shape, seed=k)
        with torch.no_grad():
            torch.testing.assert_close(compiled(y, k), torch.nonzero_static(y, size=k))


def test_unsafe_masked_index():
    x = values(5, 5)
    i, j = torch.arange(-2, 8).reshape(10, 1), torch.arange(10).reshape(1, 10)
    mask = (i >= 0) & (i < 5) & (j < 5)
    check(lambda x, m, i, j: torch._unsafe_masked_index(x, m, [i, j], -8.5), x, mask, i, j)
    y = values(3, 4, 5)
    k = torch.arange(-1, 4).reshape(1, 1, 5)
    check(lambda y, m, i, k: torch._unsafe_masked_index(y, m, [i, i.mT, k], 2.0), y,
          (k >= 0) & (torch.arange(3).reshape(3, 1, 1) > 0), torch.arange(3).reshape(3, 1, 1),
          k)


def test_empty_permuted_and_new_empty_strided_shapes():
    compiled = torch.compile(
        lambda x: (torch.empty_permuted((2, 3), (1, 0)), x.new_empty_strided((2, 2), (1, 2)),
                   x.new_empty_strided((3,), (1,), dtype=torch.float64)),
        backend="ember", options={"strict": True})
    with torch.no_grad():
        a, b, c = compiled(values(3))
    assert (a.shape, b.shape, c.shape, c.dtype) == ((2, 3), (2, 2), (3,), torch.float64)


def test_module_is_registered():
    from ember.torch import registry

    assert registry.converters(torch.diagonal) and ember.torch is not None


@pytest.mark.parametrize("view", [torch.positive, torch.ravel, torch.atleast_2d,
                                  lambda x: torch.hsplit(x, 2)[0], torch.conj])
def test_inplace_write_through_a_view_reaches_its_base(view):
    """ember's results are copies: a write through one of these views must still reach the
    tensor it views (the prepare phase knows them as views)."""
    def fn(x):
        view(x).add_(1)
        return x * 2

    x = torch.arange(16.0).view(4, 4)
    with torch.no_grad():
        actual = torch.compile(fn, backend="ember")(x.clone())
    torch.testing.assert_close(actual, fn(x.clone()))
