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
"""Reports sent from a thread: the control loop never waits on the bus.

Measured before this existed (``tests/functional/test_bus_outage.py``): with
the broker unreachable, oslo.messaging's cast retried inside the agent's
tick and the control loop stopped (4 ticks in 20 s instead of 100): no
knob followed the VMs while the bus was down.

``BackgroundSender(reporter)`` has the reporter interface. Its
``report_host_io`` only puts the report in a one-report slot (a newer
report replaces one not sent yet: reports are snapshots, the newest is the
one that counts) and returns. A thread sends from the slot. A send that
fails (the cast is made with ``retry=1``: one reconnection, then it
fails instead of blocking until the broker is back) is retried every
``retry_interval`` seconds with the newest report: after 1 s, then twice as
long each time, at most ``max_retry_interval`` (the agent passes its report
interval), so reports resume within one interval of the broker's return, and a
long outage costs one connection attempt per interval. One WARNING when an
outage starts, one INFO when reports go out again, with its length and how many
sends failed; each failed attempt at DEBUG (oslo.messaging logs its own
connection errors).
"""

import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class BackgroundSender(object):

    def __init__(self, reporter, max_retry_interval=10.0, first_retry=1.0,
                 clock=time.monotonic):
        self.reporter = reporter
        self.first_retry = float(first_retry)
        self.max_retry_interval = max(float(max_retry_interval),
                                      self.first_retry)
        self._delay = 0.0
        self._clock = clock
        self._cond = threading.Condition()
        self._slot = None
        self._stopping = False
        self.sent = 0
        self.failed = 0
        self.replaced = 0
        self.outage_since = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='iosched-report-sender')
        self._thread.start()

    def __getattr__(self, name):
        # the wrapped reporter's other attributes (e.g. its RPC client)
        return getattr(self.reporter, name)

    def report_host_io(self, report):
        """Queue ``report`` (replacing one not sent yet); never blocks."""
        with self._cond:
            if self._slot is not None:
                self.replaced += 1
            self._slot = report
            self._cond.notify()

    def _take(self):
        with self._cond:
            while self._slot is None and not self._stopping:
                self._cond.wait()
            report, self._slot = self._slot, None
            return report

    def _run(self):
        while True:
            report = self._take()
            if report is None:
                return
            try:
                self.reporter.report_host_io(report)
            except Exception as e:
                self._failed(report, e)
                continue
            self.sent += 1
            self._delay = 0.0
            if self.outage_since is not None:
                LOG.info('reports reach the schedulers again (report %d) '
                         'after %.0f s; %d sends failed meanwhile',
                         report.seq, self._clock() - self.outage_since,
                         self.failed)
                self.outage_since = None
                self.failed = 0

    def _failed(self, report, error):
        self.failed += 1
        if self.outage_since is None:
            self.outage_since = self._clock()
            LOG.warning('report %d not sent (%s: %s); the agent keeps '
                        'regulating and sends its newest report when the '
                        'bus answers (retried at least every %.0f s)',
                        report.seq, type(error).__name__, error,
                        self.max_retry_interval)
        LOG.debug('report %d not sent', report.seq, exc_info=True)
        self._delay = min(max(self._delay * 2, self.first_retry),
                          self.max_retry_interval)
        deadline = self._clock() + self._delay
        with self._cond:
            if self._slot is None:      # nothing newer: retry this one
                self._slot = report
            # newer reports replace the slot but do not hasten the retry
            while not self._stopping:
                left = deadline - self._clock()
                if left <= 0:
                    break
                self._cond.wait(left)

    def stop(self, timeout=5.0):
        """Stop the thread (what is queued is dropped)."""
        with self._cond:
            self._stopping = True
            self._slot = None
            self._cond.notify()
        self._thread.join(timeout)
