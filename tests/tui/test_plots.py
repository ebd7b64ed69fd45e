"""plotext-backed plots (no app): ticks, axis titles, legends, heatmap axes and colour legend."""

from __future__ import annotations

import math

from malleability_tui.plots import Axis, Series, bar_chart, heatmap, line_chart, ticks_for


def test_integer_axis_has_integer_ticks_only():
    pos, labels = ticks_for(1, 30, Axis(integer=True), 6)
    assert all(float(p).is_integer() for p in pos) and labels == [str(int(p)) for p in pos]
    pos, _ = ticks_for(1, 3, Axis(integer=True), 8)  # few epochs: no 1.5, 2.5
    assert pos == [1, 2, 3]


def test_log_axis_one_tick_per_decade_or_thinned():
    pos, labels = ticks_for(-3, 2, Axis(log=True), 8)
    assert pos == [-3, -2, -1, 0, 1, 2] and labels[0] == "0.001" and labels[-1] == "100"
    pos, labels = ticks_for(-41, 0, Axis(log=True), 6)  # a 41-decade spectrum
    steps = {b - a for a, b in zip(pos, pos[1:])}
    assert len(pos) <= 6 and len(steps) == 1 and steps.pop() in (10, 20)
    assert "1e-40" in labels


def test_narrow_range_gets_distinct_labels():
    _, labels = ticks_for(math.log10(2.3000), math.log10(2.3026), Axis(log=True), 5)
    assert len(labels) >= 2 and len(set(labels)) == len(labels)  # not "2.3 / 2.3 / 2.3"
    _, labels = ticks_for(0.991, 0.995, Axis(), 5)
    assert len(set(labels)) == len(labels) >= 2


def test_line_chart_axis_titles_ticks_legend_and_size():
    s1 = Series("2L-ReLU", [16, 64, 256], [45.0, 40.0, 39.0], err=[1.0, 2.0, 0.5], points=True)
    s2 = Series("MLP-Attn", [16, 64, 256], [10.0, 20.0, 33.0], points=True)
    for w, h in ((38, 10), (60, 16), (110, 30)):
        text = line_chart(
            [s1, s2],
            w,
            h,
            x=Axis(log2=True, ticks=[16, 64, 256], label="width m"),
            y=Axis(label="NTK distance"),
            title="t",
        ).plain
        lines = text.split("\n")
        assert len(lines) == h and max(len(ln) for ln in lines) <= w
        assert "2L-ReLU" in lines[0] and "MLP-Attn" in lines[0]  # legend line
        assert "width m" in lines[-1] and "NTK distance" in lines[-1]  # axis titles, always
        assert "16" in lines[-2] and "256" in lines[-2]  # x ticks at the widths
        assert sum(ln.count("●") for ln in lines[1:]) >= 5  # the points (two may overlap)


def test_empty_chart_says_why_and_names_axes():
    text = line_chart([], 40, 8, x=Axis(label="epoch"), y=Axis(label="loss"), empty="waiting").plain
    assert "waiting" in text and "epoch" in text and "loss" in text


def test_heatmap_scales_with_box_and_labels_axes():
    grid = [[a * a + 2 * b * b + 0.01 for a in range(-3, 4)] for b in range(-3, 4)]
    xs = [i / 3 for i in range(-3, 4)]
    for w, h in ((40, 12), (90, 30)):
        text = heatmap(grid, w, h, log=True, xs=xs, ys=xs, title="2-D").plain
        lines = text.split("\n")
        assert len(lines) == h and max(len(ln) for ln in lines) <= w
        assert "α" in lines[-2] and "β" in lines[-2]
        assert lines[-1].startswith("loss (log)") and "0.01" in lines[-1]  # colour legend
        assert "-1" in lines[-3] and "1" in lines[-3]  # α ticks in α units
        assert sum(ln.count("█") for ln in lines[1:-1]) > (w - 10) * (h - 6) // 2  # fills


def test_bar_chart_groups_and_legend():
    text = bar_chart(
        ["FGSM", "PGD", "MIM"],
        [("2L-ReLU", [4.1, 3.3, 3.4], "cyan"), ("MLP-Attn", [34.6, 28.9, 21.9], "magenta")],
        50,
        12,
        y=Axis(label="flip %"),
    ).plain
    lines = text.split("\n")
    assert "2L-ReLU" in lines[0] and "MLP-Attn" in lines[0]
    assert all(a in lines[-2] for a in ("FGSM", "PGD", "MIM")) and "flip %" in lines[-1]
