"""malleability's terminal front ends: the typer CLI and the Textual app."""

import engine as _engine  # noqa: F401,E402  (sets OMP_WAIT_POLICY before torch loads)
