"""The reproduction plan and the checklist rules, on hand-made tables with known verdicts."""

from __future__ import annotations

import math

import pytest

from engine.reproduce.claims import FAILS, HOLDS, INCONCLUSIVE, NO_DATA, checklist
from engine.reproduce.compare import compare
from engine.reproduce.plan import plan
from engine.results import mean_std, wilson_interval


def test_plan_parts_and_experiments() -> None:
    parts = plan(("mnist",), tables=(1, 2, 3, 4), seeds=(0, 1), data_dir="/d")
    assert [p.key for p in parts] == ["mnist-multiclass", "mnist-binary", "mnist-binary-gd"]
    multi, binary, gd = parts
    assert set(multi.spec.experiment.split(",")) == {
        "spectrum",
        "landscape",
        "ntk",
        "flip",
        "advtrain",
    }
    assert multi.spec.data.classes is None and binary.spec.data.classes == (3, 8)
    assert binary.spec.experiment == "spectrum,flip" and multi.spec.seeds == (0, 1)
    assert gd.role == "gd" and gd.spec.experiment == "ntk" and gd.spec.data.classes == (3, 8)
    assert (gd.spec.train.optimizer, gd.spec.train.lr, gd.spec.model.sigma_w) == ("gd", 1.0, 1.0)
    assert multi.spec.train.optimizer == "adam" and gd.spec.model.widths == multi.spec.model.widths
    only1 = plan(("cifar10",), tables=(1,), quick=True)
    assert [p.role for p in only1] == ["main", "gd"] and "flip" not in only1[0].spec.experiment
    assert only1[0].spec.quick and only1[1].spec.quick
    assert [p.key for p in plan(("mnist",), tables=(2, 3))] == ["mnist-multiclass", "mnist-binary"]
    assert plan(("cifar10",), tables=(3,))[1].spec.data.classes == (1, 0)


def test_explicit_seeds_win_over_the_quick_preset() -> None:
    """A reproduction runs three seeds, --quick too (headless --quick runs one), unless
    --seeds says otherwise."""
    assert plan(("digits",), tables=(1,), quick=True)[0].spec.seeds == (0, 1, 2)
    assert plan(("digits",), tables=(1,), quick=True, seeds=(0,))[0].spec.seeds == (0,)
    assert plan(("digits",), tables=(1,))[0].spec.seeds == (0, 1, 2)


def test_wilson_and_mean_std() -> None:
    lo, hi = wilson_interval(10, 100)
    assert (
        lo < 0.1 < hi
        and lo == pytest.approx(0.0552, abs=1e-3)
        and hi == pytest.approx(0.1744, abs=1e-3)
    )
    assert mean_std([1.0, 3.0, float("nan")]) == (2.0, math.sqrt(2.0), 2)


def _ntk(relu_slope: float, attn_slope: float, widths=(4, 16, 64, 256, 1024)) -> list[dict]:
    rows = []
    for seed in (0, 1):
        for i, w in enumerate(widths):
            for model, s in (("2L-ReLU", relu_slope), ("MLP-Attn", attn_slope)):
                rows.append(
                    {
                        "model": model,
                        "width": str(w),
                        "seed": str(seed),
                        "ntk_distance": str(10 + s * i + 0.01 * seed),
                    }
                )
    return rows


def _flips(
    attn: float,
    relu: float,
    relu_adv: float | None = None,
    n: int = 100,
    ridge: str = "objective:0.5",
    ranking: str = "abs_signed_mean",
) -> list[dict]:
    rows = []
    proto = {"ridge": ridge, "ranking": ranking}
    for a in ("fgsm", "pgd", "mim"):
        for model, r in (("MLP-Attn", attn), ("2L-ReLU", relu)):
            rows.append(
                {
                    "model": model,
                    "attack": a,
                    "eps": "0.3",
                    "training": "standard",
                    "seed": "0",
                    "flip_rate": str(r),
                    "n_selected": str(n),
                    "n_flipped": str(round(r * n)),
                    **proto,
                }
            )
    if relu_adv is not None:
        rows.append(
            {
                "model": "2L-ReLU",
                "attack": "pgd",
                "eps": "0.3",
                "training": "adversarial",
                "seed": "0",
                "flip_rate": str(relu_adv),
                "n_selected": str(n),
                "n_flipped": str(round(relu_adv * n)),
                **proto,
            }
        )
    return rows


