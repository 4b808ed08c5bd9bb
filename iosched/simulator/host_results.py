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
"""What a ``SimHost`` run measured (a mixin of ``host.SimHost``): request
and disk latencies and completion times over a window, dropping old
results, CPU time per VM, and the scheduler's, workloads' and backend's
own figures.
"""

import bisect


def _since(times, values, since_us):
    return list(values[bisect.bisect_left(times, since_us):])


def _trim(holder, before_us):
    # lat_t is in completion order (non-decreasing): cut the prefix
    cut = bisect.bisect_left(holder.lat_t, before_us)
    if cut:
        del holder.lat_t[:cut]
        del holder.lat_v[:cut]
    return cut


class HostResults(object):
    """The results half of ``SimHost`` (its ``_vm``, ``_disk``, ``_ent``,
    ``_vms``, ``sched``, ``loop`` and ``backend``).
    """

    # -- results --------------------------------------------------------------
    def request_latencies_us(self, uuid, since_us=0):
        """Latencies of requests completed at or after ``since_us``."""
        vm = self._vm(uuid)
        return _since(vm.lat_t, vm.lat_v, since_us)

    def request_completions_us(self, uuid, since_us=0):
        """Completion times matching ``request_latencies_us``."""
        vm = self._vm(uuid)
        return _since(vm.lat_t, vm.lat_t, since_us)

    def disk_latencies_us(self, uuid, disk, since_us=0):
        """Latencies of disk requests completed at or after ``since_us``."""
        g = self._disk(uuid, disk)
        return _since(g.lat_t, g.lat_v, since_us)

    def disk_completions_us(self, uuid, disk, since_us=0):
        g = self._disk(uuid, disk)
        return _since(g.lat_t, g.lat_t, since_us)

    def forget_results_before(self, before_us):
        """Drop the request and disk latencies completed before
        ``before_us``; returns how many. A run's results are kept whole
        (``request_latencies_us`` and the like read from any time); a host
        that runs for hours (the agent's wall-clock simulated driver) keeps
        a window instead, or its memory grows with every request.
        """
        dropped = 0
        for vm in self._vms.values():
            dropped += _trim(vm, before_us)
            for g in vm.disks.values():
                dropped += _trim(g, before_us)
        return dropped

    def scheduler_stats(self):
        """The scheduler model's own figures (e.g. credit resets)."""
        return dict(self.sched.stats(), scheduler=self.sched.name)

    def workload_stats(self, uuid, vcpu):
        """What the vCPU's workload measured, as a JSON-able dict.

        Paper workloads (``IoVcpu`` and the specs it wraps): ``{'kind':
        'io_vcpu', 'irq_items', 'app_items', 'sources': [...], 'task':
        {...} | None}``; a ping source has ``rtt_us`` / ``rtt_at_us``
        (RTTs and their arrival times), ``sent``, ``received``; a stream
        ``bytes``, ``segments``, ``drops``, ``sock_drops``,
        ``mean_latency_us``, ``jitter_us``; a sysbench task
        ``run_times_us`` / ``run_ends_us``; a dd task ``bytes_done``,
        ``completed``; a lookbusy task ``used_us``, ``periods``. Counts
        are cumulative since the VM was added. Other workloads: ``{'kind':
        <spec class name>}``.
        """
        wl = self._ent(uuid, vcpu).wl
        stats = getattr(wl, 'stats', None)
        if stats is not None:
            return stats()
        return {'kind': type(self._vm(uuid).spec.vcpus[vcpu]).__name__}

    def backend_stats(self):
        """The dom0-like backend's figures: items, busy_us, queues."""
        return self.backend.stats()

    def cpu_run_us(self, uuid):
        """CPU time of the VM: the sum over its vCPUs, up to now."""
        vm = self._vm(uuid)
        now = self.loop.now
        return sum(self.sched.counters(e, now)[0] for e in vm.ents)
