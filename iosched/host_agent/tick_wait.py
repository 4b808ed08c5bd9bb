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
"""The agent's wait between two ticks, and the calls queued for it.

A signal handler may only queue: ``call`` appends and wakes the loop,
which runs the call (a SIGHUP's reload) between two ticks, never inside
one. ``tick_interval`` is read anew at each wait, so a reloaded value
applies at once; one that does not parse keeps the last good value.
"""

import collections
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Between(object):

    def __init__(self, interval, read_interval):
        self.wake = threading.Event()       # stop or a queued call
        self._calls = collections.deque()
        self._interval = interval
        self._read = read_interval

    def call(self, fn):
        """Run ``fn()`` in the loop after the current tick (signal-safe)."""
        self._calls.append(fn)
        self.wake.set()

    def wait(self, t0, stop):
        """Until ``t0`` + the tick interval or ``stop``, running the calls
        queued meanwhile.
        """
        while not stop.is_set():
            # what is queued now (a call queued by one of these runs on
            # the next pass, after the wake-up it caused)
            for _ in range(len(self._calls)):
                fn = self._calls.popleft()
                try:
                    fn()
                except Exception:   # the loop must survive anything
                    LOG.exception('%r failed between two ticks', fn)
            left = self.interval() - (time.monotonic() - t0)
            if left <= 0:
                return
            self.wake.wait(left)
            self.wake.clear()

    def interval(self):
        """``[host_agent] tick_interval``, or the last good one when a
        reload left a value that does not parse.
        """
        try:
            self._interval = self._read()
        except Exception as e:
            LOG.error('[host_agent] tick_interval unreadable (%s); ticking '
                      'every %.2f s as before', e, self._interval)
        return self._interval
