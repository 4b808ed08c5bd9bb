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
"""vSlicer (seed 001 ch. 2) on the faithful Credit and vSlicer models.

The paper's testbed: one pCPU shared by 3-5 single-vCPU VMs, dom0 on the
other core (here: the simulator's backend, 1 server, 30 us per item),
T_NLSVM = 30 ms. Experiments (digest 001 section 5):

* ``credit_access_latency`` (C1): ping to a CPU-bound VM among N: worst
  RTT and worst wait between two runs, against (N - 1) x 30 ms;
* ``lsvm_waits`` (C2): the schedule of CPU-bound VMs under vSlicer: an
  LSVM's worst and best wait (Fig. 2.6-2.7) and the context switches
  against credit ("3x");
* ``fairness`` (C3): CPU shares of LSVMs and NLSVMs running sysbench-like
  fixed work back to back, against 1 / (m + n);
* ``ping_rtt`` (C4): Fig. 2.9: mean ping RTT to an LSVM among 3/4/5 VMs
  at 40 % lookbusy, credit vs vSlicer with 1 and 2 LSVMs;
* ``apache_ring`` (C7): the Apache test's root cause: requests fill the
  guest's I/O ring while the VM waits for the CPU; the highest request
  rate without ring drops (> 1 %), credit vs vSlicer (4 VMs at 40 %
  lookbusy, the web VM and one other are LSVMs). Our assumptions: a ring
  of 64 slots, 8 inbound packets per connection (SYN, ACK, GET, ACKs of
  the 5 KB page, FIN, ACK), 20 us of guest CPU per packet.

The ping experiment does not state T_m; we use 10 ms, the value of the
paper's own example (Fig. 2.5) and the one that gives the 40 ms worst
case the Apache test reports (30 + (2 - 1) x 10); with 5 ms the 2-LSVM
means are lower (7.3 / 10.6 / 12.8 ms), as the closed form predicts.
"""

import statistics

from bench.reproduce import harness
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sp
from iosched.simulator import spec_paper
from iosched.simulator.xen import specs_credit
from iosched.simulator.xen import vslicer_math

PAPER = 'vslicer'
# What sets the rows labelled identity (harness.Row.basis).
CREDIT_SLICE = ('the Credit model runs N always-runnable VMs round robin '
                'in 30 ms slices: (N-1) x 30 ms by construction')
SCHEDULE = ('the model generates Algorithm 1\'s schedule, whose closed '
            'form this is')
T_NLSVM = 30000
T_M_PING = 10000
WARM_US = 2_000_000


def _host(sched, seed):
    return sim_host.SimHost(sp.HostSpec(
        name='vslicer', pcpus=1, scheduler=sched,
        backend=spec_paper.BackendSpec(cpus=1, service_us=30)), seed=seed)


def _vslicer(lsvms, t_m):
    return specs_credit.VSlicerSpec(
        microslices=tuple((u, t_m) for u in lsvms))


def _add(h, uuid, task, ping=False):
    sources = (spec_paper.Ping(interval_us=50_000, burst_us=50,
                               mode='poisson'),) if ping else ()
    h.add_vm(sp.VmSpec(uuid=uuid, name=uuid, vcpus=(sp.IoVcpu(
        sources=sources, task=task),)))


def switch_waits(log, uuid, since, end):
    """Gaps between the end of uuid's runs and its next switch-in."""
    out = []
    ended = None
    for (t, _p, u, _i), nxt in zip(log, log[1:] + [(end, 0, None, 0)]):
        if u != uuid:
            continue
        if ended is not None and t >= since:
            out.append(t - ended)
        ended = nxt[0]
    return out


# -- C1 -----------------------------------------------------------------------

def credit_access_latency(quick):
    dur = 15_000_000 if quick else 40_000_000
    rows = []
    claim = 'C1 Fig. 2.2: credit worst-case access latency (N-1) x 30 ms'
    for n in (2, 3, 4, 5):
        h = _host(specs_credit.CreditSpec(), seed=10 + n)
        log = h.sched.record_switches()
        for i in range(n):
            _add(h, 'vm%d' % i, sp.CpuBound(), ping=(i == 0))
        h.run_until(WARM_US + dur)
        bound = vslicer_math.credit_worst_wait(n, T_NLSVM) / 1000.0
        rtt = h.request_latencies_us('vm0', WARM_US)
        wait = switch_waits(log, 'vm0', WARM_US, WARM_US + dur)
        setting = '%d CPU-bound VMs, 1 pCPU' % n
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='max ping RTT (ms)', paper=bound,
            ours=round(max(rtt) / 1000.0, 2), kind='value',
            basis='identity', basis_reason=CREDIT_SLICE,
            note='%d pings, Poisson; RTT adds wire and dom0 (~0.2 ms)'
            % len(rtt)))
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='max wait between runs (ms)', paper=bound,
            ours=round(max(wait) / 1000.0, 2), kind='value',
            basis='identity', basis_reason=CREDIT_SLICE,
            note='median %.1f ms; an UNDER/OVER flip at an accounting '
            'can add one slice now and then'
            % (statistics.median(wait) / 1000.0)))
    return rows


