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
"""The agent's policies against the faithful Xen models, side by side.

The same scenario (same VMs, workloads and seed) runs four ways:

* ``xen-stock``: the Xen scheduler the paper started from (Credit for
  vSlicer, Credit2 for ISACS);
* ``xen-paper``: the paper's scheduler, faithful model (vSlicer, ISACS);
* ``linux-stock``: the simulator's Linux EEVDF, 3 ms default slices, no
  agent (what a stock KVM host does);
* ``linux-agent``: the same EEVDF host with the real host agent
  (``SimulatedDriver``, collectors, the policy, journaled actuator)
  ticking every ``TICK_US`` of simulated time.

Scenarios:

* ``vslicer``: vSlicer's ping test (digest 001 C4): 4 single-vCPU VMs on
  one pCPU, all at 40 % lookbusy; the pinged one is the LSVM (flavor
  ``iosched:latency_sensitive``, ``iosched:latency_ms`` 2 for the agent;
  a 10 ms microslice on Xen, T_NLSVM 30 ms). Figures: ping mean and p99
  RTT, and the LSVM's CPU share against the mean NLSVM share (fairness).
* ``isacs``: ISACS's hybrid test (digest 000 claim 1, i3c9) scaled to
  what the simulator carries in seconds: 5 guest pCPUs, 12 VMs x 4 vCPUs,
  3 I/O VMs whose vCPU 0 receives an iperf-like stream and is pinged,
  9 CPU-bound VMs (stress), a dom0-like backend on its own 2 pCPUs.
  Figures: I/O VMs' ping mean RTT, their stream throughput, and the CPU
  VMs' CPU seconds (the cost).

Rows are ``kind='info'``: the papers report no such comparison; the
verdict is ours to read (docs/reproduction.md).
"""

import statistics

from oslo_log import log as logging

from bench.reproduce import harness
from iosched.contract import stats
from iosched.host_agent import assembly
from iosched.host_agent import conf as agent_conf
from iosched.host_agent import model
from iosched.host_agent import plugins
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sp
from iosched.simulator import spec_paper
from iosched.simulator.xen import specs_credit
from iosched.simulator.xen import specs_credit2

TICK_US = 500_000
SYSTEMS = ('xen-stock', 'xen-paper', 'linux-stock', 'linux-agent')


def _agent(sim, infos, policy_names):
    """The real host agent over ``sim`` with the named policies (options
    at their defaults, as the embedded default runs them).
    """
    logging.getLogger('iosched.host_agent').logger.setLevel(logging.ERROR)
    conf = agent_conf.CONF
    drv = sim_driver.SimulatedDriver(sim, {i.uuid: i for i in infos})
    return assembly.build_agent(
        conf, drv, journal_path='',
        policies=plugins.load_policies(conf, policy_names))


def _run(sim, agent, until_us):
    while sim.now_us < until_us:
        sim.run_until(min(until_us, sim.now_us + TICK_US))
        if agent is not None:
            agent.tick()


def _info(uuid, vcpus, specs):
    return model.InstanceInfo(uuid=uuid, name=uuid, vcpus=vcpus,
                              extra_specs=dict(specs))


def _p99_or_nan(values):
    """p99 (``iosched.contract.stats``), NaN without any value (as the
    mean beside it).
    """
    got = stats.percentile(values, 0.99)
    return float('nan') if got is None else got


# -- vSlicer scenario ---------------------------------------------------------

def _vslicer_once(system, quick, seed=7):
    n_vms = 4
    dur = 20_000_000 if quick else 60_000_000
    warm = 2_000_000
    sched = None
    if system == 'xen-stock':
        sched = specs_credit.CreditSpec()
    elif system == 'xen-paper':
        sched = specs_credit.VSlicerSpec(microslices=(('vm0', 10000),))
    host = sim_host.SimHost(sp.HostSpec(
        name='vslicer', pcpus=1, scheduler=sched,
        backend=spec_paper.BackendSpec(cpus=1, service_us=30)), seed=seed)
    infos = []
    for i in range(n_vms):
        uuid = 'vm%d' % i
        sources = (spec_paper.Ping(interval_us=200_000, burst_us=50,
                                   mode='poisson'),) if i == 0 else ()
        host.add_vm(sp.VmSpec(uuid=uuid, name=uuid, vcpus=(sp.IoVcpu(
            sources=sources, task=spec_paper.Lookbusy(0.4)),)))
        infos.append(_info(uuid, 1, {
            'iosched:latency_sensitive': 'true',
            'iosched:latency_ms': '2'} if i == 0 else {}))
    agent = (_agent(host, infos, ['vslicer'])
             if system == 'linux-agent' else None)
    _run(host, agent, warm)
    cpu0 = {u: host.cpu_run_us(u) for u in host.vm_uuids()}
    _run(host, agent, warm + dur)
    rtt = [r / 1000.0 for r in host.request_latencies_us('vm0', warm)]
    share = {u: (host.cpu_run_us(u) - cpu0[u]) / dur
             for u in host.vm_uuids()}
    nl = [share[u] for u in share if u != 'vm0']
    if agent is not None:
        agent.shutdown()
    return {'mean': statistics.fmean(rtt) if rtt else float('nan'),
            'p99': _p99_or_nan(rtt), 'lsvm_share': share['vm0'],
            'nlsvm_share': statistics.fmean(nl)}


