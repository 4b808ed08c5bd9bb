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
"""iosched.nova_plugin.metrics without Nova: report counters through the real
endpoint, the store's gauges at scrape time, and the per-worker port
range. (tests/nova/test_metrics_scheduler.py drives the filters.)
"""

import socket
import urllib.request

from oslo_config import cfg
import prometheus_client
from prometheus_client import exposition
import pytest

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin.conf import metrics as metrics_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import metrics
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports
from tests.unit import test_metrics_agent as helpers


def _conf(**overrides):
    """A private ConfigOpts; its own OptGroups (overrides live on them)."""
    conf = cfg.ConfigOpts()
    for group, opts in iosched_conf.list_opts():
        conf.register_opts(opts, group=group)
    conf([], default_config_files=[])
    for name, value in overrides.items():
        conf.set_override(name, value, group=metrics_conf.GROUP)
    return conf


def _scrape(counters):
    return helpers.scrape(counters.registry)


def _delta(before, after, name, **labels):
    return ((helpers.value(after, name, **labels) or 0) -
            (helpers.value(before, name, **labels) or 0))


@pytest.fixture
def fresh_store():
    """A store and the metrics that read it, as a worker's state has."""
    clock = reports.FakeClock(1000.0)
    st = store.ReportStore(clock=clock)
    return st, clock, metrics.SchedulerMetrics(st)


def test_reports_received_and_dropped_by_reason(fresh_store):
    st, _, counters = fresh_store
    ep = endpoint.ReportEndpoint(st, metrics=counters)
    good = reports.report(host='c1', ts=100.0).to_dict()
    future = dict(good, version='9.0')
    broken = dict(good, pcpus=0)
    before = _scrape(counters)
    for report in (good, good, future, broken, broken):
        ep.report_host_io({}, report)
    after = _scrape(counters)
    d = _delta(before, after, 'iosched_scheduler_reports_received_total')
    assert d == 5
    for reason, n in (('out_of_order', 1), ('unsupported_version', 1),
                      ('malformed', 2)):
        assert _delta(before, after, 'iosched_scheduler_reports_dropped_total',
                      reason=reason) == n, reason


# (name, hosts: (host, received at, report_interval), now, want)
STORE_ROWS = [
    ('empty', [], 1000.0,
     dict(fresh=0, stale=0, names=[], oldest=0.0)),
    ('all fresh', [('a', 1000.0, 1.0), ('b', 1001.0, 1.0)], 1002.0,
     dict(fresh=2, stale=0, names=[], oldest=2.0)),
    ('one stale after 3 intervals', [('a', 1000.0, 1.0), ('b', 1002.0, 10.0)],
     1003.5, dict(fresh=1, stale=1, names=['a'], oldest=3.5)),
]


@pytest.mark.parametrize('name,hosts,now,want', STORE_ROWS,
                         ids=[r[0] for r in STORE_ROWS])
def test_store_gauges(fresh_store, name, hosts, now, want):
    st, clock, counters = fresh_store
    for host, at, interval in hosts:
        clock.now = at
        st.update(reports.report(host=host, ts=at,
                                 report_interval=interval))
    clock.now = now
    got = _scrape(counters)
    v = helpers.value
    assert v(got, 'iosched_scheduler_hosts', state='fresh') == want['fresh']
    assert v(got, 'iosched_scheduler_hosts', state='stale') == want['stale']
    assert v(got, 'iosched_scheduler_stale_hosts') == want['stale']
    assert sorted(dict(k[1])['host'] for k in got
                  if k[0] == 'iosched_scheduler_stale_host') == want['names']
    assert v(got, 'iosched_scheduler_oldest_report_age_seconds') == \
        want['oldest']


def test_filter_and_weigher_counters():
    counters = metrics.SchedulerMetrics()
    before = _scrape(counters)
    counters.note_filter('IoDensityFilter', True)
    counters.note_filter('IoDensityFilter', False)
    counters.note_filter('LsvmFilter', False, metrics.CAUSE_NO_REPORT)
    counters.note_weigher('IoStrengthWeigher', hosts_missing=3)
    after = _scrape(counters)
    checks = 'iosched_scheduler_filter_checks_total'
    rejections = 'iosched_scheduler_filter_rejections_total'
    assert _delta(before, after, checks, filter='IoDensityFilter',
                  result='passed') == 1
    assert _delta(before, after, checks, filter='IoDensityFilter',
                  result='rejected') == 1
    assert _delta(before, after, rejections, filter='IoDensityFilter',
                  cause='rule') == 1
    assert _delta(before, after, rejections, filter='LsvmFilter',
                  cause='no_report') == 1
    assert _delta(before, after, 'iosched_scheduler_weigher_invocations_total',
                  weigher='IoStrengthWeigher') == 1
    assert _delta(before, after,
                  'iosched_scheduler_weigher_missing_reports_total',
                  weigher='IoStrengthWeigher') == 3
    default = exposition.generate_latest(prometheus_client.REGISTRY)
    assert b'iosched_scheduler_' not in default


@pytest.fixture
def no_exporter():
    """A worker's metrics, with no endpoint yet; stopped afterwards."""
    counters = metrics.SchedulerMetrics(store.ReportStore())
    yield counters
    counters.stop_exporter()


def _free_ports(n):
    """A base port with the n ports from it free now."""
    for _ in range(50):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        base = s.getsockname()[1]
        s.close()
        ok = True
        for p in range(base, base + n):
            probe = socket.socket()
            try:
                probe.bind(('127.0.0.1', p))
            except OSError:
                ok = False
            finally:
                probe.close()
        if ok and base + n < 65536:
            return base
    pytest.fail('no %d consecutive free ports' % n)


def test_exporter_off_by_default(no_exporter):
    assert no_exporter.ensure_exporter(_conf()) is None


def test_a_worker_takes_the_first_free_port_of_the_range(no_exporter):
    base = _free_ports(3)
    taken = socket.socket()        # another worker holds the first port
    taken.bind(('127.0.0.1', base))
    taken.listen()
    try:
        conf = _conf(enabled=True, port=base, max_workers=3)
        exporter = no_exporter.ensure_exporter(conf)
        assert exporter.port == base + 1
        assert no_exporter.ensure_exporter(conf) is exporter     # once
        body = urllib.request.urlopen(
            'http://127.0.0.1:%d/metrics' % exporter.port,
            timeout=10).read().decode()
        assert 'iosched_scheduler_hosts{state="fresh"}' in body
    finally:
        taken.close()


def test_no_free_port_logs_once_and_schedules_on(no_exporter, caplog):
    base = _free_ports(1)
    taken = socket.socket()
    taken.bind(('127.0.0.1', base))
    taken.listen()
    try:
        conf = _conf(enabled=True, port=base, max_workers=1)
        assert no_exporter.ensure_exporter(conf) is None
        assert no_exporter.ensure_exporter(conf) is None
    finally:
        taken.close()
    assert caplog.text.count('no free port') == 1


def test_options_help_style():
    (group, opts) = iosched_conf.list_opts()[1]
    assert group == 'iosched_metrics'
    assert {o.name for o in opts} == {'enabled', 'bind_host', 'port',
                                      'max_workers'}
    for opt in opts:
        assert 'Possible values:' in opt.help, opt.name
        assert 'Related options:' in opt.help, opt.name