def test_binary_parts_carry_the_grid_and_compare_reports_it() -> None:
    parts = plan(("mnist",), tables=(3,))
    binary = parts[1]
    assert binary.spec.flip.protocols() == (
        ("objective", "abs_signed_mean"),
        ("lambda", "abs_mean"),
        ("lambda", "abs_signed_mean"),
        ("objective", "abs_mean"),
    )
    rows = (
        _flips(0.55, 0.15)
        + _flips(0.30, 0.50, ridge="lambda:0.001", ranking="abs_mean")
        + _flips(0.60, 0.20, ridge="lambda:0.001")
        + _flips(0.5, 0.2, ranking="abs_mean")
    )
    out = compare({binary.key: {"tables": {"flip_rates": rows}}}, parts)
    # the default protocol (objective, abs_signed_mean) fills Table 3, the grid sits beside it
    t3 = {(c["model"], c["attack"]): c for c in out["table3"]}
    assert (
        t3[("MLP-Attn", "PGD")]["pooled"] == pytest.approx(55.0)
        and t3[("2L-ReLU", "PGD")]["k"] == 15
    )
    grid = {(g["rule"], g["ranking"], g["attack"]): g["ratio"] for g in out["flip_grid"]}
    assert len(grid) == 12
    assert grid[("lambda", "abs_mean", "FGSM")] == pytest.approx(0.6)
    assert grid[("objective", "abs_signed_mean", "MIM")] == pytest.approx(55 / 15)
    c3 = next(c for c in out["checklist"] if c["claim"] == 3)
    assert c3["verdict"] == HOLDS and "lambda/abs_mean" in c3["statistic"] and len(c3["grid"]) == 12


def _verdicts(**stats) -> dict[int, str]:
    return {c["claim"]: c["verdict"] for c in checklist({"mnist": stats})}


def test_checklist_holds() -> None:
    v = _verdicts(
        ntk=_ntk(-1.0, +1.0),
        spectrum=[{"kappa_G": "10", "kappa_G_cubed": "1000", "kappa_G3_direct": "1001"}],
        flip=_flips(0.30, 0.04, relu_adv=0.40),
        alignment=[
            {"kernel": k, "target": t, "ridge": "0.001", "test_rel_mse": str(m)}
            for k, t, m in (
                ("G", "eig_top", 0.5),
                ("G3", "eig_top", 0.1),
                ("G", "eig_bottom", 0.5),
                ("G3", "eig_bottom", 0.9),
            )
        ],
        sharpness=[
            {"model": "MLP-Attn", "hessian_top_eig": "1.0"},
            {"model": "MLP-Attn", "hessian_top_eig": "1.1"},
            {"model": "2L-ReLU", "hessian_top_eig": "5.0"},
            {"model": "2L-ReLU", "hessian_top_eig": "5.2"},
        ],
    )
    assert v == {1: HOLDS, 2: HOLDS, 3: HOLDS, 4: HOLDS, 5: HOLDS, 6: HOLDS, 7: NO_DATA}


