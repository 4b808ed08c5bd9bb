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
"""Per-vCPU I/O strength (blueprint 4.1, ISACS Eqs. 1-2) and run shares.

For each vCPU and window (the time since the previous tick): E_n and the
EMA gap I_bar from exact I/O event timestamps when the driver has them
(tracepoints, the simulator), else estimated from the wake-up counter
(``rates.estimate_ema_gap``); run and wait shares from schedstat-like
counters; IVCredit relative to the host's mean consumption; and a class.
"""

from host_agent.collectors import base
from host_agent.collectors import rates
from host_agent import model


class VcpuIoStrengthCollector(base.Collector):
    name = 'vcpu_io_strength'


    def collect(self, driver, instances):
        c = self.conf.collectors
        cutoff_ns = c.gap_cutoff_ms * 1e6
        raw = []
        for inst in instances:
            for cur in self.read(driver.vcpu_samples, inst):
                key = (cur.instance_uuid, cur.vcpu)
                prev = self._prev.get(key)
                self._prev[key] = cur
                if prev is None:
                    continue
                window_ns = (cur.ts - prev.ts) * 1e9
                run = rates.delta(prev.run_ns, cur.run_ns)
                wait = rates.delta(prev.wait_ns, cur.wait_ns)
                wakeups = rates.delta(prev.wakeups, cur.wakeups)
                if window_ns <= 0 or None in (run, wait, wakeups):
                    continue  # counters reset: restart from this sample
                if cur.io_events_ns is not None:
                    n, ibar = rates.ema_gap(cur.io_events_ns, c.ema_weight,
                                            cutoff_ns)
                    exact = True
                else:
                    n, ibar = rates.estimate_ema_gap(wakeups, window_ns,
                                                     cutoff_ns)
                    exact = False
                est_n, est_ibar = rates.estimate_ema_gap(wakeups, window_ns,
                                                         cutoff_ns)
                estimate = rates.io_strength(est_n, est_ibar, window_ns)
                raw.append((cur, window_ns, run, wait, n, ibar, exact,
                            estimate))
        if not raw:
            return ()
        mean_run = sum(r[2] for r in raw) / len(raw)
        out = []
        for cur, window_ns, run, wait, n, ibar, exact, estimate in raw:
            strength = rates.io_strength(n, ibar, window_ns)
            run_share = min(1.0, run / window_ns)
            out.append(model.VcpuIoStrength(
                instance_uuid=cur.instance_uuid, vcpu=cur.vcpu,
                pcpu=cur.pcpu, events=n, mean_gap_ns=ibar,
                io_strength=strength,
                ivcredit=rates.ivcredit(strength, run, mean_run),
                run_share=run_share,
                wait_share=min(1.0, wait / window_ns),
                klass=rates.classify(strength, run_share,
                                     c.io_strength_threshold,
                                     c.cpu_share_threshold,
                                     c.idle_share_threshold),
                exact=exact, io_strength_estimate=estimate))
        return tuple(out)