# -- C2 -----------------------------------------------------------------------

def _schedule(lsvms, t_m, n_vms, dur, sched=None):
    h = _host(sched or _vslicer(lsvms, t_m), seed=3)
    log = h.sched.record_switches()
    for i in range(n_vms):
        _add(h, 'vm%d' % i, sp.CpuBound())
    h.run_until(WARM_US + dur)
    switches = sum(1 for t, _p, _u, _i in log if t >= WARM_US)
    return log, switches


def lsvm_waits(quick):
    dur = 6_000_000 if quick else 20_000_000
    end = WARM_US + dur
    rows = []
    claim = 'C2 Figs. 2.6-2.7: LSVM wait under vSlicer'
    cases = (('m=2 n=2 T_m=5ms', ('vm0', 'vm1'), 5000, 4),
             ('m=1 n=3 T_m=10ms', ('vm0',), 10000, 4))
    for setting, lsvms, t_m, n_vms in cases:
        log, switches = _schedule(lsvms, t_m, n_vms, dur)
        m = len(lsvms)
        w = switch_waits(log, 'vm0', WARM_US, end)
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='LSVM worst wait (ms)',
            paper=vslicer_math.worst_wait(T_NLSVM, m, t_m) / 1000.0,
            ours=max(w) / 1000.0, kind='value', basis='identity',
            basis_reason=SCHEDULE, note='T_NLSVM + (m-1) T_m; CPU-bound '
            'VMs'))
        if m > 1:
            rows.append(harness.Row(
                paper_id=PAPER, claim=claim, setting=setting,
                metric='LSVM best wait (ms)',
                paper=vslicer_math.best_wait(m, t_m) / 1000.0,
                ours=min(w) / 1000.0, kind='value', basis='identity',
                basis_reason=SCHEDULE, note='(m-1) T_m'))
    _log, credit_switches = _schedule((), 0, 4, dur,
                                      sched=specs_credit.CreditSpec())
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='4 VMs, credit',
        metric='worst wait (ms)',
        paper=vslicer_math.credit_worst_wait(4, T_NLSVM) / 1000.0,
        ours=max(switch_waits(_log, 'vm0', WARM_US, end)) / 1000.0,
        kind='value', basis='identity', basis_reason=CREDIT_SLICE,
        note='the paper: 90 ms vs 30 ms (m=1)'))
    log, vs_switches = _schedule(('vm0', 'vm1'), 5000, 4, dur)
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='m=2 n=2 T_m=5ms',
        metric='context switches vs credit (x)', paper=3.0,
        ours=round(vs_switches / credit_switches, 2), kind='value',
        basis='identity', basis_reason=SCHEDULE + ' (14 switches per '
        '120 ms round vs 4)', note='by counting Fig. 2.7: 14 per 120 ms vs '
        '4 = 3.5x (digest 001 section 2.1)'))
    return rows


# -- C3 -----------------------------------------------------------------------

