# iosched: the two commands of the README's quick start, and helpers.
#   make demo   run the main job on the embedded default (bootstraps itself)
#   make test   run the whole test suite (bootstraps itself and services)
VENV ?= .venv
OUT ?= out/demo
SCENARIO ?=

.PHONY: demo test bootstrap genconfig clean bench bench-testbed bench-selftest bench-lsvm-density bench-cloud bench-nova reproduce bench-isacs bench-vturbo bench-slo bench-vlc bench-vaio bench-faults bench-ibalancer bench-load bench-agent-libvirt

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
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_lsvm $(ARGS)

# LSVM density (issue 28): 2, 3 and 4 LSVMs on one pCPU beside 3 CPU-bound
# guests, stock vs each mechanism, the agent's reported bound beside the
# measured p99 (bench/README.md); ~12 min, root. ARGS=--quick for a smoke run.
bench-lsvm-density:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_lsvm_density $(ARGS)

# The LSVM self-test on an idle host, beside busy guests and under outside
# load, side by side (issue 28; bench/README.md); ~2 min, root.
bench-selftest:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh selftest_conditions $(ARGS)

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
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_isacs $(ARGS)

bench-vturbo:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_vturbo $(ARGS)

# SLO volumes on one shared capacity-limited device, real guests (issue 11,
# bench/README.md, docs/testbed.md): no iotune vs static iotune vs the
# agent's slo loop, ABBA; ~9 min, root. ARGS=--quick for a smoke run,
# ARGS=--record to refresh docs/data/testbed_slo.json.
bench-slo:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh testbed_slo $(ARGS)

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

# Faults and hostile input (issues 15, 27; docs/reliability.md): 40,000
# hostile reports straight into the endpoint and 10,000 over RabbitMQ
# (started if absent), 100 SIGKILLs of the agent on the simulated driver,
# ~26,000 bad SLOs, extra specs, scenario files and config values, hostile
# command lines of every command, trace files, agent config files and
# report files, replayed signed reports, damaged, unwritable, full, shared
# and lost journals (the last three on real guests), libvirtd SIGKILLed
# under the agent and a guest created mid-tick (~20 min, root); then the tally (tests/fault_summary.py: cases, exceptions
# escaped, knobs left changed, reports wrongly stored; exit 1 unless 0).
# CI runs the same tests at about a tenth of the size.
FAULT_TESTS = tests/unit/nova_plugin/test_hostile_payloads.py \
	tests/functional/test_hostile_reports_rabbitmq.py \
	tests/functional/test_kill_campaign.py \
	tests/unit/cinder_qos/test_slo_fuzz.py \
	tests/unit/nova_plugin/test_extra_specs_fuzz.py \
	tests/unit/iosched_demo/test_scenario_fuzz.py \
	tests/unit/test_config_fuzz.py \
	tests/unit/test_cli_fuzz.py \
	tests/unit/iotrace/test_trace_fuzz.py \
	tests/unit/test_input_file_fuzz.py \
	tests/unit/nova_plugin/test_replayed_reports.py \
	tests/unit/contract/test_payload_bounds.py \
	tests/functional/test_replayed_reports_rabbitmq.py \
	tests/unit/host_agent/test_journal_faults.py \
	tests/unit/host_agent/test_journal_fuzz.py \
	tests/functional/test_journal_daemon.py \
	tests/functional/test_journal_real_threads.py \
	tests/functional/test_journal_real_guests.py \
	tests/functional/test_libvirt_faults.py
bench-faults: bootstrap
	bash -c '. tools/services.sh; trap stop_started EXIT; \
		ensure_rabbitmq || exit 1; ensure_libvirtd || exit 1; \
		ensure_tracefs || exit 1; \
		tally=$$(mktemp /tmp/iosched-faults.XXXXXX) || exit 1; \
		IOSCHED_FAULTS_TALLY=$$tally \
		IOSCHED_HOSTILE_EXAMPLES=10000 IOSCHED_HOSTILE_RPC_EXAMPLES=10000 \
		IOSCHED_KILLS=100 IOSCHED_INPUT_FUZZ_EXAMPLES=1500 \
		IOSCHED_CLI_FUZZ_EXAMPLES=300 IOSCHED_CLI_FUZZ_RANDOM=1 \
		CI=true $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider \
		$(FAULT_TESTS); rc=$$?; \
		$(VENV)/bin/python -m tests.fault_summary $$tally || rc=1; \
		rm -f $$tally; exit $$rc'

# Load (docs/reliability.md §7, §8): the agent with 200 simulated vCPUs for
# a simulated hour (~55 min here) and the report store at 10,000 hosts
# (~2 min). ARGS go to the agent run, e.g. ARGS='--seconds 600'.
bench-load: bootstrap
	$(VENV)/bin/python bench/store_memory.py
	$(VENV)/bin/python bench/agent_load.py $(ARGS)

# Issue 29: the agent's CPU per 100 vCPUs with the libvirt driver and
# tracefs on 2, 4 and 8 TCG guests at the simulated host's I/O events per
# vCPU, beside agent_load.py's simulated figure from the same run
# (bench/README.md); ~13 min under load (7 the baseline), root, testbed lock.
# ARGS=--quick for a smoke run, ARGS='--profile 10' for the top ten.
bench-agent-libvirt:
	flock /tmp/iosched-testbed.lock tools/run-bench.sh agent_load_libvirt $(ARGS)

# The papers' tables in the simulator: paper vs ours vs ratio, each row's
# tolerance and verdict under one rule, the counts per seed (exit 1 when a
# run of every module differs from bench/reproduce/pinned_counts.json),
# JSON in out/reproduce (docs/reproduction.md). ARGS=--quick for a short
# run.
reproduce: bootstrap
	$(VENV)/bin/python -m bench.reproduce --markdown out/reproduce/rows.md $(ARGS)

genconfig: bootstrap
	tools/genconfig.sh

clean:
	rm -rf $(VENV) out .pytest_cache
