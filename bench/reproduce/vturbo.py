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
"""vTurbo (seed 001 ch. 3) on the faithful Credit and vTurbo models.

Vanilla Xen: the target VM's single vCPU handles its IRQs and shares one
regular pCPU (30 ms slices) with k - 1 other VMs. vTurbo: the same VMs
on one regular pCPU plus one turbo pCPU (0.1 ms quantum); each VM's
vCPU 0 is its turbo vCPU (IRQs), vCPU 1 its regular vCPU. dom0 is the
simulator's backend (1 server, 5 us per item). Experiments (digest 001
section 5):

* ``irq_wait`` (C11): the wait of an IRQ (a ping echo) before the guest
  handles it, vanilla vs turbo, k = 2..5 VMs; on vTurbo every other VM's
  turbo vCPU is CPU-bound (the worst case the paper discusses);
* ``udp_buffer`` (C12): UDP at 1 Gbps into a VM whose receiving
  application runs on its regular vCPU (40 % lookbusy on every regular
  vCPU): throughput with the guest buffer at B_min = B x (k - 1) x 30 ms
  (11.25 MB for 4 VMs) and at the paper's 40 MB, against vanilla;
* ``table_3_1`` (C15): the four scenarios of Table 3.1 (two VMs, one
  regular and one turbo core), in the scheduler and in the fluid model of
  the accounting (one-period lag).
"""

from bench.reproduce import harness
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sp
from iosched.simulator import spec_paper
from iosched.simulator.xen import specs_credit
from iosched.simulator.xen import vturbo_accounting

PAPER = 'vturbo'
# What sets the rows labelled identity / calibrated (harness.Row.basis).
CREDIT_SLICE = ('the Credit model runs k always-runnable vCPUs round robin '
                'in 30 ms slices: (k-1) x 30 ms by construction')
FED = ('the paper\'s own measured (rd, td) of the period before '
       '(Table 3.1), fed in')
WARM_US = 1_000_000
WIRE_US = 100
BACKEND_US = 5
BURST_US = 20
SEG = 65536


def _vanilla(seed):
    return sim_host.SimHost(sp.HostSpec(
        name='vanilla', pcpus=1, scheduler=specs_credit.CreditSpec(),
        backend=spec_paper.BackendSpec(cpus=1, service_us=BACKEND_US)),
        seed=seed)


def _vturbo(seed):
    return sim_host.SimHost(sp.HostSpec(
        name='vturbo', pcpus=2,
        scheduler=specs_credit.VTurboSpec(turbo_pcpus=(1,)),
        backend=spec_paper.BackendSpec(cpus=1, service_us=BACKEND_US)),
        seed=seed)


def _vm(h, uuid, *vcpus):
    h.add_vm(sp.VmSpec(uuid=uuid, name=uuid, vcpus=vcpus))


# -- C11 ----------------------------------------------------------------------

def _irq_waits(system, k, dur, seed=21):
    ping = spec_paper.Ping(interval_us=20_000, burst_us=BURST_US,
                           wire_us=WIRE_US, mode='poisson')
    if system == 'vanilla':
        h = _vanilla(seed)
        _vm(h, 'vm0', sp.IoVcpu(sources=(ping,), task=sp.CpuBound()))
        for i in range(1, k):
            _vm(h, 'vm%d' % i, sp.IoVcpu(task=sp.CpuBound()))
    else:
        h = _vturbo(seed)
        _vm(h, 'vm0', sp.IoVcpu(sources=(ping,)),
            sp.IoVcpu(task=sp.CpuBound()))
        for i in range(1, k):
            _vm(h, 'vm%d' % i, sp.IoVcpu(task=sp.CpuBound()),
                sp.IoVcpu(task=sp.CpuBound()))
    h.run_until(WARM_US + dur)
    fixed = WIRE_US + 2 * BACKEND_US + BURST_US
    return [(r - fixed) / 1000.0
            for r in h.request_latencies_us('vm0', WARM_US)]


