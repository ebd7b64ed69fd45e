"""The ``malleability`` command: headless runs, data sets, past runs, export."""

from __future__ import annotations

import typer

from malleability_tui.cli import data, figures, headless, report, reproduce, results, runs
from malleability_tui.cli.common import GuardedGroup, use_plain_types

use_plain_types()

app = typer.Typer(
    name="malleability",
    help="Reproduce and explore 'Influence Malleability in Linearized Attention' (arXiv 2603.13085).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=GuardedGroup,
)


def version_text() -> str:
    """``malleability X.Y.Z`` from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"malleability {version('malleability')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "malleability (not installed: no version metadata)"


def _version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_version,
        is_eager=True,
    ),
) -> None:
    """Reproduce and explore 'Influence Malleability in Linearized Attention' (arXiv 2603.13085)."""


app.command("headless")(headless.headless)
app.command("experiments")(headless.experiments_cmd)
app.command("export")(runs.export_cmd)
app.command("reproduce")(reproduce.reproduce)
app.command("report")(report.report_cmd)
app.command("figures")(figures.figures_cmd)
app.add_typer(data.app, name="data")
app.add_typer(runs.app, name="runs")
app.add_typer(results.app, name="results")


def main() -> None:
    """Console-script entry point. A Ctrl-C or SIGTERM that lands outside a command's own
    boundary (while click unwinds, say) still ends as "interrupted" with exit 130, never as
    a traceback and an exit by SIGINT (nor by CPython's own SIGINT when the interrupt
    landed in a string ``exec``: ``forget_caught_interrupt``). A closed stdout (``| head``)
    exits quietly (1)."""
    import sys

    from malleability_tui.boundary import forget_caught_interrupt, working_dir_problem
    from malleability_tui.cli.common import closed_stdout

    if (problem := working_dir_problem()) is not None:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:  # the reader of stdout went away (`... --help | head`)
        closed_stdout()
    finally:
        forget_caught_interrupt()


if __name__ == "__main__":
    main()
