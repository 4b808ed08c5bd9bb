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
"""Tests of iosched.nova_plugin.store.ReportStore on an injected clock."""

import threading

import pytest

from iosched.nova_plugin import scoring
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports


@pytest.fixture
def clock():
    return reports.FakeClock(1000.0)


@pytest.fixture
def st(clock):
    return store.ReportStore(clock=clock, ttl_intervals=3.0, max_hosts=3)


def test_missing_host_is_none(st):
    assert st.get('nowhere') is None
    assert st.pending('nowhere') == scoring.NO_PENDING


@pytest.mark.parametrize('interval, age, fresh', [
    (1.0, 0.0, True),
    (1.0, 3.0, True),       # exactly 3 intervals old: still fresh
    (1.0, 3.01, False),
    (10.0, 29.0, True),     # the TTL scales with the host's own interval
    (10.0, 31.0, False),
])
def test_ttl_by_own_interval(st, clock, interval, age, fresh):
    r = reports.report(report_interval=interval)
    assert st.update(r)
    clock.now += age
    assert (st.get('host1') is r) is fresh
    assert st.stats()['stale'] == (0 if fresh else 1)


def test_ttl_uses_receive_time_not_agent_ts(st, clock):
    # the agent's clock is an hour behind the scheduler's: still fresh
    r = reports.report(ts=clock.now - 3600)
    assert st.update(r)
    assert st.get('host1') is r


@pytest.mark.parametrize('second, stored', [
    (dict(ts=101.0, seq=2), True),
    (dict(ts=99.0, seq=0), False),      # older ts: delivered out of order
    (dict(ts=99.0, seq=9), False),      # older ts, higher seq: still older
    (dict(ts=100.0, seq=1), False),     # duplicate
    (dict(ts=100.0, seq=0), False),     # same ts, lower seq
    (dict(ts=100.0, seq=2), True),      # same ts, higher seq
    (dict(ts=101.0, seq=0), True),      # agent restarted: seq back to 0
])
def test_older_reports_are_ignored(st, second, stored):
    first = reports.report(ts=100.0, seq=1)
    assert st.update(first)
    r = reports.report(**second)
    assert st.update(r) is stored
    assert st.get('host1') is (r if stored else first)
    assert st.stats()['ignored'] == (0 if stored else 1)


def test_older_report_refused_once_held_one_is_stale(st, clock):
    # issue 27: the held report stays the host's high-water mark, so a
    # replay cannot revive a silent host; an agent whose clock stepped
    # back is refused until its clock passes that mark
    held = reports.report(ts=100.0, seq=7)
    assert st.update(held)
    clock.now += 3.5
    assert st.get('host1') is None
    assert st.admit(reports.report(ts=50.0, seq=8)) == store.REPLAYED
    assert st.get('host1') is None
    assert st.high_water('host1') == (100.0, 7)
    r = reports.report(ts=100.5, seq=9)
    assert st.update(r)
    assert st.get('host1') is r


def test_note_placement_until_newer_report(st):
    assert not st.note_placement('host1', 2)      # no report: nothing
    assert st.update(reports.report(ts=100.0, seq=1))
    assert st.note_placement('host1', 2, lsvm_vcpus=1)
    assert st.note_placement('host1', 1, io_strength=0.5)
    # vcpus defaults to max(io_vcpus, lsvm_vcpus) per note: 2 + 1
    assert st.pending('host1') == scoring.Pending(
        placements=2, io_vcpus=3, lsvm_vcpus=1, io_strength=2.5, vcpus=3)
    # a CPU-only placement counts its vCPUs, not as I/O ones
    assert st.note_placement('host1', 0, vcpus=4)
    assert st.pending('host1') == scoring.Pending(
        placements=3, io_vcpus=3, lsvm_vcpus=1, io_strength=2.5, vcpus=7)
    assert st.stats()['pending_hosts'] == 1
    # an older report does not clear the estimate...
    assert not st.update(reports.report(ts=99.0, seq=0))
    assert st.pending('host1').placements == 3
    # ...a newer one does
    assert st.update(reports.report(ts=101.0, seq=2))
    assert st.pending('host1') == scoring.NO_PENDING


