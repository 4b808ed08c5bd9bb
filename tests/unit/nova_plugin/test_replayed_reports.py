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
"""Replayed signed reports (issue 27): the store's high-water mark and age
bound, table-driven, then captured signed reports through the endpoint.

Every case stored the report before issue 27: the store ignored an older
report only while the held one was fresh, and bounded a report's age not
at all. No nova import.
"""

import logging

import pytest

from iosched.nova_plugin import endpoint
from iosched.nova_plugin import metrics
from iosched.nova_plugin import state
from iosched.nova_plugin import store
from tests import fault_tally
from tests.unit.nova_plugin import captured
from tests.unit.nova_plugin import reports

T0 = 1.8e9          # "now", the scheduler's clock
DAY = captured.DAY
TTL = 3 * 10.0      # report_ttl_intervals x the agent's 10 s interval
BOUND = TTL + 300.0     # report_max_age 0: TTL + report_max_clock_skew


def _report(ts, seq, interval=10.0, host='c1'):
    return reports.report(host=host, ts=ts, seq=seq,
                          report_interval=interval)


# (case, steps) where a step is (clock, ts, seq, interval, expected):
# the store's clock set to ``clock``, then a report stamped ``ts`` admitted.
# The store: SchedulerState's (slim, report_max_age 0), max_hosts 1 for the
# eviction case.
CASES = [
    ('week-old replay after the host fell silent', [
        (T0 - 7 * DAY, T0 - 7 * DAY, 1, 10.0, store.STORED),
        (T0 - 3600, T0 - 3600, 500, 10.0, store.STORED),
        (T0, T0 - 7 * DAY, 1, 10.0, store.TOO_OLD)]),
    ('replay of the last report once its host fell silent', [
        (T0 - 100, T0 - 100, 9, 10.0, store.STORED),
        (T0, T0 - 100, 9, 10.0, store.REPLAYED)]),
    ('replay of an older report once its host fell silent', [
        (T0 - 100, T0 - 110, 8, 10.0, store.STORED),
        (T0 - 95, T0 - 100, 9, 10.0, store.STORED),
        (T0, T0 - 110, 8, 10.0, store.REPLAYED)]),
    ('week-old replay into an empty store', [
        (T0, T0 - 7 * DAY, 1, 10.0, store.TOO_OLD)]),
    ('report older than its TTL plus the skew into an empty store', [
        (T0, T0 - BOUND - 1, 1, 10.0, store.TOO_OLD)]),
    ('agent clock stepped back: refused until it passes its mark', [
        (T0 - 100, T0 - 100, 9, 10.0, store.STORED),
        (T0, T0 - 150, 10, 10.0, store.REPLAYED),
        (T0 + 59, T0 - 101, 16, 10.0, store.REPLAYED),
        (T0 + 61, T0 - 99, 17, 10.0, store.STORED)]),
]


