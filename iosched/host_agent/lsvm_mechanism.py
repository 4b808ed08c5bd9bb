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
"""Which LSVM mechanism a host uses: the self-test at start, then a choice.

``choose`` is pure (the rule below); ``resolve`` runs the driver's wake-up
self-test (``driver.wakeup_probe``, repeated and with a share phase) and
reads its deadline admission figures (``driver.deadline_state``) and
returns the ``model.HostSched`` every snapshot carries to the vSlicer
policy, with the measurement it came from in words (``measured_by``: a
refused bound names it). ``refresh_deadline`` re-reads the admission
figures (other threads may take or free bandwidth). ``should_retest``
(pure) says when the host changed enough to measure and choose again.
"""

import dataclasses
import datetime
import os
import time

from oslo_log import log as logging

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent import model

LOG = logging.getLogger(__name__)

# Preference of ``mechanism = auto``, measured on real guests (the TCG
# testbed, bench/testbed_lsvm.py, two runs of 5 interleaved rounds): the
# weight boost gave LSVM p99 0.39-0.53x stock, SCHED_DEADLINE 0.61-0.87x
# (QEMU threads outside the reservations, runtime throttling of TCG
# bursts), slices no gain. Deadline stays the choice where the weight row
# misses the target (its p99 is the steadier one beside busy VMs).
AUTO_ORDER = (lsvm_bound.MECH_WEIGHT, lsvm_bound.MECH_DEADLINE,
              lsvm_bound.MECH_SLICE)


# choose(wanted, rows, target, fair):
#   wanted is a mechanism: it, with its row's p99 when the row is ok; when
#     the kernel refused it (row not ok): slice, with slice's p99, and the
#     refusal as a problem to log
#   wanted is auto: the first of AUTO_ORDER whose row is ok with
#     p99 <= target and whose CPU-bound share respects the fair-share limit
#     (contract.lsvm.share_within(share, fair, stock's share)); none: the
#     ok row with the lowest p99 among those within the share limit, else
#     among all (a problem to log); no usable row at all: slice, not
#     measured (p99 0)
def choose(wanted, probes, target_us, fair=1.0):
    """(mechanism, p99 us or 0, problem text or '') from self-test rows;
    ``fair``: the fair-share limit of the self-test's sleeper (CPUs).
    """
    rows = {r.mechanism: r for r in probes}
    stock = rows.get(lsvm_bound.PROBE_STOCK)
    stock_share = stock.share if stock is not None and stock.ok else 0.0

    def fair_ok(mech):
        return lsvm_bound.share_within(rows[mech].share, fair, stock_share)

    def measured_p99(mech):
        row = rows.get(mech)
        return float(row.p99_us) if row is not None and row.ok else 0.0

    if wanted != model.MECH_AUTO:
        row = rows.get(wanted)
        if row is None or row.ok:
            return wanted, measured_p99(wanted), ''
        return (lsvm_bound.MECH_SLICE, measured_p99(lsvm_bound.MECH_SLICE),
                'mechanism=%s refused by this host (%s); using slice'
                % (wanted, row.error or 'failed'))
    usable = [m for m in AUTO_ORDER if m in rows and rows[m].ok]
    for mech in usable:
        if rows[mech].p99_us <= target_us and fair_ok(mech):
            return mech, measured_p99(mech), ''
    if usable:
        pool = [m for m in usable if fair_ok(m)] or usable
        best = min(pool, key=lambda m: (rows[m].p99_us,
                                        AUTO_ORDER.index(m)))
        over = ['%s (share %.3f > limit %.3f)' % (m, rows[m].share, fair)
                for m in usable if not fair_ok(m)]
        return best, measured_p99(best), (
            'no mechanism meets selftest_target_us=%d within the fair '
            'share (best: %s, p99 %dus)%s'
            % (target_us, best, rows[best].p99_us,
               '; over the share limit: ' + ', '.join(over) if over else ''))
    return lsvm_bound.MECH_SLICE, 0.0, (
        'no mechanism could be measured on this host; using slice, not '
        'measured')