def test_checklist_does_not_hold_and_inconclusive() -> None:
    v = _verdicts(
        ntk=_ntk(-1.0, -1.0),  # both converge
        spectrum=[{"kappa_G": "10", "kappa_G_cubed": "1000", "kappa_G3_direct": "50"}],
        flip=_flips(0.02, 0.30, relu_adv=0.05),
        alignment=[
            {"kernel": k, "target": t, "ridge": "0.001", "test_rel_mse": str(m)}
            for k, t, m in (
                ("G", "eig_top", 0.1),
                ("G3", "eig_top", 0.5),
                ("G", "eig_bottom", 0.9),
                ("G3", "eig_bottom", 0.5),
            )
        ],
        sharpness=[
            {"model": "MLP-Attn", "hessian_top_eig": "5.0"},
            {"model": "2L-ReLU", "hessian_top_eig": "5.1"},
        ],
    )
    assert v == {1: FAILS, 2: FAILS, 3: FAILS, 4: FAILS, 5: FAILS, 6: INCONCLUSIVE, 7: NO_DATA}
    few = _verdicts(
        ntk=_ntk(-1.0, 1.0, widths=(16, 64, 256)),
        spectrum=[{"kappa_G": "1e12", "kappa_G_cubed": "1e36", "kappa_G3_direct": "1e30"}],
        flip=_flips(0.06, 0.05, n=20),
    )
    assert few[1] == INCONCLUSIVE and few[3] == INCONCLUSIVE
    assert few[2] == f"{INCONCLUSIVE}: κ(G) beyond float64"
    assert few[4] == NO_DATA and few[5] == NO_DATA and few[6] == NO_DATA


def test_compare_marks_missing_data_not_invented() -> None:
    parts = plan(("cifar10",), tables=(1, 2, 3, 4))
    out = compare({p.key: {"missing": "cifar10 not found"} for p in parts}, parts)
    cells = out["table1"] + out["table2"] + out["table3"] + out["table4"] + out["kappa"]
    assert cells and all(
        c["status"] == NO_DATA and c["reason"] == "cifar10 not found" for c in cells
    )
    assert all("mean" not in c for c in cells)
    # each verdict says why it has no data, as an inconclusive one does
    assert {c["verdict"] for c in out["checklist"]} == {f"{NO_DATA}: cifar10 not found"}
    paper = {(c["model"], c["attack"]): c["paper"] for c in out["table2"]}
    assert paper[("MLP-Attn", "FGSM")] == 26.4 and paper[("2L-ReLU", "PGD")] == 3.1


def test_a_part_not_run_yet_says_so_in_the_checklist() -> None:
    """A reproduction under way: the items of a part still to run read "no data: not run
    yet"; a part that ran without rows invents no reason."""
    from engine.reproduce.claims import NOT_RUN

    parts = plan(("digits",), quick=True)
    runs = {p.key: {"tables": {}} for p in parts if p.role != "gd"}
    out = compare(runs, parts)  # every part but the GD one ran (with no rows)
    by_sweep = {c.get("sweep", ""): c["verdict"] for c in out["checklist"] if c["claim"] == 1}
    assert by_sweep["full-batch GD, binary"] == f"{NO_DATA}: {NOT_RUN}"
    assert by_sweep["Adam, 10-class"] == NO_DATA


def test_gd_sweep_matches_the_sample_config() -> None:
    """GD_SWEEP is the optimiser, lr and σ_w of sample_data/configs/ntk_digits_3v8_sigma1_gd.toml."""
    from pathlib import Path

    from engine.reproduce.plan import GD_SWEEP
    from engine.run.spec import RunSpec

    cfg = RunSpec.load(
        Path(__file__).parents[3] / "sample_data/configs/ntk_digits_3v8_sigma1_gd.toml"
    )
    assert cfg.replace(**GD_SWEEP) == cfg


def _lin(
    relu: list[float],
    attn: list[float],
    spread: float = 0.01,
    widths=(16, 64, 256, 1024),
    guards: dict | None = None,
) -> list[dict]:
    """ntk_distance rows (as read from CSV) with lin_distance_rel = the given means per width ± spread."""
    rows = []
    for seed, sign in ((0, -1), (1, 1)):
        for w, vr, va in zip(widths, relu, attn):
            for model, v in (("2L-ReLU", vr), ("MLP-Attn", va)):
                g = (guards or {}).get((model, w), {"converged": "True", "above_chance": "True"})
                rows.append(
                    {
                        "model": model,
                        "width": str(w),
                        "seed": str(seed),
                        "ntk_distance": "1.0",
                        "lin_distance_rel": str(v + sign * spread),
                        **g,
                    }
                )
    return rows


