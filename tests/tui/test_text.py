"""malleability_tui.text: the one number/duration/name text of the CLI and the TUI."""

from __future__ import annotations

import math

from malleability_tui import text as T


def test_number_reads_live_and_csv_values_alike():
    assert T.number(0.123456) == T.number("0.123456") == "0.123"
    assert T.number(1024) == T.number("1024") == "1024"
    assert T.number(1.5e7) == "1.50e+07" and T.number(2e-5) == "2.00e-05"
    assert T.number(None) == T.number("") == T.number(math.nan) == T.number("nan") == "–"
    assert T.number(math.inf) == "∞" and T.number("MLP-Attn") == "MLP-Attn"
    assert T.number(0.0) == "0" and T.number(12.345, 4) == "12.35"


def test_duration():
    assert T.duration(3725) == "1h02m" and T.duration(65) == "1m05s" and T.duration(5) == "5s"
    assert T.duration(None) == "–" and T.duration(-1) == "–" and T.duration(math.nan) == "–"


def test_names_and_times():
    assert T.model_name("relu") == "2L-ReLU" and T.model_name("MLP-Attn") == "MLP-Attn"
    assert T.model_names(["relu", "attn"]) == "2L-ReLU, MLP-Attn"
    assert T.model_names("relu,qkv") == "2L-ReLU, QKV-Attn"
    assert T.short_time("2026-12-03T19:09:50+0000") == "12-03 19:09"
    assert T.short_time(None) == "–" and T.int_list([0, 1, 2]) == "0,1,2"
    assert T.mean_pm(39.91, 0.213, 3) == "39.9 ± 0.21 (3 seeds)"
