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
"""CPU used by each VM's I/O-path threads (emulator, I/O threads).

vTurbo's Algorithm 3 charges a VM for the turbo pCPUs its I/O threads
use; this collector turns the driver's cumulative run time of those
threads into CPUs per window (``model.IoThreadRates``). A VM's threads
that come and go (a thread exited in the window) make the sum go back:
that window is skipped, as for any reset counter.
"""

from iosched.host_agent.collectors import base
from iosched.host_agent.collectors import rates
from iosched.host_agent import model


class IoThreadCollector(base.Collector):
    name = 'io_threads'

    def collect(self, driver, instances):
        reader = getattr(driver, 'io_thread_samples', None)
        if reader is None:
            return ()
        out = []
        for inst in instances:
            for cur in self.read(reader, inst):
                key = (cur.instance_uuid, 'io')
                prev = self._prev.get(key)
                self._prev[key] = cur
                if prev is None:
                    continue
                dt = cur.ts - prev.ts
                share = rates.rate(prev.run_ns, cur.run_ns, dt)
                if share is None:
                    continue
                out.append(model.IoThreadRates(
                    instance_uuid=cur.instance_uuid,
                    cpu_share=round(share / 1e9, 6), window_s=dt))
        return tuple(out)
