"""Claim 6 decided on the invariant basin width, λ_max beside it (docs/claims.md#claim-6)."""

from __future__ import annotations

from engine.reproduce.claims import FAILS, HOLDS, INCONCLUSIVE, checklist


def _rows(attn_w, relu_w, attn_l, relu_l, censored=("", "")) -> list[dict]:
    rows = []
    for model, ws, ls, c in (
        ("MLP-Attn", attn_w, attn_l, censored[0]),
        ("2L-ReLU", relu_w, relu_l, censored[1]),
    ):
        for seed, (w, lam) in enumerate(zip(ws, ls)):
            rows.append(
                {
                    "model": model,
                    "seed": str(seed),
                    "hessian_top_eig": str(lam),
                    "width_1d": "" if w is None else str(w),
                    "width_delta": "0.1",
                    "width_censored": c,
                    "converged": "True",
                    "above_chance": "True",
                }
            )
    return rows


def _c6(rows: list[dict]) -> dict:
    return next(c for c in checklist({"digits": {"sharpness": rows}}) if c["claim"] == 6)


def test_width_decides_and_lambda_disagreement_is_said() -> None:
    # MLP-Attn wider (flatter by width) but with the larger λ_max: the two disagree
    c = _c6(_rows((0.8, 0.82, 0.79), (0.3, 0.31, 0.29), (9.0, 9.1, 9.2), (1.0, 1.1, 1.0)))
    assert c["verdict"] == HOLDS and c["measure"] == "width_1d"
    assert c["lambda_verdict"] == FAILS and "λ_max disagrees" in c["statistic"]
    # narrower MLP-Attn: does not hold, λ_max agrees, no disagreement note
    c = _c6(_rows((0.2, 0.21, 0.2), (0.6, 0.61, 0.6), (9.0, 9.1, 9.2), (1.0, 1.1, 1.0)))
    assert c["verdict"] == FAILS and "disagrees" not in c["statistic"]


def test_censored_width_cannot_be_the_narrower_side() -> None:
    # 2L-ReLU's basin reaches the grid's end: its width is a lower bound, so no "holds"
    c = _c6(_rows((1.9, 1.9, 1.9), (1.0, 1.0, 1.0), (1, 1, 1), (2, 2, 2), ("", "True")))
    assert c["verdict"] == INCONCLUSIVE and "lower bound" in c["statistic"]


def test_runs_without_the_width_fall_back_to_lambda_max() -> None:
    c = _c6(_rows((None, None), (None, None), (1.0, 1.1), (5.0, 5.2)))
    assert c["verdict"] == HOLDS and c["measure"] == "hessian_top_eig"
    assert "decided on raw λ_max" in c["statistic"]