def irq_wait(quick):
    dur = 5_000_000 if quick else 20_000_000
    rows = []
    claim = 'C11: IRQ wait, turbo core vs regular core'
    for k in (2, 3, 4, 5):
        van = _irq_waits('vanilla', k, dur)
        tur = _irq_waits('vturbo', k, dur)
        setting = '%d VMs' % k
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting + ', vTurbo',
            metric='max IRQ wait (ms)', paper=round(k * 0.1, 3),
            ours=round(max(tur), 3), kind='bound',
            note='bound k x 0.1 ms; mean %.3f ms; the other turbo vCPUs '
            'CPU-bound; the IRQ vCPU stays UNDER on its fair turbo share '
            'and preempts' % (sum(tur) / len(tur))))
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting + ', vanilla',
            metric='max IRQ wait (ms)', paper=(k - 1) * 30.0,
            ours=round(max(van), 2), kind='value', basis='identity',
            basis_reason=CREDIT_SLICE,
            note='(k-1) x 30 ms; mean %.1f ms' % (sum(van) / len(van))))
        if k == 5:
            rows.append(harness.Row(
                paper_id=PAPER, claim=claim, setting=setting + ', vanilla',
                metric='IRQ delay "150 ms" (seed) (ms)', paper=150.0,
                ours=round(max(van), 2), kind='value', basis='identity',
                basis_reason=CREDIT_SLICE,
                note='the seed says 5 x 30 ms; the (N-1) x T rule of its '
                'own ch. 2 gives 120 ms'))
    return rows


# -- C12 ----------------------------------------------------------------------

def _udp_mbps(system, k, sockbuf_bytes, dur, seed=3):
    st = dict(mode='udp', rate_bytes_per_s=125e6, segment_bytes=SEG,
              ring_slots=16, sockbuf_segments=max(1, sockbuf_bytes // SEG))
    busy = spec_paper.Lookbusy(0.4)
    if system == 'vanilla':
        h = _vanilla(seed)
        _vm(h, 'rx', sp.IoVcpu(sources=(spec_paper.Stream(**st),), task=busy))
        for i in range(1, k):
            _vm(h, 'vm%d' % i, sp.IoVcpu(task=busy))
    else:
        h = _vturbo(seed)
        _vm(h, 'rx', sp.IoVcpu(sources=(spec_paper.Stream(app_vcpu=1, **st),)),
            sp.IoVcpu(task=busy))
        for i in range(1, k):
            _vm(h, 'vm%d' % i, sp.IoVcpu(), sp.IoVcpu(task=busy))
    h.run_until(WARM_US)
    b0 = h.workload_stats('rx', 0)['sources'][0]['bytes']
    h.run_until(WARM_US + dur)
    b1 = h.workload_stats('rx', 0)['sources'][0]['bytes']
    return (b1 - b0) * 8.0 / dur


def udp_buffer(quick):
    dur = 4_000_000 if quick else 12_000_000
    rows = []
    claim = 'C12 section 3.3.2: UDP needs a guest buffer >= B x delay'
    big = 40 * 2 ** 20
    for k in (3, 4, 5):
        setting = '%d VMs, 1 GbE' % k
        van = _udp_mbps('vanilla', k, big, dur)
        tur = _udp_mbps('vturbo', k, big, dur)
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting + ', vTurbo 40 MB',
            metric='UDP throughput (Mbps)', paper=1000.0,
            ours=round(tur, 1), kind='value',
            note='line rate; vanilla %.0f Mbps (falls with VMs)' % van))
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='vTurbo / vanilla UDP (x)', paper=4.0 if k == 5 else None,
            ours=round(tur / van, 2), kind='value' if k == 5 else 'info',
            note='"up to 4x"'))
    b_min = int(125e6 * 0.090)      # 1 Gbps x (4 - 1) x 30 ms = 11.25 MB
    at_min = _udp_mbps('vturbo', 4, b_min, dur)
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='4 VMs, vTurbo 11.25 MB',
        metric='UDP throughput at B_min (Mbps)', paper=900.0,
        ours=round(at_min, 1), kind='bound',
        note='the paper: no more than 900 Mbps until rmem ~40 MB'))
    small = _udp_mbps('vturbo', 4, 2 ** 20, dur)
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='4 VMs, vTurbo 1 MB',
        metric='UDP throughput, small buffer (Mbps)', paper=None,
        ours=round(small, 1), kind='info',
        note='a fast IRQ stage alone does not help (the paper: buffers '
        'are needed)'))
    return rows


# -- C15 ----------------------------------------------------------------------

