"""``kappa_sweep`` end to end on digits at tiny sizes (docs/protocol.md#kappa-sweep): its
rows, the κ measured per α against the spectrum of the centred data, its cells against
the ``ntk`` experiment's on the same spec, and the convergence flags."""

from __future__ import annotations

import pytest

from engine.data import load_dataset
from engine.experiments import execute
from engine.experiments.estimate import planned_work
from engine.experiments.kappa_sweep import point_spec
from engine.results.tables import KappaFlipRow, KappaNtkRow, KappaSweepRow
from engine.run.spec import DataSpec, KappaSpec, RunSpec, TrainSpec
from engine.spectral.spectrum import spectrum

ALPHAS = (0.0, 0.5, 1.0)


def _spec(**kw) -> RunSpec:
    return RunSpec(
        experiment="kappa_sweep",
        data=DataSpec(name="digits", classes=(3, 8)),
        train=TrainSpec(lr=0.01),
        kappa=KappaSpec(
            fractions=ALPHAS,
            n_train=100,
            n_test=40,
            widths=(16, 64),
            epochs=150,
            flip_width=64,
            pgd_steps=3,
        ),
        seeds=(0,),
        device="cpu",
        **kw,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return execute(_spec(), tmp_path_factory.mktemp("kappa") / "run")


def test_the_rows_of_every_point(run):
    ntk = [KappaNtkRow.from_row(r) for r in run.tables["kappa_ntk"]]
    flips = [KappaFlipRow.from_row(r) for r in run.tables["kappa_flips"]]
    pts = [KappaSweepRow.from_row(r) for r in run.tables["kappa_sweep"]]
    assert len(ntk) == 3 * 2 * 2 and len(flips) == 3 * 2 and len(pts) == 3 * 2
    assert sorted({r.alpha for r in pts}) == list(ALPHAS)
    assert all(r.n_selected == 10 for r in flips)  # the top 10 % of 100
    for p in pts:  # a point's flag is its cells' guards, counted
        (n1, b1), (n2, b2) = _failed(ntk, p), _failed(flips, p)
        assert (n1, n2) == (2, 1) and p.cells == 3 and p.failed_cells == b1 + b2
        assert p.slope_ok == (b1 == 0) and p.flip_ok == (b2 == 0)
    # the uncentred MLP-Attn does not train in 150 epochs here; centred it does (the knob)
    attn = {p.alpha: p for p in pts if p.model == "MLP-Attn"}
    assert attn[0.0].slope_ok is False and attn[1.0].slope_ok and attn[1.0].flip_ok
    assert all(p.slope_ok and p.flip_ok for p in pts if p.model == "2L-ReLU")
    s = run.summary["kappa_sweep"]
    assert set(s["fits"]) == {"flip_ratio", "lin_slope_attn", "lin_slope_relu"}
    assert "indistinguishable by construction" in s["kappa_cubed"]


def _failed(rows, p) -> tuple[int, int]:
    """(cells, cells failing a guard) of ``rows`` at the point ``p``."""
    mine = [r for r in rows if r.alpha == p.alpha and r.model == p.model]
    return len(mine), sum(r.converged is False or r.above_chance is False for r in mine)


def test_kappa_falls_as_alpha_grows_and_matches_the_centred_spectrum(run):
    pts = [KappaSweepRow.from_row(r) for r in run.tables["kappa_sweep"]]
    kappa = {p.alpha: p.kappa_G for p in pts}
    assert kappa[0.0] > kappa[0.5] > kappa[1.0]  # measured: 5.7e5, 1.5e5, 4.4e4
    assert all(p.kappa_G3_direct == pytest.approx(p.kappa_G**3, rel=1e-6) for p in pts)
    centred = load_dataset("digits", classes=(3, 8), n_train=100, n_test=40, seed=0, center=True)
    assert kappa[1.0] == spectrum(centred.x_train).kappa_G  # the same rows, bit for bit


def test_its_cells_are_the_ntk_experiments_on_the_same_point(run, tmp_path):
    # α = 0 is the paper's protocol: the ntk experiment on that point's spec, same numbers
    # (both models, as the point trains them: 2L-ReLU and MLP-Attn of a width share one
    # fused stack, whose float32 products round apart from a network's alone)
    ntk_spec = point_spec(_spec(), 0.0).replace(experiment="ntk", data__center_fraction=None)
    ntk = execute(ntk_spec, tmp_path / "ntk").tables["ntk_distance"]
    alone = [r for r in ntk if r["model"] == "2L-ReLU"]
    mine = [r for r in run.tables["kappa_ntk"] if r["alpha"] == 0.0 and r["model"] == "2L-ReLU"]
    assert [r["lin_distance_rel"] for r in mine] == [r["lin_distance_rel"] for r in alone]
    assert [r["width"] for r in mine] == [16, 64]


def test_the_estimate_counts_every_point():
    sp = _spec()
    one = sum(w.all_steps for w in planned_work(point_spec(sp, 0.0)).values())
    assert planned_work(sp)["kappa_sweep"].all_steps == pytest.approx(len(ALPHAS) * one)


def test_a_resumed_sweep_keeps_its_rows_once(run):
    names = ("kappa_ntk.csv", "kappa_flips.csv", "kappa_sweep.csv")
    before = {n: (run.path / n).read_text() for n in names}
    again = execute(_spec(), run.path, resume=True)
    assert {n: (run.path / n).read_text() for n in names} == before
    assert again.summary["kappa_sweep"]["headline"] == run.summary["kappa_sweep"]["headline"]


def test_results_add_ships_a_sweep_and_the_page_reads_only_its_files(run, tmp_path):
    """`malleability results add RUN` on a kappa_sweep run: the rows, spec, fits and
    figure under kappa/<data>-<classes>-n<n>/, run.json with the command that reruns it
    and the wall time, load and commit env.json recorded; the page's table has one line a
    α with each point's κ(G) as the CSV holds it, and is regenerated from the files alone."""
    import csv
    import json

    from typer.testing import CliRunner

    from engine.reproduce.page import page
    from malleability_tui.cli.main import app

    env = json.loads((run.path / "env.json").read_text())
    assert env["load_start"] and env["load_end"] and "commit" in env
    into = tmp_path / "results"
    res = CliRunner().invoke(app, ["results", "add", str(run.path), "--into", str(into)])
    assert res.exit_code == 0, res.output
    folder = into / "kappa" / "digits-3v8-n100"
    for name in ("kappa_sweep.csv", "kappa_ntk.csv", "kappa_flips.csv", "spec.toml"):
        assert (folder / name).read_bytes() == (run.path / name).read_bytes()
    assert (folder / "figures" / "digits-3v8-n100_kappa_sweep.png").stat().st_size > 1000
    assert "figures/digits-3v8-n100_kappa_sweep.png)" in (into / "index.md").read_text()
    info = json.loads((folder / "run.json").read_text())
    assert info["command"] == "malleability headless --config spec.toml"
    assert info["seconds"] >= 0 and info["load_start"] == env["load_start"]
    assert RunSpec.load(folder / "spec.toml") == RunSpec.load(run.path / "spec.toml")
    text = (into / "index.md").read_text()
    assert text == page(into)
    section = text[text.index("### digits 3 vs 8, n_train 100") :]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ") and "κ(G)" not in ln]
    with (folder / "kappa_sweep.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(lines) == len(ALPHAS)
    for ln, a in zip(lines, ALPHAS):
        k = next(float(r["kappa_G"]) for r in rows if float(r["alpha"]) == a)
        assert ln.split(" | ")[1] == f"{k:.3g}"
    for h in run.summary["kappa_sweep"]["headline"]:
        assert f"- {h}" in section
    flagged = [dict(r, flip_ok="False") if i == 0 else r for i, r in enumerate(rows)]
    with (folder / "kappa_sweep.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(flagged)
    first = next(ln for ln in page(into).splitlines() if ln.startswith(f"| {ALPHAS[0]:.3g} |"))
    pct = f"{100 * float(rows[0]['flip_rate']):.1f} %"
    assert "failed a guard" in first and pct not in first.split(" | ")[2]  # no number shown
    kept = (folder / "kappa_sweep.csv").read_text().splitlines()[:-2]
    (folder / "kappa_sweep.csv").write_text("\n".join(kept) + "\n")
    assert page(into) != text  # the page is the files' and nothing else


def test_results_add_refuses_an_unfinished_sweep(run, tmp_path):
    import json
    import shutil

    from typer.testing import CliRunner

    from malleability_tui.cli.main import app

    copy = tmp_path / "run"
    shutil.copytree(run.path, copy)
    env = json.loads((copy / "env.json").read_text())
    (copy / "env.json").write_text(json.dumps(dict(env, status="interrupted")))
    res = CliRunner().invoke(app, ["results", "add", str(copy), "--into", str(tmp_path / "r")])
    assert res.exit_code != 0 and "a finished kappa_sweep run" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "r" / "kappa").exists()
