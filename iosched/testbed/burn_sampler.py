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
"""Every second, the latest burn rate of each guest that reports one
(``burn`` and ``hybrid`` guests), for the real-guest benchmarks and the
separate rr client (``rr_client``: a hybrid guest's reports reach the
process that holds its channel).
"""

import threading
import time

BURN_MODES = ('burn', 'hybrid')


class BurnSampler:
    """A context manager sampling ``guests``' burn rates every
    ``period`` seconds (a report late by more than 3 s skips a second).
    """

    def __init__(self, guests, period=1.0):
        self.guests = [g for g in guests if g.mode in BURN_MODES]
        self.period = period
        self.rates = {g.name: [] for g in self.guests}
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._loop, daemon=True,
                                    name='burn-sampler')

    def _loop(self):
        while not self._stop.wait(self.period):
            fresher = time.monotonic() - self.period
            for g in self.guests:
                try:
                    self.rates[g.name].append(g.burn_rate(
                        timeout=3, fresher_than=fresher))
                except Exception:
                    pass                  # a late report: skip this second

    def __enter__(self):
        self._th.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._th.join()

    def means(self):
        return {n: round(sum(v) / len(v)) if v else 0
                for n, v in self.rates.items()}