@pytest.mark.parametrize('steps', [c[1] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_store_refuses_replays(steps):
    clock = reports.FakeClock()
    st = state.SchedulerState(clock=clock).store
    for now, ts, seq, interval, expected in steps:
        clock.now = now
        assert st.admit(_report(ts, seq, interval)) == expected, (now, ts)
    counts = st.stats()
    assert counts['received'] == len(steps)
    assert counts['stored'] == sum(s[-1] == store.STORED for s in steps)


def test_evicted_host_is_still_protected_by_the_age_bound():
    clock = reports.FakeClock(T0)
    st = store.ReportStore(clock=clock, max_hosts=1, max_age=0.0)
    assert st.update(_report(T0 - 5, 1, host='a'))
    assert st.update(_report(T0, 1, host='b'))      # a evicted
    assert st.high_water('a') is None
    assert st.admit(_report(T0 - 7 * DAY, 1, host='a')) == store.TOO_OLD
    assert st.stats()['too_old'] == 1


# report_max_age: 0 follows each report's own interval; a fixed bound is
# one for every host. (interval, max_age, age, expected)
@pytest.mark.parametrize('interval, max_age, age, expected', [
    (10.0, 0.0, BOUND + 1, store.TOO_OLD),
    (3600.0, 0.0, 3 * 3600.0, store.STORED),    # a long interval's resync
    (10.0, 60.0, 61.0, store.TOO_OLD),
    (3600.0, 60.0, 61.0, store.TOO_OLD),
])
def test_age_bound(interval, max_age, age, expected):
    clock = reports.FakeClock(T0)
    st = store.ReportStore(clock=clock, max_age=max_age)
    assert st.admit(_report(T0 - age, 1, interval)) == expected


def _dropped(st, reason):
    value = st.metrics.registry.get_sample_value(
        metrics.PREFIX + 'reports_dropped_total', {'reason': reason})
    return value or 0.0


def _worker(clock):
    """A scheduler worker's state and its endpoint, signed reports only."""
    worker = state.SchedulerState(clock=clock)
    return worker, endpoint.ReportEndpoint(
        worker.store, auth='hmac', master_key=captured.MASTER,
        metrics=worker.metrics)


def _deliver(ep, sent):
    ep.report_host_io({}, **sent)


def test_captured_week_old_report_replayed_after_the_host_fell_silent(
        caplog):
    clock = reports.FakeClock(T0 - 7 * DAY)
    worker, ep = _worker(clock)
    week_old = captured.capture('c1', ts=T0 - 7 * DAY, seq=1)
    last = captured.capture('c1', ts=T0 - 3600, seq=60480)
    _deliver(ep, week_old)
    clock.now = T0 - 3600
    _deliver(ep, last)
    assert worker.store.get('c1').seq == 60480
    clock.now = T0                  # silent for an hour: stale
    caplog.set_level(logging.WARNING)
    for sent in (week_old, last, week_old):     # re-sent every TTL
        _deliver(ep, sent)
        assert worker.store.get('c1') is None
    assert _dropped(worker, metrics.DROP_TOO_OLD) == 3
    assert worker.store.stats()['too_old'] == 3
    warned = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
    assert any('c1' in w and '604800 s ago' in w for w in warned), warned
    assert any('c1' in w and '3600 s ago' in w for w in warned), warned
    fault_tally.note('replayed and implausible reports', cases=3,
                     wrongly_stored=int(worker.store.get('c1') is not None))


def test_captured_replay_into_a_fresh_workers_empty_store():
    clock = reports.FakeClock(T0)
    worker, ep = _worker(clock)
    _deliver(ep, captured.capture('c1', ts=T0 - 7 * DAY, seq=1))
    assert worker.store.hosts() == []
    assert _dropped(worker, metrics.DROP_TOO_OLD) == 1


def test_captured_replay_of_the_last_report_within_the_bound(caplog):
    # a worker that held the host's last report: it goes stale, then a
    # copy comes back inside the age bound
    clock = reports.FakeClock(T0 - 60)
    worker, ep = _worker(clock)
    last = captured.capture('c1', ts=T0 - 60, seq=9)
    _deliver(ep, last)
    clock.now = T0
    caplog.set_level(logging.WARNING)
    _deliver(ep, last)
    assert worker.store.get('c1') is None
    assert _dropped(worker, metrics.DROP_REPLAYED) == 1
    assert worker.store.stats()['replayed'] == 1
    assert any('c1' in r.getMessage() and '60 s ago' in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_captured_replay_into_a_fresh_store_then_the_real_report():
    # within the age bound a fresh worker cannot tell a copy from the
    # agent's resync answer: it is taken, and the next real report (or
    # the resync answer, which is that host's latest) replaces it
    clock = reports.FakeClock(T0)
    worker, ep = _worker(clock)
    recent = captured.capture('c1', ts=T0 - 20, seq=8)
    _deliver(ep, recent)
    assert worker.store.get('c1').seq == 8
    _deliver(ep, captured.capture('c1', ts=T0, seq=10))
    assert worker.store.get('c1').seq == 10
    _deliver(ep, recent)            # now older than the held one
    assert worker.store.get('c1').seq == 10
    clock.now = T0 + 2 * TTL        # the host fell silent
    _deliver(ep, recent)
    assert worker.store.get('c1') is None
    assert worker.store.stats()['stored'] == 2


def test_resync_copy_is_a_duplicate_not_a_replay():
    clock = reports.FakeClock(T0)
    worker, ep = _worker(clock)
    latest = captured.capture('c1', ts=T0 - 5, seq=3)
    _deliver(ep, latest)
    _deliver(ep, latest)            # a second worker's resync: same copy
    assert worker.store.get('c1').seq == 3
    assert _dropped(worker, metrics.DROP_OUT_OF_ORDER) == 1
    assert _dropped(worker, metrics.DROP_REPLAYED) == 0