def fairness(quick):
    dur = 10_000_000 if quick else 30_000_000
    rows = []
    claim = 'C3 Eq. 2.1: LSVM and NLSVM CPU shares, 1/(m+n)'
    for n_vms, m in ((3, 1), (4, 1), (5, 1), (4, 2), (5, 2)):
        lsvms = tuple('vm%d' % i for i in range(m))
        h = _host(_vslicer(lsvms, 5000), seed=5)
        for i in range(n_vms):
            _add(h, 'vm%d' % i, spec_paper.Sysbench(work_us=1_000_000))
        h.run_until(WARM_US)
        c0 = {u: h.cpu_run_us(u) for u in h.vm_uuids()}
        h.run_until(WARM_US + dur)
        share = {u: (h.cpu_run_us(u) - c0[u]) / dur for u in c0}
        fair = vslicer_math.round_share(m, n_vms - m)
        setting = 'm=%d n=%d T_m=5ms, sysbench' % (m, n_vms - m)
        for kind, names in (('LSVM', lsvms), ('NLSVM', [
                u for u in share if u not in lsvms])):
            rows.append(harness.Row(
                paper_id=PAPER, claim=claim, setting=setting,
                metric='%s CPU share (mean)' % kind, paper=round(fair, 4),
                ours=round(statistics.fmean(share[u] for u in names), 4),
                kind='value', basis='identity', basis_reason='Eq. 2.1: '
                'Algorithm 1\'s round gives every VM one T_NLSVM, which '
                'the model implements',
                note='%.0f s window (xentop 30 s in the paper)'
                % (dur / 1e6)))
    return rows


# -- C4 -----------------------------------------------------------------------

def _ping_mean(n_vms, n_lsvm, quick, seed=7):
    dur = 15_000_000 if quick else 60_000_000
    lsvms = tuple('vm%d' % i for i in range(n_lsvm))
    sched = _vslicer(lsvms, T_M_PING) if n_lsvm else (
        specs_credit.CreditSpec())
    h = _host(sched, seed)
    for i in range(n_vms):
        _add(h, 'vm%d' % i, spec_paper.Lookbusy(0.4), ping=(i == 0))
    h.run_until(WARM_US + dur)
    rtt = h.request_latencies_us('vm0', WARM_US)
    return statistics.fmean(rtt) / 1000.0, len(rtt)


def _closed_form(n_vms, m):
    """The ideal-schedule mean wait in ms (None: T_m does not divide T_n;
    a lone LSVM's microslices run back to back, so T_m = T_n for m = 1).
    """
    n = n_vms - m
    t_m = T_NLSVM / n if m == 1 else T_M_PING
    if not vslicer_math.is_valid_microslice(T_NLSVM, n, t_m):
        return None
    return vslicer_math.vslicer_mean_wait(T_NLSVM, m, n, t_m) / 1000.0


def ping_rtt(quick):
    rows = []
    claim = 'C4 Fig. 2.9: ping mean RTT to an LSVM, 40% lookbusy'
    got = {}
    for n_vms in (3, 4, 5):
        for n_lsvm in (0, 1, 2):
            got[(n_vms, n_lsvm)] = _ping_mean(n_vms, n_lsvm, quick)
    for n_vms in (3, 4, 5):
        credit_ms, pings = got[(n_vms, 0)]
        setting = '%d VMs' % n_vms
        closed = vslicer_math.credit_mean_wait(n_vms, T_NLSVM) / 1000.0
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting + ', credit',
            metric='mean RTT (ms)', paper=35.0 if n_vms == 4 else None,
            ours=round(credit_ms, 2),
            kind='value' if n_vms == 4 else 'info',
            note='closed form (N-1)^2 T/2N = %.2f ms; %d pings'
            % (closed, pings)))
        for n_lsvm in (1, 2):
            ms, _ = got[(n_vms, n_lsvm)]
            closed = _closed_form(n_vms, n_lsvm)
            # The paper gives one figure per setting only for 4 VMs and 1
            # LSVM (10 ms); "about 12 / 14 ms" is for 3-5 VMs together:
            # the across-3-5 rows below, not a value of each setting.
            own = n_lsvm == 1 and n_vms == 4
            rows.append(harness.Row(
                paper_id=PAPER, claim=claim,
                setting='%s, vSlicer %d LSVM' % (setting, n_lsvm),
                metric='mean RTT (ms)', paper=10.0 if own else None,
                ours=round(ms, 2), kind='value' if own else 'info',
                note=('T_m 10 ms; ideal-schedule closed form %s'
                      % ('%.2f ms' % closed if closed is not None else
                         'n/a (T_m does not divide T_n)'))
                + ('' if own else '; the paper: about %d ms across 3-5 '
                   'VMs (row below)' % (12 if n_lsvm == 1 else 14))))
    for n_vms, paper in ((4, -71.0), (5, -80.0)):
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim,
            setting='%d VMs, 1 LSVM vs credit' % n_vms,
            metric='mean RTT change (%)', paper=paper,
            ours=round(harness.pct_change(got[(n_vms, 1)][0],
                                          got[(n_vms, 0)][0]), 1),
            kind='change'))
    for n_lsvm, paper in ((1, 12.0), (2, 14.0)):
        mean = statistics.fmean(got[(n, n_lsvm)][0] for n in (3, 4, 5))
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim,
            setting='3-5 VMs, vSlicer %d LSVM' % n_lsvm,
            metric='mean RTT across 3-5 VMs (ms)', paper=paper,
            ours=round(mean, 2), kind='value',
            note='"remains about %d ms": one figure for 3-5 VMs, compared '
            'with our mean over 3, 4 and 5 VMs' % paper))
    slope = (got[(5, 0)][0] - got[(3, 0)][0]) / 2
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='3-5 VMs, credit',
        metric='mean RTT growth per VM (ms)', paper=None,
        ours=round(slope, 2), kind='info',
        note='the paper: "near-linear increase"'))
    return rows


