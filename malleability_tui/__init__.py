"""malleability's terminal front ends: the typer CLI and the Textual app."""
