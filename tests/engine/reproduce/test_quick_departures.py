"""The quick preset says where it departs from the paper, and the train hint says what
made failing cells converge (both from bench_quick_convergence's measurement)."""

from __future__ import annotations

from engine.experiments.train import fix_hint
from engine.reproduce.presets import apply_quick, paper_settings, quick_departures
from engine.run.spec import RunSpec


def test_quick_centres_trains_until_converged_and_says_so() -> None:
    q = apply_quick(RunSpec())
    assert q.data.center and q.train.until == "converged" and q.train.max_epochs >= q.train.epochs
    line = quick_departures(q)
    assert "centred" in line and "until converged" in line
    assert all(len("note: " + ln) <= 80 for ln in line.splitlines())
    assert quick_departures(q.replace(data__center=False, train__until="fixed")) == ""
    assert quick_departures(RunSpec()) == ""
    back = paper_settings(q)
    assert not back.data.center and back.train.until == "fixed"
    cifar = quick_departures(q.replace(data__name="cifar10"))
    assert "m=16" in cifar and "chance" in cifar


def test_the_hint_names_what_made_the_cells_converge() -> None:
    failed = {"not_converged": {"MLP-Attn": ["m=16 seed=0"], "2L-ReLU": ["m=16 seed=0"]}}
    paper = RunSpec()
    assert "--center" in fix_hint(paper, "MLP-Attn", failed)
    assert "--until-converged" in fix_hint(paper, "2L-ReLU", failed)
    capped = apply_quick(paper)
    assert "max_epochs" in fix_hint(capped, "MLP-Attn", failed)
    assert "wider" in fix_hint(capped, "MLP-Attn", {"at_chance": {"MLP-Attn": ["m=16"]}})