# -- C7 -----------------------------------------------------------------------

RING = 64
PKTS_PER_CONN = 8


def _ring_drops(lsvms, pps, dur, log=False, seed=9):
    sched = _vslicer(lsvms, T_M_PING) if lsvms else specs_credit.CreditSpec()
    h = _host(sched, seed)
    sw = h.sched.record_switches() if log else None
    st = spec_paper.Stream(mode='udp', rate_bytes_per_s=pps * 1500.0,
                           segment_bytes=1500, ring_slots=RING,
                           cpu_per_segment_us=20)
    h.add_vm(sp.VmSpec(uuid='web', name='web', vcpus=(sp.IoVcpu(
        sources=(st,), task=spec_paper.Lookbusy(0.4)),)))
    for i in range(1, 4):
        _add(h, 'vm%d' % i, spec_paper.Lookbusy(0.4))
    h.run_until(WARM_US)
    s0 = h.workload_stats('web', 0)['sources'][0]
    h.run_until(WARM_US + dur)
    s1 = h.workload_stats('web', 0)['sources'][0]
    sent = s1['sent'] - s0['sent']
    frac = (s1['drops'] - s0['drops']) / sent if sent else 0.0
    worst = (max(switch_waits(sw, 'web', WARM_US, WARM_US + dur)) if log
             else None)
    return frac, worst


def _saturation_pps(lsvms, dur):
    """The highest packet rate (+-1 %) with at most 1 % ring drops."""
    lo, hi = 100.0, 6400.0
    while hi / lo > 1.02:
        mid = (lo * hi) ** 0.5
        if _ring_drops(lsvms, mid, dur)[0] <= 0.01:
            lo = mid
        else:
            hi = mid
    return lo


def apache_ring(quick):
    dur = 4_000_000 if quick else 10_000_000
    claim = 'C7 Apache: ring overflow caps the connection rate'
    rows = []
    sat = {}
    for name, lsvms, paper_conn, paper_worst in (
            ('credit', (), 90.0, 90.0),
            ('vSlicer 2 LSVM', ('web', 'vm1'), 180.0, 40.0)):
        sat[name] = _saturation_pps(lsvms, dur)
        _frac, worst = _ring_drops(lsvms, 100.0, dur, log=True)
        setting = '4 VMs, %s' % name
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='web VM worst CPU wait (ms)', paper=paper_worst,
            ours=worst / 1000.0, kind='value', basis='identity',
            basis_reason=SCHEDULE if lsvms else CREDIT_SLICE,
            note='T_m 10 ms; with T_n = 15 ms the second microslice is '
            'cut to 5 ms, so 30 + 5' if lsvms else ''))
        rows.append(harness.Row(
            paper_id=PAPER, claim=claim, setting=setting,
            metric='max conn/s without drops', paper=paper_conn,
            ours=round(sat[name] / PKTS_PER_CONN, 1), kind='info',
            note='%.0f packets/s with our assumptions (ring %d, %d '
            'packets per connection): absolute values are ours'
            % (sat[name], RING, PKTS_PER_CONN)))
    rows.append(harness.Row(
        paper_id=PAPER, claim=claim, setting='4 VMs',
        metric='vSlicer / credit max rate (x)', paper=2.0,
        ours=round(sat['vSlicer 2 LSVM'] / sat['credit'], 2),
        kind='value',
        note='ring / worst wait: 90 / 35 = 2.6 expected'))
    return rows


EXPERIMENTS = [
    ('credit_access_latency', credit_access_latency),
    ('lsvm_waits', lsvm_waits),
    ('fairness', fairness),
    ('ping_rtt', ping_rtt),
    ('apache_ring', apache_ring),
]
