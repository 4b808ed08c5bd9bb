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
"""Realistic HostReport dicts for the scale benchmark (no nova import).

A host has ``pcpus`` pCPUs and VMs of 1-8 vCPUs up to ``vcpus`` vCPUs in
all; each vCPU gets a class (mostly cpu, some io, mixed and idle) and an I/O
strength to match; a few VMs are LSVMs. ``decisions`` entries, like the
agent's newest ``[reporter] max_decisions`` (default 50), carry the knobs a
vSlicer/ISACS agent sets (slices, weights, pins, iotune) with reasons of
the length the agent writes. Deterministic for a given host index and seed.
"""

import random
import uuid

from iosched.contract import payload_sections

# (class, weight, io_strength range, run_share range)
_KLASSES = (('cpu', 0.55, (0.0, 0.05), (0.3, 1.0)),
            ('io', 0.2, (0.1, 0.9), (0.02, 0.45)),
            ('mixed', 0.1, (0.1, 0.6), (0.5, 0.95)),
            ('idle', 0.15, (0.0, 0.02), (0.0, 0.02)))

_RULES = (('vcpu_slice', 'vslicer.lsvm_microslice',
           'LSVM vCPU: T_m=min(lsvm_max_slice=1000us, L=2000us/k=2)=1000us; '
           'k=ceil(m=%d/P=%d)'),
          ('vcpu_slice', 'vslicer.nlsvm_slice',
           'non-LSVM vCPU gets T_NLSVM=3000us (Linux base slice on 8 CPUs)'),
          ('vcpu_weight', 'vslicer.equal_weight',
           'equal weights: no VM gets extra share'),
          ('vcpu_pin', 'vslicer.lsvm_pcpu',
           'per-pCPU plan: pCPU%d has m=%d LSVM vCPUs, T_m=1000us, '
           'bound 2000us <= 2000us holds'),
          ('vcpu_slice', 'isacs.io_slice',
           'I/O strength %.3f >= 0.1 and run share %.2f < 0.5: io slice '
           '500us'),
          ('disk_iotune', 'slo.iotune',
           'SLO <500 IOPS, 10 ms p99>: read_iops_sec=500 '
           'write_iops_sec=500 (Little: queue 5)'))


def host_name(i):
    return 'compute-%05d' % i


def report_dict(i, ts=1000.0, seq=0, report_interval=1.0, pcpus=None,
                vcpus=32, decisions=50, seed=0):
    """The ``HostReport.to_dict()`` of host ``i``: a few dozen vCPUs."""
    rng = random.Random(seed * 1000003 + i)
    pcpus = pcpus or rng.choice((16, 24, 32, 48))
    entries = []
    vms = []
    n = 0
    while n < vcpus:
        size = min(rng.choice((1, 2, 2, 4, 4, 8)), vcpus - n)
        vm = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        lsvm = rng.random() < 0.1
        vms.append((vm, size, lsvm))
        for v in range(size):
            r = rng.random()
            for klass, weight, strength, share in _KLASSES:
                r -= weight
                if r < 0:
                    break
            if lsvm:
                klass, strength, share = 'io', (0.2, 0.9), (0.02, 0.3)
            entries.append(dict(
                instance_uuid=vm, vcpu=v, pcpu=rng.randrange(pcpus),
                io_strength=round(rng.uniform(*strength), 4), klass=klass,
                run_share=round(rng.uniform(*share), 4)))
        n += size
    io = [e for e in entries if e['klass'] in payload_sections.IO_KLASSES]
    total = round(sum(e['io_strength'] for e in entries), 4)
    per_pcpu = {}
    for e in entries:
        per_pcpu[e['pcpu']] = per_pcpu.get(e['pcpu'], 0.0) + e['io_strength']
    lsvm_vcpus = sum(size for _, size, lsvm in vms if lsvm)
    decided = []
    for k in range(decisions):
        kind, rule, reason = _RULES[k % len(_RULES)]
        vm, size, _ = vms[k % len(vms)]
        if '%d/P' in reason:
            reason = reason % (max(lsvm_vcpus, 1), pcpus)
        elif 'pCPU%d' in reason:
            reason = reason % (k % pcpus, 2)
        elif '%.3f' in reason:
            reason = reason % (rng.uniform(0.1, 0.9), rng.uniform(0, 0.5))
        if kind == 'vcpu_pin':
            before, after, target = None, [k % pcpus], str(k % size)
        elif kind == 'disk_iotune':
            before = {'read_iops_sec': 0, 'write_iops_sec': 0}
            after = {'read_iops_sec': 500, 'write_iops_sec': 500}
            target = 'vdb'
        elif kind == 'vcpu_weight':
            before, after, target = 100, 100, str(k % size)
        else:
            before, after, target = 3000, rng.choice((500, 1000, 3000)), \
                str(k % size)
        decided.append(dict(kind=kind, instance_uuid=vm, target=target,
                            before=before, after=after, rule=rule,
                            reason=reason, ts=ts - rng.uniform(0, 600),
                            applied=True, error=''))
    return dict(
        version='1.1', host=host_name(i), ts=ts, seq=seq,
        report_interval=report_interval, pcpus=pcpus, vcpus=entries,
        io_vcpus=len(io), io_strength_total=total,
        io_strength_per_pcpu=round(total / pcpus, 4),
        io_strength_max_pcpu=round(max(per_pcpu.values()), 4),
        lsvm=dict(supported=True, count=lsvm_vcpus,
                  per_pcpu=round(lsvm_vcpus / pcpus, 4),
                  capacity=max(pcpus * 2 - lsvm_vcpus, 0),
                  latency_bound_ms=2.0 if lsvm_vcpus else 0.0),
        disk=dict(capacity_iops=0.0, reserved_iops=500.0 * rng.randrange(4),
                  latency_p50_ms=round(rng.uniform(0.2, 2.0), 3),
                  latency_p99_ms=round(rng.uniform(2.0, 20.0), 3)),
        health=dict(status='ok', errors=[]),
        decisions=decided)