def test_claim1_rule_on_the_linearized_twin() -> None:
    """Holds: 2L-ReLU's lin_distance_rel falls and MLP-Attn's does not, or falls but stays
    above by more than the seed spread; does not hold: 2L-ReLU's does not fall, or both
    fall together; inconclusive: too few widths, or a cell that fails a guard."""
    from engine.reproduce.claims import _claim1

    falls = [0.4, 0.2, 0.1, 0.05]
    c = _claim1("digits", _lin(falls, [1.0, 1.2, 0.9, 1.1]))
    assert c["verdict"] == HOLDS and c["statistic"].startswith("lin_distance_rel:")
    assert c["rho_relu"] < -0.9 and c["p_relu"] < 0.05 and c["p_attn"] > 0.05
    assert (
        _claim1("digits", _lin(falls, [2.0, 1.5, 1.0, 0.8]))["verdict"] == HOLDS
    )  # falls, stays above
    assert (
        _claim1("digits", _lin(falls, [f + 0.01 for f in falls]))["verdict"] == FAILS
    )  # falls with it
    assert _claim1("digits", _lin([0.1, 0.2, 0.3, 0.4], [1.0] * 4))["verdict"] == FAILS
    assert (
        _claim1("digits", _lin(falls[:3], [1.0] * 3, widths=(16, 64, 256)))["verdict"]
        == INCONCLUSIVE
    )
    # above by less than the seed spread (0.2 + 0.2) at the widest width: not "above"
    close = _lin(falls, [2.0, 1.5, 1.0, 0.3], spread=0.2)
    assert _claim1("digits", close)["statistic"].endswith("seed spread at 3 of 4 widths")
    assert _claim1("digits", _lin(falls, [2.0, 1.5, 1.0, 0.8]))["statistic"].endswith(
        "seed spread at 4 of 4 widths"
    )
    bad = {("MLP-Attn", 16): {"converged": "False", "above_chance": "True"}}
    g = _claim1("digits", _lin(falls, [1.0, 1.2, 0.9, 1.1], guards=bad))
    assert g["verdict"] == f"{INCONCLUSIVE}: models not converged" and "ρ 2L-ReLU" in g["statistic"]
    assert g["statistic"].endswith("(on every cell, untrained ones included: holds)")
    assert g["rule_verdict"] == HOLDS and g["excluded"][0] == "MLP-Attn m=16 seed=0: not converged"
    assert "rule_verdict" not in c and "untrained" not in c["statistic"] and c["excluded"] == []
    chance = {("2L-ReLU", 64): {"converged": "True", "above_chance": "False"}}
    assert (
        _claim1("digits", _lin(falls, [1.0] * 4, guards=chance))["verdict"]
        == f"{INCONCLUSIVE}: models at chance"
    )
    old = [{k: v for k, v in r.items() if k != "lin_distance_rel"} for r in _ntk(-1.0, 1.0)]
    assert _claim1("digits", old)["statistic"].startswith("ntk_distance:")  # runs without the twin
    # one seed at 4 widths: even a perfect fall has exact p = 2/4! = 0.083, so the rule
    # cannot decide (it said "holds" or "does not hold" on the t approximation's p = 0)
    one = [r for r in _lin(falls, [1.0, 1.2, 0.9, 1.1]) if r["seed"] == "0"]
    c1 = _claim1("digits", one)
    assert c1["verdict"] == INCONCLUSIVE and c1["p_relu"] == pytest.approx(1 / 12)
    assert "4 (width, seed) points cannot reach p < 0.05 (best p 0.083)" in c1["statistic"]
    five = _lin(
        [0.4, 0.3, 0.2, 0.1, 0.05], [1.0, 1.2, 0.9, 1.1, 1.0], widths=(16, 32, 64, 256, 1024)
    )
    assert _claim1("digits", [r for r in five if r["seed"] == "0"])["verdict"] == HOLDS