def _filled(clock, received_ago):
    """A store holding a report of each host, received that long ago."""
    st = store.ReportStore(clock=clock, ttl_intervals=3.0, max_hosts=10)
    now = clock.now
    for host, ago in received_ago.items():
        clock.now = now - ago
        st.update(reports.report(host=host, ts=100.0))
    clock.now = now
    return st


@pytest.mark.parametrize('received_ago, asked', [
    ({'a': 0.0, 'b': 0.0}, ['a', 'b']),
    ({'a': 0.0, 'b': 5.0}, ['b', 'a', 'a']),      # b stale; order, repeats
    ({'a': 0.0}, ['x', 'a', 'y']),                 # never reported: None
    ({}, []),
])
def test_get_many_is_get_of_each(clock, received_ago, asked):
    one_by_one = _filled(clock, received_ago)
    expected = [one_by_one.get(h) for h in asked]
    at_once = _filled(clock, received_ago)
    assert at_once.get_many(asked) == expected
    assert [r is not None for r in expected] == [
        received_ago.get(h, 99.0) <= 3.0 for h in asked]
    # the hosts asked about become known, as with get()
    assert at_once._known == one_by_one._known == set(asked)


def test_max_hosts_evicts_least_recently_received(st, clock):
    for i, host in enumerate(['a', 'b', 'c']):
        st.update(reports.report(host=host, ts=100.0 + i))
    # 'a' reports again, so 'b' is now the oldest received
    st.update(reports.report(host='a', ts=200.0))
    st.update(reports.report(host='d', ts=100.0))
    assert st.hosts() == ['a', 'c', 'd']
    assert st.stats()['evicted'] == 1
    st.configure(max_hosts=1)
    assert st.hosts() == ['d']


def test_stats(st, clock):
    st.update(reports.report(host='a', report_interval=1.0))
    clock.now += 2.0
    st.update(reports.report(host='b', report_interval=1.0))
    clock.now += 2.0
    stats = st.stats()
    assert stats['hosts'] == 2
    assert stats['fresh'] == 1
    assert stats['stale_hosts'] == ['a']
    assert stats['oldest_age'] == 4.0
    assert stats['stored'] == 2
    st.clear()
    assert st.stats()['hosts'] == 0 and st.stats()['stored'] == 0


def test_thread_safety_smoke(clock):
    st = store.ReportStore(clock=clock, max_hosts=1000)
    n_threads, n_reports = 8, 300
    errors = []

    def writer(i):
        host = 'host%d' % i
        try:
            for seq in range(n_reports):
                st.update(reports.report(host=host, ts=float(seq), seq=seq))
                st.note_placement(host, 1)
                st.get(host)
                st.stats()
        except Exception as e:      # pragma: no cover - the failure
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,))
               for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert st.stats()['stored'] == n_threads * n_reports
    for i in range(n_threads):
        assert st.get('host%d' % i).seq == n_reports - 1
        assert st.pending('host%d' % i).placements == 1


@pytest.mark.parametrize('max_hosts, reported', [
    (10000, 12500),
    (10000, 10000),     # exactly at the bound: nothing evicted
    (20000, 25000),
])
def test_memory_bound_at_scale(clock, max_hosts, reported):
    st = store.ReportStore(clock=clock, max_hosts=max_hosts)
    for i in range(reported):
        clock.now += 1e-5       # all stay fresh (TTL 3 s)
        assert st.update(reports.report(host='h%05d' % i, ts=clock.now))
    evicted = reported - max_hosts
    stats = st.stats()
    assert stats['hosts'] == max_hosts == len(st.hosts())
    assert stats['evicted'] == evicted
    assert stats['stored'] == stats['received'] == reported
    # the least recently received went first; the newest are all held
    # (hosts() does not mark a host known, get() would)
    held = set(st.hosts())
    if evicted:
        assert 'h%05d' % (evicted - 1) not in held
    assert {'h%05d' % evicted, 'h%05d' % (reported - 1)} <= held
    # a host that reports again goes to the back of the eviction line
    oldest = 'h%05d' % evicted
    st.update(reports.report(host=oldest, ts=clock.now))
    st.update(reports.report(host='newcomer', ts=clock.now))
    held = set(st.hosts())
    assert oldest in held and 'newcomer' in held
    assert 'h%05d' % (evicted + 1) not in held
    assert len(held) == max_hosts


