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
"""What ``iosched-status`` collects: each host's report, whole if it can.

Agents fanout-cast only the head of each report (RPC 1.3, without the
per-vCPU records and the decisions, which the schedulers do not keep).
``Collector`` is the store ``iosched-status``'s report endpoint feeds.
When a host's head arrives and no whole report of it is held, it calls
``ask(host)`` (outside its lock): the command then casts ``send_report``
to that agent alone (``rpcapi.AgentAPI.send_report``), which casts its
whole latest report to this command's own server on the report topic.
An agent older than 1.3 fanout-casts whole reports: nothing to ask.

Per host the collector holds the newest *whole* report if it got one,
else the newest head (``tails[host]``: the head's tail counts; None for a
whole report). Whether a host counts as reporting (``--host``,
``--max-age``) goes by the newest report of either form.
``heard`` is set once every watched host counts, ``done`` once each of
them also has a whole report.
"""

import threading
import time

from iosched.nova_plugin import store as report_store


class Collector(object):
    """The store the report endpoint feeds: every host's newest report and
    when it arrived. ``done`` is set once every watched host reported (with
    a report measured after ``not_before``, if given) a whole report.
    """

    def __init__(self, watch=(), not_before=None, clock=time.time,
                 ask=None):
        self.watch = set(watch)
        self.not_before = not_before
        self.ask = ask          # ask(host): request its whole report
        self.reports = {}       # host -> (HostReport, received at)
        self.tails = {}         # host -> tail counts of a head; None: whole
        self.newest = {}        # host -> newest ts of either form
        self.asked = {}         # host -> seq of the head we asked for
        self.received = 0
        self.dropped = 0
        self.heard = threading.Event()
        self.done = threading.Event()
        self.ended_at = None    # when collecting stopped (ages are from it)
        self._clock = clock
        self._lock = threading.Lock()

    def _keep_locked(self, report, tail_counts):
        """Whether ``report`` replaces the one held for its host."""
        held = self.reports.get(report.host)
        if held is None:
            return True
        newer = (report.ts, report.seq) > (held[0].ts, held[0].seq)
        held_whole = self.tails.get(report.host) is None
        if tail_counts is None:
            # a whole report beats any head, and an older whole one
            return newer or not held_whole
        return newer and not held_whole

    def update(self, report, tail_counts=None):
        """Take ``report`` (with ``tail_counts``: a head-only one)."""
        ask = False
        with self._lock:
            self.received += 1
            host = report.host
            self.newest[host] = max(self.newest.get(host, report.ts),
                                    report.ts)
            if self._keep_locked(report, tail_counts):
                self.reports[host] = (report, self._clock())
                self.tails[host] = (dict(tail_counts)
                                    if tail_counts is not None else None)
            if (tail_counts is not None and self.tails[host] is not None
                    and self.asked.get(host, -1) < report.seq):
                self.asked[host] = report.seq
                ask = self.ask is not None
            if self.watch and not self.missing():
                self.heard.set()
                if all(self.tails.get(h) is None for h in self.watch):
                    self.done.set()
        if ask:
            self.ask(host)
        return True

    def admit(self, report, tail_counts=None):
        """The endpoint's entry point (``ReportStore.admit``'s contract)."""
        self.update(report, tail_counts)
        return report_store.STORED

    # the endpoint parses reports whole unless they come head-only
    keeps_records = True

    def now(self):
        return self._clock()

    def note_dropped(self):
        with self._lock:
            self.dropped += 1

    def counts(self, host):
        ts = self.newest.get(host)
        return ts is not None and (self.not_before is None or
                                   ts >= self.not_before)

    def missing(self):
        return sorted(h for h in self.watch if not self.counts(h))

    def whole(self):
        """{host: (HostReport, received at)} of the whole reports held."""
        return {h: r for h, r in self.reports.items()
                if self.tails.get(h) is None}

    def heads_only(self):
        """Hosts heard from whose whole report did not come."""
        return sorted(h for h, t in self.tails.items() if t is not None)
