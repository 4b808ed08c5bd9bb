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
"""Per-disk IOPS, bandwidth and mean latency from cumulative counters."""

from host_agent.collectors import base
from host_agent.collectors import rates
from host_agent import model


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
                out.append(model.DiskRates(
                    instance_uuid=cur.instance_uuid, target=cur.target,
                    iops=reqs / dt, bytes_per_s=nbytes / dt,
                    mean_latency_ms=(busy / reqs / 1e6) if reqs else 0.0))
        return tuple(out)