def test_counts_and_ages_for_a_benchmark(clock):
    st = store.ReportStore(clock=clock, max_hosts=10)
    assert st.stats()['oldest_age'] is None
    assert st.stats()['newest_age'] is None
    st.update(reports.report(host='a', ts=100.0))
    clock.now += 2.0
    st.update(reports.report(host='b', ts=100.0))
    st.update(reports.report(host='a', ts=99.0))      # ignored: older
    st.note_dropped()
    clock.now += 1.0
    stats = st.stats()
    assert {k: stats[k] for k in ('received', 'stored', 'ignored',
                                  'dropped', 'evicted')} == {
        'received': 4, 'stored': 2, 'ignored': 1, 'dropped': 1,
        'evicted': 0}
    assert (stats['oldest_age'], stats['newest_age']) == (3.0, 1.0)
    st.clear()
    assert st.stats()['received'] == 0


def _reference_read(st, hosts, now):
    """read_many by its definition: get and pending of each host, and the
    first fresh report with the smallest received_at + ttl.
    """
    found = [st.get(h) for h in hosts]
    notes = [st.pending(h) if r is not None else scoring.NO_PENDING
             for h, r in zip(hosts, found)]
    earliest, due = None, None
    for h, r in zip(hosts, found):
        if r is None:
            continue
        entry = st._entries[h]
        ttl = st.ttl_intervals * r.report_interval
        if due is None or entry.received_at + ttl < due:
            due, earliest = entry.received_at + ttl, (entry.received_at, ttl)
    return found, notes, st.version, earliest


@pytest.mark.parametrize('ages, intervals, asked', [
    # (received ago, report_interval) per host; ttl_intervals 3
    ((0.0, 1.0, 2.0), (1.0, 1.0, 1.0), 'abc'),      # all fresh: one pass
    ((0.0, 3.0, 2.0), (1.0, 1.0, 1.0), 'abc'),      # b exactly at its ttl
    ((0.0, 3.5, 2.0), (1.0, 1.0, 1.0), 'abc'),      # b stale
    ((0.0, 3.5, 2.0), (1.0, 2.0, 1.0), 'abca'),     # b fresh by its interval
    ((0.1, 0.1, 0.1), (1.0, 1.0, 1.0), 'cab'),      # ties: the first
    ((2.9, 0.0, 0.0), (1.0, 5.0, 0.3), 'abc'),      # c's ttl the shortest
])
def test_read_many_is_get_and_pending_of_each(clock, ages, intervals, asked):
    now = clock.now
    st = store.ReportStore(clock=clock, ttl_intervals=3.0, max_hosts=10)
    for host, ago, interval in zip('abc', ages, intervals):
        clock.now = now - ago
        st.update(reports.report(host=host, ts=100.0,
                                 report_interval=interval))
    clock.now = now
    st.note_placement('a', 2)
    hosts = list(asked)
    first = st.read_many(hosts)         # takes the hosts as known
    again = st.read_many(hosts)         # known: the one-pass path if fresh
    expected = _reference_read(st, hosts, now)
    for got in (first, again):
        assert got[0] == expected[0]
        assert all(a is b for a, b in zip(got[0], expected[0]))
        assert all(a is b for a, b in zip(got[1], expected[1]))
        assert got[2:] == expected[2:]
    # the one-pass path answers only when every host is fresh, and then
    # at least when the oldest is fresh by the shortest interval
    fast = st._read_fresh_locked(hosts, now)
    fresh = all(r is not None for r in expected[0])
    assert fast is None or fresh
    if fresh and max(ages) <= 3.0 * min(intervals):
        assert fast is not None
