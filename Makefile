# iosched: the two commands of the README's quick start, and helpers.
#   make demo   run the main job on the embedded default (bootstraps itself)
#   make test   run the whole test suite (bootstraps itself and services)
VENV ?= .venv
OUT ?= out/demo
SCENARIO ?=

.PHONY: demo test bootstrap genconfig clean bench bench-testbed reproduce

demo: bootstrap
	$(VENV)/bin/iosched-demo $(if $(SCENARIO),--scenario $(SCENARIO)) --output-dir $(OUT)

test:
	tools/run-tests.sh

bootstrap:
	tools/bootstrap.sh

bench:
	tools/run-bench.sh simulator_speed

bench-testbed:
	tools/run-bench.sh testbed_lsvm

# The papers' tables in the simulator: paper vs ours vs ratio, a verdict per
# row, JSON in out/reproduce (docs/reproduction.md). ARGS=--quick for a
# short run.
reproduce: bootstrap
	$(VENV)/bin/python -m bench.reproduce --markdown out/reproduce/rows.md $(ARGS)

genconfig: bootstrap
	tools/genconfig.sh

clean:
	rm -rf $(VENV) out .pytest_cache
