"""The documentation's own check: every block a user can run is run (``scripts/docs-check``)."""