def format_table(probes):
    """The self-test rows as log lines, with the ratio to stock, each
    repeat's p99 and the CPU-bound share.
    """
    stock = next((r for r in probes if r.mechanism == lsvm_bound.PROBE_STOCK
                  and r.ok and r.p99_us > 0), None)
    lines = ['%-9s %-3s %9s %9s %9s %6s  %-20s %s' % (
        'case', 'ok', 'p50 us', 'p99 us', 'p99/stock', 'share', 'repeats p99',
        'error')]
    for r in probes:
        ratio = ('%.3f' % (r.p99_us / stock.p99_us)
                 if stock is not None and r.ok else '-')
        reps = '/'.join('%.0f' % v for v in r.p99s_us) or '-'
        lines.append('%-9s %-3s %9.0f %9.0f %9s %6s  %-20s %s' % (
            r.mechanism, 'yes' if r.ok else 'no', r.p50_us, r.p99_us, ratio,
            '%.3f' % r.share if r.share else '-', reps, r.error))
    return lines


def fair_limit(hogs_per_cpu):
    """The self-test sleeper's fair-share limit: one CPU shared with
    ``hogs_per_cpu`` busy loops (the weight case's CFS cap).
    """
    return 1.0 / (hogs_per_cpu + 1)


def host_load(conf):
    """The 1-minute load average (``<proc_root>/loadavg``), or None."""
    try:
        with open(os.path.join(conf.host_paths.proc_root, 'loadavg')) as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def describe(probes, mechanism, wall_ts, n_guests, load, pcpus, g,
             weight_group=''):
    """The measurement behind a choice, in words (a refused bound names
    it): when, where, under what load, and the p99 of every repeat.
    """
    row = next((r for r in probes if r.mechanism == mechanism), None)
    when = datetime.datetime.fromtimestamp(
        wall_ts, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    if row is None or not row.ok:
        what = '%s not measured' % mechanism
    else:
        what = '%s p99 %dus (median of %s, %d wakes)%s' % (
            mechanism, row.p99_us,
            '/'.join('%.0f' % v for v in row.p99s_us) or '1 run',
            row.samples,
            ' in the top-level group %s' % weight_group
            if weight_group and mechanism == lsvm_bound.MECH_WEIGHT else '')
    return ('self-test %s: %s on pCPUs %s among %d busy loop(s) per pCPU, '
            'beside %s running guest(s), load %s' % (
                when, what, ','.join(str(c) for c in pcpus) or '?',
                g.selftest_hogs_per_cpu,
                '?' if n_guests is None else n_guests,
                '?' if load is None else '%.2f' % load))


def _cases(wanted):
    if wanted == model.MECH_AUTO:
        return (lsvm_bound.PROBE_STOCK,) + lsvm_bound.MECHANISMS
    return (lsvm_bound.PROBE_STOCK, wanted)


def _weight_group(actuator, wanted):
    """The actuator's LSVM parent group ('' without one) when the weight
    mechanism may be used.
    """
    make = getattr(actuator, 'weight_group', None)
    if make is None or wanted not in (model.MECH_AUTO,
                                      lsvm_bound.MECH_WEIGHT):
        return ''
    try:
        return make() or ''
    except Exception as e:
        LOG.warning('no top-level LSVM group: %s', e)
        return ''


def _guests(driver):
    try:
        return len(driver.list_instances())
    except Exception:
        return None


def _pcpus(driver):
    try:
        return tuple(driver.pcpus())
    except Exception:
        return ()


def resolve(conf, driver, actuator=None):
    """The ``model.HostSched`` for this host (never raises); ``actuator``
    makes the top-level LSVM group when it can (``weight_group``).
    """
    g = conf['host_agent_policy.vslicer']
    wanted = g.mechanism
    probes = ()
    n_guests, load = _guests(driver), host_load(conf)
    wall = time.time()
    run = getattr(driver, 'wakeup_probe', None)
    group = _weight_group(actuator, wanted)
    if run is not None:
        t0 = time.monotonic()
        extra = {'weight_group': group} if group else {}
        try:
            probes = tuple(run(_cases(wanted), wakes=g.selftest_wakes,
                               hogs_per_cpu=g.selftest_hogs_per_cpu,
                               lsvm_weight=g.lsvm_weight,
                               repeats=g.selftest_repeats,
                               share_ms=g.selftest_share_ms, **extra))
        except Exception as e:
            LOG.error('wake-up self-test failed: %s', e)
        else:
            LOG.info('wake-up self-test (%.1f s), a sleeper among %d busy '
                     'loop(s) per CPU beside %s guest(s), load %s, %d '
                     'repeat(s):\n%s', time.monotonic() - t0,
                     g.selftest_hogs_per_cpu, n_guests, load,
                     g.selftest_repeats, '\n'.join(format_table(probes)))
    elif wanted == model.MECH_AUTO:
        LOG.warning('the %s driver has no wake-up self-test; LSVMs get '
                    'slices, not measured', getattr(driver, 'name', '?'))
    mech, p99, problem = choose(wanted, probes, g.selftest_target_us,
                                fair_limit(g.selftest_hogs_per_cpu))
    if problem:
        LOG.warning('LSVM mechanism: %s', problem)
    sched = model.HostSched(mechanism=mech, wakeup_p99_us=p99,
                            probes=probes, weight_group=group)
    if run is not None:
        sched = dataclasses.replace(
            sched, measured_by=describe(probes, mech, wall, n_guests, load,
                                        _pcpus(driver), g, group),
            tested_at=time.monotonic(), tested_guests=n_guests,
            tested_load=load)
    sched = refresh_deadline(sched, driver)
    LOG.info('LSVM mechanism: %s (wanted %s), measured p99 wake-up %s',
             mech, wanted, '%d us' % p99 if p99 else 'unknown')
    return sched


def refresh_deadline(sched, driver):
    """``sched`` with the driver's current deadline admission figures."""
    if sched.mechanism != lsvm_bound.MECH_DEADLINE:
        return sched
    read = getattr(driver, 'deadline_state', None)
    if read is None:
        return sched
    try:
        state = read()
    except Exception as e:
        LOG.warning('cannot read the deadline admission figures: %s', e)
        return sched
    return dataclasses.replace(
        sched, dl_cpus=tuple(state.cpus), dl_all_cpus=bool(state.all_cpus),
        dl_bw_limit=float(state.limit), dl_bw_foreign=float(state.foreign))


# should_retest(sched, now, guests, load, g): measure and choose again when
#   a self-test ran (tested_at set) and
#   now - tested_at >= selftest_retest_min_interval, and one of:
#     the number of running guests differs from the tested one;
#     |load - tested load| >= selftest_retest_load_delta (both known);
#     selftest_retest_interval > 0 and now - tested_at >= it
#   (a mechanism given by the operator, not auto, is never re-chosen)
def should_retest(sched, now, guests, load, g):
    """(True, why) when the host changed enough since the self-test."""
    if g.mechanism != model.MECH_AUTO or sched.tested_at is None:
        return False, ''
    since = now - sched.tested_at
    if since < g.selftest_retest_min_interval:
        return False, ''
    if guests is not None and sched.tested_guests is not None and (
            guests != sched.tested_guests):
        return True, 'running guests %d -> %d' % (sched.tested_guests,
                                                  guests)
    if load is not None and sched.tested_load is not None and abs(
            load - sched.tested_load) >= g.selftest_retest_load_delta:
        return True, 'load %.2f -> %.2f' % (sched.tested_load, load)
    if g.selftest_retest_interval and since >= g.selftest_retest_interval:
        return True, '%d s since the last self-test' % since
    return False, ''
