# The two commands of the README. Everything else lives in scripts/.
.PHONY: demo test setup bench docs-long

# Set everything up, then run the main job on its embedded default.
demo: setup
	.venv/bin/coapcc reproduce anrw18 --quick

# Every test (Rust + Python); this is what CI runs.
test:
	scripts/test

setup:
	scripts/setup

# The documentation's long blocks too (full reproductions, release builds; minutes, needs root):
# docs/docs-check.md.
docs-long:
	scripts/docs-check --long