def test_checklist_states_claim1_for_both_optimisers_and_guards_claims_3_and_6() -> None:
    parts = plan(("digits",), tables=(1, 3))
    falls = [0.4, 0.2, 0.1, 0.05]
    runs = {
        "digits-multiclass": {"tables": {"ntk_distance": _lin(falls, [1.0, 1.1, 1.2, 1.3])}},
        "digits-binary": {"missing": "not run"},
        "digits-binary-gd": {"tables": {"ntk_distance": _lin([0.1, 0.2, 0.3, 0.4], [1.0] * 4)}},
    }
    items = [c for c in compare(runs, parts)["checklist"] if c["claim"] == 1]
    assert [(c["sweep"], c["verdict"]) for c in items] == [
        ("Adam, 10-class", HOLDS),
        ("full-batch GD, binary", FAILS),
    ]
    assert "full-batch GD" in items[1]["title"]
    flips = [{**r, "converged": "False", "above_chance": "True"} for r in _flips(0.30, 0.04)]
    sharp = [
        {"model": m, "seed": "0", "hessian_top_eig": v, "converged": "True", "above_chance": a}
        for m, v, a in (("MLP-Attn", "1.0", "False"), ("2L-ReLU", "5.0", "True"))
    ]
    v = _verdicts(flip=flips, sharpness=sharp)
    assert (
        v[3] == f"{INCONCLUSIVE}: models not converged"
        and v[6] == f"{INCONCLUSIVE}: models at chance"
    )


def test_claims_are_decided_on_the_trained_cells_and_list_the_rest() -> None:
    """A width where a model has too few passing seeds is dropped for both models; with
    4 widths left claim 1 is still decided, and the excluded cells are named."""
    from engine.reproduce.claims import _claim1

    falls = [0.8, 0.4, 0.2, 0.1, 0.05]
    widths = (4, 16, 64, 256, 1024)
    bad = {("MLP-Attn", 4): {"converged": "False", "above_chance": "True"}}
    c = _claim1("digits", _lin(falls, [1.0, 1.0, 1.2, 0.9, 1.1], widths=widths, guards=bad))
    assert c["verdict"] == HOLDS
    assert c["excluded"] == [
        "MLP-Attn m=4 seed=0: not converged",
        "MLP-Attn m=4 seed=1: not converged",
    ]
    assert "decided on 18 of 20 cells" in c["statistic"] and "over 4 widths" in c["statistic"]
    # two widths lost: too few left, inconclusive because of the guard
    bad2 = {**bad, ("2L-ReLU", 16): {"converged": "False", "above_chance": "True"}}
    c2 = _claim1("digits", _lin(falls, [1.0] * 5, widths=widths, guards=bad2))
    assert c2["verdict"] == f"{INCONCLUSIVE}: models not converged" and len(c2["excluded"]) == 4


def test_claim3_drops_an_attack_without_trained_cells_and_decides_on_the_rest() -> None:
    flips = _flips(0.30, 0.04)
    for r in flips:
        if r["attack"] == "mim" and r["model"] == "MLP-Attn":
            r.update(converged="False", above_chance="True")
    c = next(x for x in checklist({"mnist": {"flip": flips}}) if x["claim"] == 3)
    assert c["verdict"] == HOLDS and "MIM" not in c["statistic"].split("(excluded")[0]
    assert c["excluded"] == ["MLP-Attn mim seed=0: not converged"]
    every = [{**r, "converged": "False"} for r in flips]
    c = next(x for x in checklist({"mnist": {"flip": every}}) if x["claim"] == 3)
    assert c["verdict"] == f"{INCONCLUSIVE}: models not converged"


