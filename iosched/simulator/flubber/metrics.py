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
"""What a run records: seek distances in Table 6's bins, image changes
(consecutive dispatches from different "processes": VMs, the backup, the
host's metadata writer), per-VM request completions (VMM arrival to
completion), guest ops and finish times, and 1-second windows of IOPS and
mean / max latency.
"""

import collections

from iosched.simulator.flubber import layout


class Metrics:
    def __init__(self):
        self.bins = collections.Counter()
        self.bins_by = collections.defaultdict(collections.Counter)
        self.done = collections.defaultdict(list)     # vm -> [(t, lat)]
        self.finish = {}
        self.busy_ms = 0.0
        self.dispatched = 0
        self.changes = 0           # dispatches whose proc differs from last

    def dispatch(self, req, last, now, svc):
        self.busy_ms += svc
        self.dispatched += 1
        if last is None:
            return
        if req.proc != last.proc:
            self.changes += 1
        b = layout.seek_bin(req.lba - (last.lba + last.nsect))
        self.bins[b] += 1

    def complete(self, req, now, lat):
        self.done[req.vm if req.vm is not None else req.proc].append(
            (now, lat))

    def seek_shares(self):
        n = sum(self.bins.values())
        return {k: (self.bins[k] / n if n else 0.0)
                for k in ('zero', 'near', 'far')}

    def windows(self, vm, t0=0.0, t1=None, w=1000.0):
        """[(start, iops, mean_ms, max_ms)] per w-ms window in [t0, t1)."""
        d = self.done.get(vm, [])
        if t1 is None:
            t1 = d[-1][0] if d else t0
        n = int((t1 - t0) // w)
        cnt = [0] * n
        tot = [0.0] * n
        mx = [0.0] * n
        for t, lat in d:
            i = int((t - t0) // w)
            if 0 <= i < n:
                cnt[i] += 1
                tot[i] += lat
                mx[i] = max(mx[i], lat)
        return [(t0 + i * w, cnt[i] * 1000.0 / w,
                 tot[i] / cnt[i] if cnt[i] else None, mx[i])
                for i in range(n)]

    def summary(self, vm, t0=0.0, t1=None):
        """Table 2's columns over [t0, t1): avg and max of the 1 s IOPS,
        mean latency and the max of the 1 s mean latencies (the paper's
        "max delay" reads as a per-second figure).
        """
        ws = self.windows(vm, t0, t1)
        if not ws:
            return None
        lats = [m for _, _, m, _ in ws if m is not None]
        d = [x for x in self.done.get(vm, [])
             if x[0] >= t0 and (t1 is None or x[0] < t1)]
        return {
            'iops': sum(i for _, i, _, _ in ws) / len(ws),
            'max_iops': max(i for _, i, _, _ in ws),
            'mean_ms': sum(lat for _, lat in d) / len(d) if d else None,
            'max_ms': max(lats) if lats else None,
            'windows': len(ws),
        }
