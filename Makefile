# iosched: the two commands of the README's quick start, and helpers.
#   make demo   run the main job on the embedded default (bootstraps itself)
#   make test   run the whole test suite (bootstraps itself and services)
VENV ?= .venv
OUT ?= out/demo
SCENARIO ?=

.PHONY: demo test bootstrap genconfig clean bench bench-testbed

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

genconfig: bootstrap
	tools/genconfig.sh

clean:
	rm -rf $(VENV) out .pytest_cache
