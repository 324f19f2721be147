# The two commands of the README. Everything else lives in scripts/.
.PHONY: demo test setup bench

# Set everything up, then run the main job on its embedded default.
demo: setup
	.venv/bin/coapcc reproduce anrw18 --quick

# Every test (Rust + Python); this is what CI runs.
test:
	scripts/test

setup:
	scripts/setup
