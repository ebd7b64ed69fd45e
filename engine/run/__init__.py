"""Run infrastructure: the typed spec, events, the run store and its readers, the lock,
paths, the run context and the executors. Imports nothing from the experiments above it."""
