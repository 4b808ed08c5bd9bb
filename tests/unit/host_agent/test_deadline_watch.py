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
"""The agent's SCHED_DEADLINE watchdog thread (deadline_watch)."""

import threading

from iosched.host_agent import deadline_watch


class Freeing(object):
    def __init__(self, fail=False):
        self.calls = 0
        self.fail = fail
        self.called = threading.Event()

    def unstick_deadline(self):
        self.calls += 1
        self.called.set()
        if self.fail:
            raise OSError('privsep died')
        return ['thread 7']


def test_unstick_asks_the_actuator_and_never_raises():
    assert deadline_watch.unstick(object()) == []      # no watchdog
    assert deadline_watch.unstick(Freeing()) == ['thread 7']
    assert deadline_watch.unstick(Freeing(fail=True)) == []


def test_the_thread_runs_until_stop(monkeypatch):
    monkeypatch.setattr(deadline_watch, 'INTERVAL_S', 0.001)
    stop = threading.Event()
    act = Freeing(fail=True)                  # a failure does not end it
    thread = deadline_watch.start(act, stop)
    assert thread.daemon and thread.name == 'deadline-watchdog'
    assert act.called.wait(30)
    act.called.clear()
    assert act.called.wait(30)                # still running after one
    stop.set()
    thread.join(30)
    assert not thread.is_alive() and act.calls >= 2
    assert deadline_watch.start(object(), stop) is None
