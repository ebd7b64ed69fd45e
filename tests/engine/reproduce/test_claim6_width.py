"""Claim 6 decided on the invariant basin width, λ_max beside it (docs/claims.md#claim-6)."""

from __future__ import annotations

from engine.reproduce.claims import FAILS, HOLDS, INCONCLUSIVE, checklist


def _rows(attn_w, relu_w, attn_l, relu_l, censored=("", ""), adaptive=None) -> list[dict]:
    """Sharpness rows; ``adaptive`` (MLP-Attn's, 2L-ReLU's per seed) or None: a run
    written before adaptive sharpness (the column empty)."""
    rows = []
    ad = adaptive or ((None,) * len(attn_w), (None,) * len(relu_w))
    for model, ws, ls, c, ss in (
        ("MLP-Attn", attn_w, attn_l, censored[0], ad[0]),
        ("2L-ReLU", relu_w, relu_l, censored[1], ad[1]),
    ):
        for seed, (w, lam, sa) in enumerate(zip(ws, ls, ss)):
            rows.append(
                {
                    "model": model,
                    "seed": str(seed),
                    "hessian_top_eig": str(lam),
                    "width_1d": "" if w is None else str(w),
                    "width_delta": "0.1",
                    "width_censored": c,
                    "adaptive_sharpness": "" if sa is None else str(sa),
                    "adaptive_rho": "" if sa is None else "0.5",
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


FLAT, SHARP = (0.01, 0.011, 0.012), (0.05, 0.052, 0.049)  # adaptive sharpness per seed


def test_both_invariant_measures_agree_and_decide() -> None:
    # wider and adaptively flatter MLP-Attn, with the larger λ_max: holds, λ_max beside
    c = _c6(
        _rows(
            (0.8, 0.82, 0.79), (0.3, 0.31, 0.29), (9, 9.1, 9.2), (1, 1.1, 1), adaptive=(FLAT, SHARP)
        )
    )
    assert c["verdict"] == HOLDS and c["measures"] == ["width_1d", "adaptive_sharpness"]
    assert c["adaptive_sharpness_verdict"] == HOLDS and c["width_1d_verdict"] == HOLDS
    assert "adaptive sharpness at ρ 0.5 MLP-Attn 0.011" in c["statistic"]
    assert c["lambda_verdict"] == FAILS
    assert "λ_max disagrees with the basin width and adaptive sharpness" in c["statistic"]
    assert "decided without it" not in c["statistic"]
    # both say MLP-Attn is sharper, and so does λ_max: does not hold, no disagreement
    c = _c6(
        _rows(
            (0.2, 0.21, 0.2), (0.6, 0.61, 0.6), (9, 9.1, 9.2), (1, 1.1, 1), adaptive=(SHARP, FLAT)
        )
    )
    assert c["verdict"] == FAILS and "disagree" not in c["statistic"]


def test_invariant_measures_that_disagree_leave_it_inconclusive() -> None:
    # wider MLP-Attn by the width, sharper by adaptive sharpness: neither is picked
    c = _c6(
        _rows(
            (0.8, 0.82, 0.79), (0.3, 0.31, 0.29), (1, 1.1, 1), (9, 9.1, 9.2), adaptive=(SHARP, FLAT)
        )
    )
    assert c["verdict"] == INCONCLUSIVE
    assert c["width_1d_verdict"] == HOLDS and c["adaptive_sharpness_verdict"] == FAILS
    assert (
        "the invariant measures disagree: basin width holds, adaptive sharpness does not hold"
        in c["statistic"]
    )
    # λ_max sides with the width here: the note names the one it disagrees with
    assert "λ_max disagrees with the adaptive sharpness:" in c["statistic"]


def test_a_run_without_adaptive_sharpness_is_decided_on_the_width_and_says_so() -> None:
    c = _c6(_rows((0.8, 0.82, 0.79), (0.3, 0.31, 0.29), (1, 1.1, 1), (9, 9.1, 9.2)))
    assert c["verdict"] == HOLDS and c["measures"] == ["width_1d"]
    assert "this run has no adaptive sharpness: decided without it" in c["statistic"]