@pytest.mark.parametrize(
    ("kappa", "decided"), [(1e4, True), (1e8, True), (1e10, True), (1e11, False), (1e12, False)]
)
def test_claim2_is_decided_exactly_where_float64_resolves_kappa_g3(kappa, decided) -> None:
    """On the synthetic sweep (prescribed κ(G), 64×32): inside the bound the measured
    κ(G³) agrees with κ(G)³ and the claim holds; past it the claim is inconclusive, and
    the measured value has indeed drifted from κ(G)³ (so a verdict there would be noise)."""
    import torch

    from engine.reproduce.claims import EPS64, _claim2, resolvable
    from engine.spectral import spectrum
    from engine.spectral.synthetic import geometric_singular_values, prescribed_spectrum

    g = torch.Generator().manual_seed(0)
    x = prescribed_spectrum(geometric_singular_values(kappa, 32), 64, 32, g)
    row = spectrum(x).row("synthetic")
    assert resolvable(row["kappa_G"]) is decided
    c = _claim2("synthetic", [row])
    err = abs(math.log10(c["ratio"]))
    if decided:
        assert c["verdict"] == HOLDS and err < math.log10(1.1)
    else:
        assert c["verdict"] == f"{INCONCLUSIVE}: κ(G) beyond float64"
        assert EPS64 * kappa**1.5 > 1


def test_protocols_plan_each_part_twice_and_decide_each_claim_under_both() -> None:
    """--protocols paper,centred: every part once uncentred and once centred (keyed
    -centred), each claim decided per protocol, and the checklist's lines put the two
    verdicts side by side within 80 columns."""
    from engine.errors import ConfigError
    from malleability_tui.views.claims import checklist_details, checklist_lines, checklist_verdicts

    parts = plan(("mnist",), tables=(2,), protocols=("paper", "centred"))
    assert [(p.key, p.protocol, p.spec.data.center) for p in parts] == [
        ("mnist-multiclass", "paper", False),
        ("mnist-multiclass-centred", "centred", True),
    ]
    assert [p.protocol for p in plan(("mnist",), tables=(2,), quick=True)] == ["centred"]
    assert [p.key for p in plan(("mnist",), tables=(2,), protocols=("centred",))] == [
        "mnist-multiclass"
    ]
    with pytest.raises(ConfigError, match="paper, centred"):
        plan(("mnist",), protocols=("raw",))
    runs = {
        "mnist-multiclass": {"tables": {"flip_rates": _flips(0.06, 0.05, n=20)}},
        "mnist-multiclass-centred": {"tables": {"flip_rates": _flips(0.60, 0.05)}},
    }
    out = compare(runs, parts)
    assert out["protocols"] == ["paper", "centred"]
    c3 = {c["protocol"]: c["verdict"] for c in out["checklist"] if c["claim"] == 3}
    assert c3 == {"paper": INCONCLUSIVE, "centred": HOLDS}
    assert {c["protocol"] for c in out["table2"]} == {"paper", "centred"}
    lines = checklist_lines(out)
    assert lines[0].split() == ["#", "data", "paper", "centred", "claim"]
    three = next(ln for ln in lines if ln.startswith("3 "))
    assert "? inconclusive" in three and "✓ holds" in three and three.endswith("malleability")
    assert all(len(ln) <= 80 for ln in lines) and len(lines) == 1 + 7
    verdicts = checklist_verdicts(out)
    assert len(verdicts) == len(lines) and verdicts[lines.index(three)] == ""
    assert any(d.startswith("3 mnist (centred): ") for d in checklist_details(out))
    # one protocol: no header, one line per item, no protocol key
    single = compare({"mnist-multiclass": runs["mnist-multiclass"]}, parts[:1])
    assert "protocols" not in single and all("protocol" not in c for c in single["checklist"])
    assert len(checklist_lines(single)) == len(single["checklist"])


