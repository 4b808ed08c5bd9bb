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
"""I-Balancer's I/O event (seed 003), defined once: what a vCPU's events are.

The paper counts a vCPU's I/O events (event-channel notifications of its
split driver). The agent has two readings of that on KVM:

* ``requests`` (the default): the disk requests the VM completed in the
  window (libvirt's virDomainBlockStats rd_req + wr_req deltas, the
  collector's ``DiskRates.reqs``), shared among its vCPUs in proportion
  to their I/O wake-ups (evenly when none woke). One request is one
  event whatever the CPU the guest got, so equal throughputs give equal
  counts and Eq. 2 reads 0 on a fair pool.
* ``wakeups``: the vCPU's I/O wake-ups (the collector's E_n). Biased: a
  vCPU that waits for a pCPU finds several completions when it runs, so
  a slow guest has fewer wake-ups per request than a fast one; on the
  testbed Eq. 2 stayed near 40 % with the four throughputs within 9 %.

``policies.ibalancer`` (option ``event_source``) and the bench's trace
call ``vcpu_events``; nothing else counts I-Balancer events. Pure.
"""

REQUESTS = 'requests'
WAKEUPS = 'wakeups'
EVENT_SOURCES = (REQUESTS, WAKEUPS)
DEFAULT_EVENT_SOURCE = REQUESTS


def vm_requests(disks):
    """uuid -> disk requests completed in the window, over its disks
    (``DiskRates`` with ``instance_uuid`` and ``reqs``).
    """
    out = {}
    for d in disks:
        out[d.instance_uuid] = out.get(d.instance_uuid, 0) + max(0, d.reqs)
    return out


def share_requests(requests, wakeups):
    """A VM's ``requests`` split over its vCPUs by their ``wakeups``
    ({vcpu: count}), rounded down with the remainder to the largest
    shares (the counts add up to ``requests``); evenly with no wake-up.
    Returns {vcpu: events}.
    """
    if not wakeups:
        return {}
    keys = sorted(wakeups)
    total = sum(max(0, wakeups[k]) for k in keys)
    weights = {k: (max(0, wakeups[k]) if total > 0 else 1) for k in keys}
    wsum = float(sum(weights.values()))
    exact = {k: requests * weights[k] / wsum for k in keys}
    out = {k: int(exact[k]) for k in keys}
    left = requests - sum(out.values())
    for k in sorted(keys, key=lambda k: (-(exact[k] - out[k]), k))[:left]:
        out[k] += 1
    return out


def vcpu_events(source, vcpus, disks):
    """(uuid, vcpu) -> the vCPU's I/O events in the window under
    ``source`` (EVENT_SOURCES). ``vcpus``: items with instance_uuid,
    vcpu and events (wake-ups); ``disks``: items with instance_uuid and
    reqs. Under ``requests`` a VM without a disk counts 0.
    """
    if source not in EVENT_SOURCES:
        raise ValueError('event source %r: one of %s' % (
            source, ', '.join(EVENT_SOURCES)))
    if source == WAKEUPS:
        return {(v.instance_uuid, v.vcpu): v.events for v in vcpus}
    reqs = vm_requests(disks)
    by_vm = {}
    for v in vcpus:
        by_vm.setdefault(v.instance_uuid, {})[v.vcpu] = v.events
    out = {}
    for uuid, wake in by_vm.items():
        for k, n in share_requests(reqs.get(uuid, 0), wake).items():
            out[(uuid, k)] = n
    return out
