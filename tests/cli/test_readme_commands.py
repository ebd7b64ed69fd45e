"""The README stays short, and every ``malleability`` command it shows names a command
that exists with options that command takes (each was also run by hand when written)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from typer.main import get_command

from malleability_tui.cli.main import app

README = Path(__file__).resolve().parents[2] / "README.md"


def shown_commands() -> list[list[str]]:
    """The ``malleability …`` lines of the README's code blocks, as argument lists."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    out = []
    for line in "\n".join(blocks).splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("malleability "):
            out.append(shlex.split(line)[1:])
    return out


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_every_command_shown_exists_with_its_options() -> None:
    commands = shown_commands()
    assert len(commands) >= 10
    for args in commands:
        cmd = get_command(app)
        rest = list(args)
        while hasattr(cmd, "commands") and rest and not rest[0].startswith("-"):
            assert rest[0] in cmd.commands, args  # type: ignore[attr-defined]
            cmd = cmd.commands[rest.pop(0)]  # type: ignore[attr-defined]
        assert not hasattr(cmd, "commands"), f"{args}: a group, not a command"
        opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        for tok in rest:
            if tok.startswith("-"):
                assert tok in opts, f"{args}: {tok} is not an option of {cmd.name}"
