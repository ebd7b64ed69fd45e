"""The paper in one run: the plan, presets, comparison tables and the claims checklist."""
