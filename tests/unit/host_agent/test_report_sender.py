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
"""iosched.host_agent.reporter.sender: the tick never waits on the bus."""

import logging
import threading
import time

import pytest

from iosched.host_agent.reporter import sender as sender_mod


class Report(object):
    def __init__(self, seq):
        self.seq = seq


class FakeReporter(object):
    """Fails while ``down``; blocks while ``gate`` is clear."""

    def __init__(self):
        self.down = False
        self.gate = threading.Event()
        self.gate.set()
        self.sent = []
        self.attempts = []
        self.delays = []        # the sender's backoff before each attempt
        self.sender = None

    def report_host_io(self, report):
        self.attempts.append((time.monotonic(), report.seq))
        if self.sender is not None:
            self.delays.append(self.sender._delay)
        self.gate.wait(30)
        if self.down:
            raise ConnectionRefusedError('broker down')
        self.sent.append(report.seq)


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.fixture
def reporter():
    return FakeReporter()


@pytest.fixture
def sender(reporter):
    s = sender_mod.BackgroundSender(reporter, max_retry_interval=0.05,
                                    first_retry=0.01)
    reporter.sender = s
    yield s
    reporter.gate.set()
    s.stop()


def test_a_blocked_bus_never_blocks_the_caller(reporter, sender):
    reporter.gate.clear()           # the cast hangs (a black-holed broker)
    t0 = time.monotonic()
    for seq in range(100):
        sender.report_host_io(Report(seq))
    assert time.monotonic() - t0 < 1.0
    reporter.gate.set()
    # at most the one in flight, then only the newest of the others
    assert _wait(lambda: reporter.sent and reporter.sent[-1] == 99)
    assert len(reporter.sent) <= 2
    assert sender.replaced >= 98


def test_outage_one_warning_backoff_and_resume(reporter, sender, caplog):
    caplog.set_level(logging.INFO, logger='iosched.host_agent.reporter.sender')
    reporter.down = True
    sender.report_host_io(Report(1))
    assert _wait(lambda: len(reporter.attempts) >= 3, timeout=10)
    sender.report_host_io(Report(2))        # replaces the retried one
    reporter.down = False
    assert _wait(lambda: reporter.sent == [2], timeout=5)
    assert reporter.delays[1:4] == [0.01, 0.02, 0.04]   # then capped
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    warnings = [m for lvl, m in messages if lvl == 'WARNING']
    assert len(warnings) == 1 and 'report 1 not sent' in warnings[0]
    assert 'ConnectionRefusedError: broker down' in warnings[0]
    infos = [m for lvl, m in messages if lvl == 'INFO']
    assert len(infos) == 1 and 'again (report 2)' in infos[0]
    # a second outage warns again
    reporter.down = True
    sender.report_host_io(Report(3))
    assert _wait(lambda: sum(lvl == 'WARNING' for lvl, _ in (
        (r.levelname, 0) for r in caplog.records)) == 2)


def test_backoff_doubles_up_to_the_cap():
    reporter = FakeReporter()
    reporter.down = True
    s = sender_mod.BackgroundSender(reporter, max_retry_interval=0.04,
                                    first_retry=0.01)
    reporter.sender = s
    try:
        s.report_host_io(Report(1))
        assert _wait(lambda: len(reporter.attempts) >= 6)
    finally:
        s.stop()
    # the first attempt is immediate; then 1x, 2x, 4x, capped
    assert reporter.delays[:6] == [0.0, 0.01, 0.02, 0.04, 0.04, 0.04]
    assert s.max_retry_interval == 0.04


def test_stop_returns_even_with_a_report_queued(reporter):
    reporter.down = True
    s = sender_mod.BackgroundSender(reporter, max_retry_interval=30.0)
    s.report_host_io(Report(1))
    assert _wait(lambda: reporter.attempts)
    t0 = time.monotonic()
    s.stop()
    assert time.monotonic() - t0 < 2.0
    assert not s._thread.is_alive()


def test_other_attributes_come_from_the_reporter(reporter, sender):
    reporter.client = 'the rpc client'
    assert sender.client == 'the rpc client'