def vslicer_side_by_side(quick):
    rows = []
    claim = 'side by side: vSlicer ping test (4 VMs, 1 LSVM, 40% lookbusy)'
    for system in SYSTEMS:
        r = _vslicer_once(system, quick)
        for metric, value in (
                ('LSVM ping mean RTT (ms)', r['mean']),
                ('LSVM ping p99 RTT (ms)', r['p99']),
                ('LSVM / NLSVM CPU share', r['lsvm_share'] /
                 r['nlsvm_share'])):
            rows.append(harness.Row(
                paper_id='side-by-side', claim=claim, setting=system,
                metric=metric, paper=None, ours=round(value, 3),
                kind='info'))
    return rows


# -- ISACS scenario -----------------------------------------------------------

def _isacs_once(system, quick, seed=11):
    n_io, n_cpu = 3, 9
    dur = 3_000_000 if quick else 8_000_000
    warm = 1_000_000
    sched = None
    if system == 'xen-stock':
        sched = specs_credit2.Credit2Spec()
    elif system == 'xen-paper':
        sched = specs_credit2.IsacsSpec()
    host = sim_host.SimHost(sp.HostSpec(
        name='isacs', pcpus=5, scheduler=sched,
        backend=spec_paper.BackendSpec(cpus=2, service_us=10)), seed=seed)
    infos = []
    io_vms = []
    for i in range(n_io + n_cpu):
        uuid = 'vm%02d' % i
        if i < n_io:
            io_vms.append(uuid)
            vcpus = (sp.IoVcpu(sources=(
                spec_paper.Ping(interval_us=20_000, burst_us=30,
                                mode='poisson'),
                spec_paper.Stream(mode='tcp', window=16, ring_slots=16,
                                  cpu_per_segment_us=60))),) + (sp.Idle(),) * 3
            specs = {'iosched:io_profile': 'io'}
        else:
            vcpus = (sp.CpuBound(),) * 4
            specs = {'iosched:io_profile': 'cpu'}
        host.add_vm(sp.VmSpec(uuid=uuid, name=uuid, vcpus=vcpus))
        infos.append(_info(uuid, 4, specs))
    agent = (_agent(host, infos, ['isacs'])
             if system == 'linux-agent' else None)
    _run(host, agent, warm)
    b0 = {u: _stream_bytes(host, u) for u in io_vms}
    cpu0 = {u: host.cpu_run_us(u) for u in host.vm_uuids()}
    _run(host, agent, warm + dur)
    rtt = [r / 1000.0 for u in io_vms
           for r in host.request_latencies_us(u, warm)]
    mbps = sum(_stream_bytes(host, u) - b0[u] for u in io_vms) / dur
    cpu_s = sum(host.cpu_run_us(u) - cpu0[u] for u in host.vm_uuids()
                if u not in io_vms) / 1e6
    if agent is not None:
        agent.shutdown()
    return {'mean': statistics.fmean(rtt) if rtt else float('nan'),
            'p99': _p99_or_nan(rtt), 'mbps': mbps, 'cpu_s': cpu_s}


def _stream_bytes(host, uuid):
    st = host.workload_stats(uuid, 0)
    return sum(s.get('bytes', 0) for s in st.get('sources', ()))


def isacs_side_by_side(quick):
    rows = []
    claim = ('side by side: ISACS hybrid test (i3c9: 12 VMs x 4 vCPUs '
             'on 5 pCPUs)')
    for system in SYSTEMS:
        r = _isacs_once(system, quick)
        for metric, value in (
                ('I/O VMs ping mean RTT (ms)', r['mean']),
                ('I/O VMs ping p99 RTT (ms)', r['p99']),
                ('I/O VMs stream throughput (MB/s)', r['mbps']),
                ('CPU VMs CPU seconds', r['cpu_s'])):
            rows.append(harness.Row(
                paper_id='side-by-side', claim=claim, setting=system,
                metric=metric, paper=None, ours=round(value, 3),
                kind='info'))
    return rows


EXPERIMENTS = [
    ('vslicer', vslicer_side_by_side),
    ('isacs', isacs_side_by_side),
]
