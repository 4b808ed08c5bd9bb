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
"""Per-disk IOPS, bandwidth, outstanding requests and latency per window.

From two cumulative samples (libvirt block stats, the simulator's
counters): requests, bytes and summed latency give IOPS, bandwidth, the
mean latency and, by Little's law, the mean number of requests in flight
(summed latency / window). When the driver keeps a latency histogram
(``iosched.contract.slo.LATENCY_HIST_BOUNDS_NS``), the window's
percentiles come from the difference of the two cumulative histograms,
interpolated linearly inside the bucket that holds the quantile
(``iosched.contract.stats.hist_quantile``).
"""

from iosched.contract import qos_keys
from iosched.contract import slo
from iosched.contract import stats
from iosched.host_agent.collectors import base
from iosched.host_agent.collectors import rates
from iosched.host_agent import model


def _hist_delta(prev, cur):
    if prev is None or cur is None or len(prev) != len(cur):
        return None
    out = tuple(b - a for a, b in zip(prev, cur))
    return None if any(d < 0 for d in out) else out


class DiskCollector(base.Collector):
    name = 'disk'

    def collect(self, driver, instances):
        out = []
        for inst in instances:
            for cur in self.read(driver.disk_samples, inst):
                key = (cur.instance_uuid, cur.target)
                prev = self._prev.get(key)
                self._prev[key] = cur
                if prev is None:
                    continue
                dt = cur.ts - prev.ts
                reqs = rates.delta(prev.rd_reqs + prev.wr_reqs,
                                   cur.rd_reqs + cur.wr_reqs)
                nbytes = rates.delta(prev.rd_bytes + prev.wr_bytes,
                                     cur.rd_bytes + cur.wr_bytes)
                busy = rates.delta(prev.total_time_ns, cur.total_time_ns)
                if dt <= 0 or None in (reqs, nbytes, busy):
                    continue
                pcts = {}
                hist = _hist_delta(prev.latency_hist, cur.latency_hist)
                if hist is not None and sum(hist):
                    for stat, q in qos_keys.STAT_QUANTILES.items():
                        pcts[stat] = stats.hist_quantile(
                            hist, q, slo.LATENCY_HIST_BOUNDS_NS) / 1e6
                out.append(model.DiskRates(
                    instance_uuid=cur.instance_uuid, target=cur.target,
                    iops=reqs / dt, bytes_per_s=nbytes / dt,
                    mean_latency_ms=(busy / reqs / 1e6) if reqs else 0.0,
                    window_s=dt, reqs=int(reqs),
                    outstanding=busy / 1e9 / dt, latency_pcts_ms=pcts))
        return tuple(out)