# Table 3.1: turbo demand of VM1 and VM2 (regular demand 100 % each), the
# measured (rd, td) of the period before, and the consumed (reg, turbo).
TABLE_3_1 = (
    ('1', (0, 0), ((50, 0), (50, 0)), ((50, 0), (50, 0))),
    ('2', (0, 100), ((50, 0), (50, 100)), ((100, 0), (0, 100))),
    ('3', (100, 100), ((50, 50), (50, 50)), ((50, 50), (50, 50))),
    ('4', (15, 55), ((50, 15), (50, 55)), ((70, 15), (30, 55))),
)
EXACT = 'a closed form: exact to rounding'
ALLOCATED_FS_R = {'1': (50, 50), '2': (100, 0), '3': (50, 50),
                  '4': (70, 30)}


def _turbo_task(pct):
    if pct == 0:
        return sp.IoVcpu()
    if pct == 100:
        return sp.IoVcpu(task=sp.CpuBound())
    return sp.IoVcpu(task=spec_paper.Lookbusy(pct / 100.0, period_us=10_000))


def _sim_consumed(turbo, dur, seed=5):
    h = sim_host.SimHost(sp.HostSpec(
        name='table31', pcpus=2,
        scheduler=specs_credit.VTurboSpec(turbo_pcpus=(1,))), seed=seed)
    names = ('vm1', 'vm2')
    for u, t in zip(names, turbo):
        _vm(h, u, _turbo_task(t), sp.IoVcpu(task=sp.CpuBound()))
    h.run_until(WARM_US)
    c0 = {(u, i): h.vcpu_counters(u, i).run_us for u in names
          for i in (0, 1)}
    h.run_until(WARM_US + dur)
    return {u: tuple(100.0 * (h.vcpu_counters(u, i).run_us - c0[(u, i)])
                     / dur for i in (1, 0)) for u in names}


def table_3_1(quick):
    dur = 3_000_000 if quick else 10_000_000
    rows = []
    claim = 'C15 Table 3.1: two-pool fair share (% of a core)'
    weights = {'vm1': 1, 'vm2': 1}
    for name, turbo, measured, consumed in TABLE_3_1:
        sim = _sim_consumed(turbo, dur)
        demand = {'vm1': (100, turbo[0]), 'vm2': (100, turbo[1])}
        meas = {'vm1': measured[0], 'vm2': measured[1]}
        (alloc, fluid), = vturbo_accounting.fluid_run(
            demand, weights, meas, 100, 100, periods=1)
        for j, vm in enumerate(('vm1', 'vm2')):
            setting = 'scenario %s %s 100/%d' % (name, vm, turbo[j])
            rows.append(harness.Row(
                paper_id=PAPER, claim=claim, setting=setting,
                metric='allocated FS^R (Algorithm 3)',
                paper=ALLOCATED_FS_R[name][j], ours=alloc[vm].fs_r,
                kind='value', tol=0.01, tol_reason=EXACT,
                basis='calibrated', basis_reason='Algorithm 3 run on '
                + FED, note='no floor'))
            for pool, idx in (('regular', 0), ('turbo', 1)):
                paper = consumed[j][idx]
                rows.append(harness.Row(
                    paper_id=PAPER, claim=claim, setting=setting,
                    metric='consumed %s, scheduler' % pool, paper=paper,
                    ours=round(sim[vm][idx], 1), kind='value',
                    tol=None if paper else 2.5,
                    tol_reason='' if paper else 'a paper figure of 0 %: '
                    'within 2.5 points of a core (switch costs on the '
                    'turbo core)',
                    note='%.0f s window; 2 us per switch on the turbo '
                    'core' % (dur / 1e6)))
                rows.append(harness.Row(
                    paper_id=PAPER, claim=claim, setting=setting,
                    metric='consumed %s, fluid model' % pool, paper=paper,
                    ours=round(fluid[vm][idx], 2), kind='value',
                    tol=0.01, tol_reason=EXACT, basis='calibrated',
                    basis_reason='the fluid model of the accounting (one-'
                    'period lag) run from ' + FED,
                    note='one-period lag'))
    return rows


EXPERIMENTS = [
    ('irq_wait', irq_wait),
    ('udp_buffer', udp_buffer),
    ('table_3_1', table_3_1),
]
