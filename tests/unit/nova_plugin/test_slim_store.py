# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The scheduler's slim store entries: every filter and weigher rule gives
the same answer on ``store.slim(report)`` as on the full report, the
scheduler's endpoint stores exactly that entry while parsing only the
report's head (``HostReport.head_from_dict``), and the slim entry is a
small fraction of the full one's memory.
"""

import gc
import json
import tracemalloc

import pytest

from bench.nova_scale import reports as fake_reports
from iosched.contract import payload
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import scoring
from iosched.nova_plugin import state
from iosched.nova_plugin import store

REQUESTS = [
    scoring.Request(vcpus=1),
    scoring.Request(vcpus=2, io_profile='io'),
    scoring.Request(vcpus=4, io_profile='mixed'),
    scoring.Request(vcpus=8, io_profile='cpu'),
    scoring.Request(vcpus=1, latency_sensitive=True, latency_ms=2),
    scoring.Request(vcpus=2, latency_sensitive=True, latency_ms=0.5),
    scoring.Request(vcpus=4, latency_sensitive=True, io_profile='io'),
]
PENDING = [scoring.NO_PENDING,
           scoring.Pending(vcpus=3, io_vcpus=2, io_strength=1.5,
                           lsvm_vcpus=1)]


def _wire(i, agent_counts_nlsvm):
    data = fake_reports.report_dict(i, vcpus=8 + i % 40, decisions=i % 60,
                                    seed=i)
    if not agent_counts_nlsvm:
        data['lsvm']['nlsvm_vcpus'] = None   # an older agent
    else:
        data['lsvm']['nlsvm_vcpus'] = i % 9
    return json.loads(json.dumps(data))


def _report(i, agent_counts_nlsvm):
    return payload.HostReport.from_dict(_wire(i, agent_counts_nlsvm))


def _answers(report):
    out = []
    for pending in PENDING:
        for request in REQUESTS:
            out.append((
                scoring.fits(report, pending, request, 1.0),
                scoring.score(report, pending, request),
                scoring.score_reason(report, pending, request),
                lsvm_rule.figures(report, pending, request),
                lsvm_rule.check(report, pending, request)
                if request.latency_sensitive else None))
    return out


@pytest.mark.parametrize('agent_counts_nlsvm', [True, False])
def test_every_rule_answers_the_same_on_the_slim_entry(agent_counts_nlsvm):
    for i in range(60):
        full = _report(i, agent_counts_nlsvm)
        thin = store.slim(full)
        assert thin.vcpus == () and thin.decisions == ()
        assert _answers(thin) == _answers(full), i


@pytest.mark.parametrize('agent_counts_nlsvm', [True, False])
def test_the_scheduler_endpoint_parses_the_slim_entry_only(
        agent_counts_nlsvm):
    st = store.ReportStore(clock=lambda: 2e9, slim=True)
    ep = endpoint.ReportEndpoint(st)
    assert not st.keeps_records
    assert ep._parse == payload.HostReport.head_from_dict
    for i in range(60):
        data = _wire(i, agent_counts_nlsvm)
        ep.report_host_io({}, data)
        full = payload.HostReport.from_dict(data)
        assert st.get(full.host) == store.slim(full), i
    assert ep.counts == {'stored': 60, 'ignored': 0, 'dropped': 0}


def test_the_scheduler_store_keeps_slim_entries():
    full = _report(3, False)
    st = store.ReportStore(clock=lambda: full.ts, slim=True)
    assert st.update(full)
    held = st.get(full.host)
    assert held == store.slim(full) and held.lsvm.nlsvm_vcpus is not None
    assert state.SchedulerState().store._slim   # a scheduler worker's
    # Newer/older ordering is unchanged by slimming.
    assert not st.update(full)
    assert store.ReportStore(slim=False).update(full)


def _traced_per_host(slim, n=300):
    wire = [json.dumps(fake_reports.report_dict(i, vcpus=32, decisions=50))
            for i in range(n)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    st = store.ReportStore(clock=lambda: 2e9, slim=slim)
    ep = endpoint.ReportEndpoint(st)
    for text in wire:         # parsed by the endpoint
        ep.report_host_io({}, json.loads(text))
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(st.hosts()) == n
    return used / n


def test_a_slim_entry_is_a_small_fraction_of_a_report():
    full, thin = _traced_per_host(False), _traced_per_host(True)
    assert thin < 0.1 * full, (thin, full)
