"""Top Hessian eigenvalues (power, Lanczos) and Hutchinson's trace against the explicit Hessian."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call

from engine.errors import ConfigError
from engine.landscape import hessian_top_eigenvalue, hessian_top_eigenvalues, hessian_trace
from engine.models import build_model
from engine.train import data_loss

F64 = torch.float64


def explicit_hessian(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss=data_loss
) -> torch.Tensor:
    """[P, P] Hessian over the trainable parameters, built independently of the library."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    shapes = [dict(model.named_parameters())[n].shape for n in names]
    fixed = {n: t.detach() for n, t in model.named_buffers()}
    theta = torch.cat([dict(model.named_parameters())[n].detach().reshape(-1) for n in names])

    def f(flat: torch.Tensor) -> torch.Tensor:
        parts, i = {}, 0
        for n, s in zip(names, shapes):
            k = int(torch.Size(s).numel())
            parts[n] = flat[i : i + k].reshape(s)
            i += k
        return loss(functional_call(model, {**fixed, **parts}, (x,)), y)

    h = torch.func.jacrev(torch.func.jacrev(f))(theta)  # = torch.func.hessian, no forward AD
    return 0.5 * (h + h.T)


def tiny_binary():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(12, 4, generator=g, dtype=F64)
    y = torch.sign(torch.randn(12, generator=g, dtype=F64))
    model = build_model("relu", x, 5, 1, sigma_w=1.0, train_output=True, seed=1, dtype=F64)
    return model, x, y


def tiny_multiclass():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(15, 6, generator=g, dtype=F64)
    y = torch.randint(0, 3, (15,), generator=g)
    model = build_model("attn", x, 6, 3, sigma_w=1.0, seed=2, dtype=F64)
    return model, x, y


class Quadratic(nn.Module):
    """out = ½ θᵀAθ as a [1, 1] output; with loss = out.sum() the Hessian is exactly A."""

    def __init__(self, a: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("A", a)
        self.theta = nn.Parameter(torch.ones(a.shape[0], dtype=a.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (0.5 * self.theta @ self.A @ self.theta).reshape(1, 1) + 0 * x[:1, :1]


def quad_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return out.sum()


@pytest.mark.parametrize("make", [tiny_binary, tiny_multiclass])
@pytest.mark.parametrize("method", ["power", "lanczos"])
def test_top_eigenvalue_matches_eigvalsh(make, method) -> None:
    model, x, y = make()
    ev = torch.linalg.eigvalsh(explicit_hessian(model, x, y))
    # precondition of a meaningful test: a well-separated top eigenvalue
    assert ev[-1] > 1e-2 and ev[-1] - ev[-2] > 0.2 * ev[-1]
    r = hessian_top_eigenvalue(model, x, y, method=method, iters=2000, tol=1e-13)
    assert r.converged
    assert abs(r.value - float(ev[-1])) <= 1e-6 * max(1.0, abs(float(ev[-1])))


# Block power iteration on the indefinite tiny_binary Hessian needs a shift that
# slows it to ~1,000 iterations; the shifted path is covered by the quadratic below.
@pytest.mark.parametrize(
    ("make", "method"),
    [(tiny_binary, "lanczos"), (tiny_multiclass, "lanczos"), (tiny_multiclass, "power")],
)
def test_top_k_match_eigvalsh(make, method) -> None:
    model, x, y = make()
    ev = torch.linalg.eigvalsh(explicit_hessian(model, x, y)).flip(0)
    assert ev[2] - ev[3] > 0.1 * ev[2] > 1e-3  # separated, so the top 3 are well defined
    r = hessian_top_eigenvalues(model, x, y, 3, method=method, iters=3000, tol=1e-13)
    assert r.converged and len(r.values) == 3
    assert list(r.values) == sorted(r.values, reverse=True)
    torch.testing.assert_close(torch.tensor(r.values, dtype=F64), ev[:3], atol=1e-6, rtol=1e-6)


def _indefinite() -> torch.Tensor:
    q = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(0), dtype=F64))[0]
    return q @ torch.diag(torch.tensor([-5.0, 3.0, 2.0, 1.0, 0.5, -0.25], dtype=F64)) @ q.T


@pytest.mark.parametrize("method", ["power", "lanczos"])
def test_largest_algebraic_for_indefinite_hessian(method) -> None:
    # |−5| dominates: plain power iteration would return −5; λ_max is 3.
    model, x = Quadratic(_indefinite()), torch.zeros(1, 1, dtype=F64)
    r = hessian_top_eigenvalue(
        model, x, x[:, 0], method=method, iters=3000, tol=1e-13, loss=quad_loss
    )
    assert abs(r.value - 3.0) < 1e-6
    r2 = hessian_top_eigenvalues(
        model, x, x[:, 0], 2, method=method, iters=3000, tol=1e-13, loss=quad_loss
    )
    torch.testing.assert_close(
        torch.tensor(r2.values, dtype=F64), torch.tensor([3.0, 2.0], dtype=F64)
    )


def test_hutchinson_within_three_standard_errors() -> None:
    for make in (tiny_binary, tiny_multiclass):
        model, x, y = make()
        exact = float(torch.trace(explicit_hessian(model, x, y)))
        r = hessian_trace(
            model, x, y, samples=300, generator=torch.Generator().manual_seed(7), chunk=64
        )
        assert r.samples == 300 and r.stderr > 0
        assert abs(r.value - exact) <= 3 * r.stderr, (r, exact)
        again = hessian_trace(
            model, x, y, samples=300, generator=torch.Generator().manual_seed(7), chunk=17
        )
        assert abs(again.value - r.value) < 1e-10  # chunking does not change the probes


def test_hutchinson_exact_for_diagonal_and_l2_shift() -> None:
    # Rademacher probes give zᵀDz = tr D exactly for a diagonal D: zero standard error.
    d = torch.diag(torch.tensor([4.0, 1.0, 0.5], dtype=F64))
    model, x = Quadratic(d), torch.zeros(1, 1, dtype=F64)
    r = hessian_trace(model, x, x[:, 0], samples=5, loss=quad_loss)
    assert abs(r.value - 5.5) < 1e-12 and r.stderr < 1e-12
    # the optional L2 term adds λ to every eigenvalue
    top = hessian_top_eigenvalue(
        model, x, x[:, 0], method="lanczos", tol=1e-12, loss=quad_loss, l2=0.5
    )
    assert abs(top.value - 4.5) < 1e-9


def test_iteration_cap_reports_not_converged_and_bad_options() -> None:
    model, x, y = tiny_binary()
    r = hessian_top_eigenvalue(model, x, y, method="power", iters=2, tol=1e-15)
    assert not r.converged and r.iterations == 2
    with pytest.raises(ConfigError, match="method"):
        hessian_top_eigenvalue(model, x, y, method="arnoldi")
    with pytest.raises(ConfigError, match="tol"):
        hessian_top_eigenvalue(model, x, y, tol=0.0)
    with pytest.raises(ConfigError, match="samples"):
        hessian_trace(model, x, y, samples=0)
