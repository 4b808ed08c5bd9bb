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
"""Pure parts of ``bench/agent_load_libvirt.py``: the I/O event rate of
``agent_load.py``'s simulated host from its workload mix, the request rate
that gives a testbed rr guest the same events per vCPU per second, the
least-squares line of agent CPU per tick over vCPUs, and the verdict.

The event rate of the mix (``mix_event_rates``), per vCPU:

* ``RequestResponse``: every arrival is an I/O event: its ``rate_per_s``;
* ``DiskClosedLoop``: every completion is one; a loop alone would run at
  ``outstanding`` / (service time + ``cpu_per_io_us``), but the host's one
  disk serves ``parallelism`` requests per service time for all the loops
  together, shared in proportion to their ``outstanding``: the smaller;
* ``CpuBound``, ``Idle``: none.

The mean over the VM's vCPUs is the host's events per vCPU per second (the
mix is the same on every VM). It is an upper bound: a disk vCPU that waits
for a CPU between requests completes fewer; ``agent_load.py`` prints what
the agent counted in the same run.
"""

from iosched.simulator import spec as sim_spec


def mix_event_rates(workloads, disk, loops_outstanding):
    """I/O events per second of each vCPU of one VM's ``workloads`` on a
    host with ``disk`` (``sim_spec.DiskSpec``) shared by disk loops with
    ``loops_outstanding`` requests in flight in all.
    """
    out = []
    for wl in workloads:
        if isinstance(wl, sim_spec.RequestResponse):
            out.append(float(wl.rate_per_s))
        elif isinstance(wl, sim_spec.DiskClosedLoop):
            service_us = disk.service_us + wl.io_bytes * disk.per_byte_ns \
                / 1000.0
            alone = wl.outstanding * 1e6 / (service_us + wl.cpu_per_io_us)
            shared = (disk.parallelism * 1e6 / service_us * wl.outstanding
                      / max(wl.outstanding, loops_outstanding))
            out.append(min(alone, shared))
        elif isinstance(wl, (sim_spec.CpuBound, sim_spec.Idle)):
            out.append(0.0)
        else:
            raise ValueError('no event rate for workload %r' % (wl,))
    return out


def loops_outstanding(workloads, vms):
    """Requests in flight of all the disk loops of ``vms`` VMs of the mix."""
    return vms * sum(wl.outstanding for wl in workloads
                     if isinstance(wl, sim_spec.DiskClosedLoop))


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None


def rr_rate(target, idle, per_request=1.0):
    """Requests per second to a one-vCPU rr guest so that its vCPU shows
    ``target`` events per second: what is left above its ``idle`` events
    (guest timers), divided by the events each request brings.
    """
    if per_request <= 0:
        raise ValueError('events per request must be > 0: %r'
                         % per_request)
    return max(0.0, target - (idle or 0.0)) / per_request


def events_per_request(measured, idle, rate):
    """Events a request brought: (``measured`` - ``idle``) / ``rate``
    events per second; None when it cannot be told (no rate, no events
    above idle).
    """
    if measured is None or not rate or rate <= 0:
        return None
    per = (measured - (idle or 0.0)) / rate
    return per if per > 0 else None


def fit(xs, ys):
    """Least squares y = fixed + slope * x: (fixed, slope)."""
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError('fit needs >= 2 points (%d xs, %d ys)'
                         % (len(xs), len(ys)))
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    if not var:
        raise ValueError('fit needs two different x values')
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var
    return my - slope * mx, slope


WHAT = 'agent CPU per 100 vCPUs at 1-s ticks, libvirt driver with tracefs'


def verdict(pct, goal, fixed_ms=None, events_ratio=None):
    """(met or None, the verdict line). ``events_ratio``: the guests'
    events per vCPU over the target (the reason when it is far off).
    """
    from bench import target_verdict
    what = '%s <= %.2f %% of a core' % (WHAT, goal)
    if pct is None:
        return None, target_verdict.line(what, None, 'no fit')
    met = pct <= goal
    reason = []
    if fixed_ms is not None:
        reason.append('fixed part %.1f ms per tick apart' % fixed_ms)
    if events_ratio is not None:
        reason.append('the guests had %.2fx the target events per vCPU'
                      % events_ratio)
    return met, target_verdict.line(what, met, '%.2f %%' % pct,
                                    ', '.join(reason))
