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
(``rates.estimate_ema_gap``), or from the VM's completed I/O requests
when the vCPU takes them without waking (``rates.request_events``); run
and wait shares from schedstat-like counters; IVCredit relative to the
host's mean consumption; and a class. The equations are
``iosched.contract.isacs``'s.
"""

from iosched.contract import isacs
from iosched.host_agent.collectors import base
from iosched.host_agent.collectors import rates
from iosched.host_agent import model

# Weight of the newest window in the burst EMA (CPU per activation): a
# tick's figure is noisy (a few dozen wake-ups), the reservation it sizes
# should not flap.
BURST_EMA_WEIGHT = 0.3


# burst_t = w * run / wakeups + (1 - w) * burst_(t-1)   (first: run/wakeups;
# a window without wake-ups keeps the previous figure)
def burst_ema(prev_us, run_ns, wakeups, weight=BURST_EMA_WEIGHT):
    """The smoothed CPU time per activation, us."""
    if not wakeups:
        return prev_us
    now_us = run_ns / 1000.0 / wakeups
    if not prev_us:
        return now_us
    return weight * now_us + (1.0 - weight) * prev_us


class VcpuIoStrengthCollector(base.Collector):
    name = 'vcpu_io_strength'

    def __init__(self, conf):
        super().__init__(conf)
        self._burst = {}   # (instance uuid, vcpu) -> smoothed burst, us

    def forget(self, instance_uuids):
        super().forget(instance_uuids)
        gone = set(instance_uuids)
        for key in [k for k in self._burst if k[0] in gone]:
            del self._burst[key]

    def collect(self, driver, instances):
        c = self.conf.collectors
        cutoff_ns = c.gap_cutoff_ms * 1e6
        # read once a tick, not per vCPU (an option read costs ~1 us)
        weight = c.ema_weight
        thresholds = (c.io_strength_threshold, c.cpu_share_threshold,
                      c.idle_share_threshold)
        # per vCPU: ~20 us of Python at 200 vCPUs a tick, the agent's
        # largest share; its helpers bound once here
        prev_of, delta = self._prev, rates.delta
        estimate, ema_gap = rates.estimate_ema_gap, isacs.ema_gap
        raw = []
        for inst in instances:
            n_vcpus = max(1, inst.vcpus)
            for cur in self.read(driver.vcpu_samples, inst):
                key = (cur.instance_uuid, cur.vcpu)
                prev = prev_of.get(key)
                prev_of[key] = cur
                if prev is None:
                    continue
                window_ns = (cur.ts - prev.ts) * 1e9
                run = delta(prev.run_ns, cur.run_ns)
                wait = delta(prev.wait_ns, cur.wait_ns)
                wakeups = delta(prev.wakeups, cur.wakeups)
                if (window_ns <= 0 or run is None or wait is None
                        or wakeups is None):
                    continue  # counters reset: restart from this sample
                events, source, per_vcpu = rates.request_events(
                    wakeups, delta(prev.io_requests, cur.io_requests),
                    n_vcpus)
                # E_n * I_bar from the count alone: the figure kept to
                # measure the estimator, and E_n, I_bar when no exact
                # timestamps apply
                est = estimate(events, window_ns, cutoff_ns)
                if source == 'requests' or cur.io_events is None:
                    # The vCPU takes its I/O without waking: the VM's
                    # requests (per vCPU) are its events, spread evenly;
                    # or only a wake-up count exists (events = wakeups).
                    (n, ibar), exact = est, False
                else:
                    n, ibar = ema_gap(cur.io_events, weight, cutoff_ns,
                                      cur.io_events_unit_ns,
                                      cur.io_event_count)
                    exact = True
                raw.append((key, cur, window_ns, run, wait, n, ibar, exact,
                            isacs.io_strength(est[0], est[1], window_ns),
                            wakeups, source, per_vcpu))
        if not raw:
            return ()
        mean_run = sum(r[3] for r in raw) / len(raw)
        burst = self._burst
        out = []
        for (key, cur, window_ns, run, wait, n, ibar, exact, estimate,
             wakeups, source, per_vcpu) in raw:
            strength = isacs.io_strength(n, ibar, window_ns)
            run_share = min(1.0, run / window_ns)
            burst[key] = b = burst_ema(burst.get(key, 0.0), run, wakeups)
            out.append(model.VcpuIoStrength(
                instance_uuid=cur.instance_uuid, vcpu=cur.vcpu,
                pcpu=cur.pcpu, events=n, mean_gap_ns=ibar,
                io_strength=strength,
                ivcredit=isacs.ivcredit(strength, run, mean_run),
                run_share=run_share,
                wait_share=min(1.0, wait / window_ns),
                klass=rates.classify(strength, run_share, *thresholds),
                exact=exact, io_strength_estimate=estimate,
                burst_us=round(b, 1),
                run_delays_ns=tuple(cur.run_delays_ns or ()),
                io_source=source, io_requests=round(per_vcpu, 1)))
        return tuple(out)
