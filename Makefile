# iosched: the two commands of the README's quick start, and helpers.
#   make demo   run the main job on the embedded default (bootstraps itself)
#   make test   run the whole test suite (bootstraps itself and services)
VENV ?= .venv
OUT ?= out/demo
SCENARIO ?=

.PHONY: demo test bootstrap genconfig clean bench bench-testbed bench-cloud bench-nova reproduce bench-isacs bench-vturbo bench-slo bench-vlc bench-vaio bench-faults bench-ibalancer bench-load

demo: bootstrap
	$(VENV)/bin/iosched-demo $(if $(SCENARIO),--scenario $(SCENARIO)) --output-dir $(OUT)

test:
	tools/run-tests.sh

# The gate's other envs (tox.ini); .ci/run runs `make gate` after the tests.
.PHONY: pep8 docs releasenotes gate
pep8: bootstrap
	$(VENV)/bin/tox -e pep8

docs: bootstrap
	$(VENV)/bin/tox -e docs

releasenotes: bootstrap
	$(VENV)/bin/tox -e releasenotes

gate: bootstrap
	$(VENV)/bin/tox -e pep8,docs,releasenotes

bootstrap:
	tools/bootstrap.sh

bench:
	tools/run-bench.sh simulator_speed

bench-testbed:
	tools/run-bench.sh testbed_lsvm $(ARGS)

# The one-machine OpenStack (docs/cloud.md): Keystone, Placement, Glance,
# Neutron's API, Nova (libvirt, TCG), Cinder on a one-node Ceph, with
# iosched installed from its sdist by its DevStack plugin; root, ~3 min
# (plus ~3 min for the venv the first time). It stays up: `make cloud-down`.
.PHONY: cloud cloud-down cloud-status
cloud: bootstrap
	bash -c '. tools/services.sh; ensure_rabbitmq && ensure_libvirtd && \
		ensure_mariadb' && $(VENV)/bin/iosched-cloud up

cloud-down: bootstrap
	$(VENV)/bin/iosched-cloud down

cloud-status: bootstrap
	$(VENV)/bin/iosched-cloud status

# bench-testbed's LSVM experiment, then bench-slo's, on Nova-created guests
# of the running cloud (iosched-cloud up) against the cloud's own agent
# (bench/README.md); ~7 + ~9 min, root. ARGS=--quick for smoke runs.
bench-cloud:
	tools/run-bench.sh cloud_lsvm $(ARGS) && \
		tools/run-bench.sh cloud_slo $(ARGS)

# ISACS's hybrid case and vTurbo's turbo pCPU on real guests, stock vs agent
# (bench/README.md); ~6 and ~3 min. ARGS=--quick for a smoke run.
bench-isacs:
	tools/run-bench.sh testbed_isacs $(ARGS)

bench-vturbo:
	tools/run-bench.sh testbed_vturbo $(ARGS)

# SLO volumes on one shared capacity-limited device, real guests (issue 11,
# bench/README.md, docs/testbed.md): no iotune vs static iotune vs the
# agent's slo loop, ABBA; ~9 min, root. ARGS=--quick for a smoke run,
# ARGS=--record to refresh docs/data/testbed_slo.json.
bench-slo:
	tools/run-bench.sh testbed_slo $(ARGS)

# I-Balancer (seed 003) on real guests (docs/ibalancer.md): 4 identical disk
# guests on one loop device with unequal CPU shares, stock vs the agent's
# ibalancer policy, ABBA; ~7 min with 4 rounds, root, under the testbed lock.
# ARGS=--quick for a smoke run, ARGS=--record to refresh
# docs/data/testbed_ibalancer.json.
bench-ibalancer:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_ibalancer $(ARGS)

# Seed 004's dd test on real guests (docs/vaio.md): 4 dd guests on one
# loop device, stock vs BFQ groups vs the vaio agent, 5 trials per arm;
# ~10 min, root, under the testbed lock. ARGS=--quick for a smoke run.
bench-vaio:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_vaio $(ARGS)

# The Nova plugin at scale (bench/README.md): Nova's handlers at 100-10,000
# hosts and the report pipeline through RabbitMQ (started if absent); ~8 min.
# ARGS=--quick for a smoke run, ARGS=--no-rabbit for the handler part only.
bench-nova: bootstrap
	bash -c '. tools/services.sh; trap stop_started EXIT; \
		case " $(ARGS) " in *" --no-rabbit "*) ;; *) ensure_rabbitmq || exit 1 ;; esac; \
		$(VENV)/bin/python -m bench.nova_scale $(ARGS)'

# Flubber's VLC on stock Linux (bench/README.md, docs/slo_vlc_linux.md): an
# SLO reader beside a noisy neighbour on a shared loop device under each
# elevator, BFQ weights and a blk-throttle cap; ~4.5 min, root.
# ARGS=--quick for a smoke run, ARGS=--record to refresh docs/data.
bench-vlc:
	tools/run-bench.sh vlc_linux $(ARGS)

# Faults and hostile input (issue 15, docs/reliability.md): 40,000 hostile
# reports straight into the endpoint and 10,000 over RabbitMQ (started if
# absent), 100 SIGKILLs of the agent on the simulated driver, ~26,000 bad
# SLOs, extra specs, scenario files and config values, 7,800 hostile
# command lines; ~17 min. CI runs
# the same tests at about a tenth of the size.
bench-faults: bootstrap
	bash -c '. tools/services.sh; trap stop_started EXIT; \
		ensure_rabbitmq || exit 1; \
		IOSCHED_HOSTILE_EXAMPLES=10000 IOSCHED_HOSTILE_RPC_EXAMPLES=10000 \
		IOSCHED_KILLS=100 IOSCHED_INPUT_FUZZ_EXAMPLES=1500 \
		IOSCHED_CLI_FUZZ_EXAMPLES=300 IOSCHED_CLI_FUZZ_RANDOM=1 \
		CI=true $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider \
		tests/unit/nova_plugin/test_hostile_payloads.py \
		tests/functional/test_hostile_reports_rabbitmq.py \
		tests/functional/test_kill_campaign.py \
		tests/unit/cinder_qos/test_slo_fuzz.py \
		tests/unit/nova_plugin/test_extra_specs_fuzz.py \
		tests/unit/iosched_demo/test_scenario_fuzz.py \
		tests/unit/test_config_fuzz.py \
		tests/unit/test_cli_fuzz.py'

# Load (docs/reliability.md §7, §8): the agent with 200 simulated vCPUs for
# a simulated hour (~55 min here) and the report store at 10,000 hosts
# (~2 min). ARGS go to the agent run, e.g. ARGS='--seconds 600'.
bench-load: bootstrap
	$(VENV)/bin/python bench/store_memory.py
	$(VENV)/bin/python bench/agent_load.py $(ARGS)

# The papers' tables in the simulator: paper vs ours vs ratio, a verdict per
# row, JSON in out/reproduce (docs/reproduction.md). ARGS=--quick for a
# short run.
reproduce: bootstrap
	$(VENV)/bin/python -m bench.reproduce --markdown out/reproduce/rows.md $(ARGS)

genconfig: bootstrap
	tools/genconfig.sh

clean:
	rm -rf $(VENV) out .pytest_cache