def test_a_centring_fraction_is_a_protocol_of_its_own() -> None:
    """--protocols alpha-<α> (and reproduce --center-fraction): every part, binary and GD
    ones too, centres by α (docs/protocol.md#kappa-sweep), is keyed and labelled by it, and
    the names round-trip; the checklist puts three protocols side by side in 80 columns."""
    from engine.errors import ConfigError
    from engine.reproduce.plan import protocol_fraction, protocol_of
    from malleability_tui.views.claims import checklist_lines

    parts = plan(("mnist",), protocols=("paper", "alpha-0.5", "centred"))
    assert {p.protocol for p in parts} == {"paper", "alpha-0.5", "centred"}
    for p in parts:
        assert p.spec.data.centring == protocol_fraction(p.protocol)
        assert protocol_of(p.spec) == p.protocol
    half = [p for p in parts if p.protocol == "alpha-0.5"]
    assert {p.key for p in half} == {
        "mnist-multiclass-alpha-0.5",
        "mnist-binary-alpha-0.5",
        "mnist-binary-gd-alpha-0.5",
    }
    assert all(p.spec.data.center is False for p in half)
    assert [p.key for p in plan(("mnist",), tables=(2,), protocols=("alpha-0.25",))] == [
        "mnist-multiclass"
    ]
    for bad in ("alpha-0", "alpha-1", "alpha-x", "alpha-", "beta-0.5"):
        with pytest.raises(ConfigError, match="alpha-<α>"):
            plan(("mnist",), protocols=(bad,))
    runs = {
        "mnist-multiclass": {"tables": {"flip_rates": _flips(0.06, 0.05, n=20)}},
        "mnist-multiclass-alpha-0.5": {"tables": {"flip_rates": _flips(0.3, 0.05)}},
        "mnist-multiclass-centred": {"tables": {"flip_rates": _flips(0.60, 0.05)}},
    }
    two = plan(("mnist",), tables=(2,), protocols=("paper", "alpha-0.5", "centred"))
    out = compare(runs, two)
    assert out["protocols"] == ["paper", "alpha-0.5", "centred"]
    lines = checklist_lines(out)
    assert lines[0].split()[:5] == ["#", "data", "paper", "alpha-0.5", "centred"]
    assert all(len(ln) <= 80 for ln in lines)


def test_shipped_commands_name_no_folder_of_the_machine(tmp_path) -> None:
    """``results add`` writes the command as a reader types it in the repository: the
    reproduction's folder as RUN, other absolute paths relative to the repository."""
    from engine.reproduce.publish import portable_command

    repo, run = tmp_path / "repo", tmp_path / "runs" / "r1"
    data = tmp_path / "shared" / "data" / "mnist"
    cmd = f"malleability reproduce --data-dir {data} --out {run} --quick --dataset=mnist"
    got = portable_command(cmd, run, base=repo)
    assert got == (
        "malleability reproduce --data-dir ../shared/data/mnist --out RUN --quick --dataset=mnist"
    )
    assert portable_command(f"x --out={run}", run, base=repo) == "x --out=RUN"
    assert portable_command("x --data-dir ../d", run, base=repo) == "x --data-dir ../d"
    assert portable_command(None, run, base=repo) is None


def test_an_excluded_cell_shows_how_far_it_trained() -> None:
    """A cell left out for failing a guard is named with its measured train loss, so a
    verdict that could not be decided says how far training got (and a row without the
    column reads as before)."""
    from engine.reproduce.claims import on_trained

    rows = [
        {"model": "MLP-Attn", "width": 16, "seed": 0, "train_loss": "0.6169",
         "converged": "False", "above_chance": "True"},
        {"model": "MLP-Attn", "width": 16, "seed": 1, "converged": "False"},
        {"model": "MLP-Attn", "width": 16, "seed": 2, "train_loss": "0.1",
         "converged": "True", "above_chance": "True"},
    ]  # fmt: skip
    _, excluded, _, _ = on_trained(rows, lambda r: r["width"])
    assert excluded == [
        "MLP-Attn m=16 seed=0: not converged at train loss 0.617",
        "MLP-Attn m=16 seed=1: not converged",
    ]
