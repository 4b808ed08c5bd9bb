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
"""``iosched-wakeup-probe``: the host agent's wake-up self-test, by hand.

Runs what the agent runs at start with ``[host_agent_policy.vslicer]
mechanism = auto`` (``iosched.host_agent.linux.wakeup_probe`` in the privsep
daemon, over the guest pCPUs) and prints one row per case: p50/p99 wake-up
lateness and the ratio to the stock row, or why the kernel refused the
case. ``--json`` for machines. Bad input (unknown case, out-of-range
numbers, unreadable configuration) exits 2 with one line on stderr; a
test that cannot run (no privilege) exits 1.
"""

import argparse
import json
import sys
import time

from oslo_config import cfg

from iosched.contract import lsvm as lsvm_bound
from iosched.host_agent.cmd import clip
from iosched.host_agent.cmd import explain
from iosched.host_agent import conf as agent_conf
from iosched.host_agent import linux
from iosched.host_agent.linux import cpus as cpulist
from iosched.host_agent.linux import privileged_probe
from iosched.host_agent.linux import wakeup_probe
from iosched.host_agent.linux import wakeup_probe_rows

PROG = 'iosched-wakeup-probe'
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
DEFAULT_CONFIG = explain.DEFAULT_CONFIG
VSLICER = 'host_agent_policy.vslicer'
CONF = agent_conf.CONF

DESCRIPTION = """\
Measure which LSVM mechanism shortens a wake-up on this host: the wake-up
self-test the iosched host agent runs at start (mechanism = auto).

No VM is involved. Busy loops (--hogs-per-cpu on every guest pCPU) load
the CPUs while a sleeper wakes every 2 ms on an absolute timer, spins
50 us and records how late each wake-up came, --wakes times per case:

  stock     SCHED_OTHER, nothing changed (the reference row)
  deadline  SCHED_DEADLINE 300 us every 2 ms (deadline 1 ms)
  weight    the sleeper's own cgroup at lsvm_weight, capped by a CFS
            quota at its fair share (what mechanism = weight does to a VM)
  slice     an EEVDF custom slice of 100 us

Every CPU is fully loaded for the few seconds it takes (about 3 s with
the defaults). Run it as root (the privsep daemon is forked) or with the
agent's [host_agent_privsep] helper_command. Nothing is left behind: the
busy loops are killed and the temporary cgroups removed.

The pCPUs are [libvirt] guest_pcpus, else every online CPU; the defaults
of --wakes and --hogs-per-cpu and the weight are selftest_wakes,
selftest_hogs_per_cpu and lsvm_weight of [%s] in the
agent's configuration (--config-file, else %s)."""

EPILOG = """\
reading the table: p50/p99 are wake-up lateness in us; "x stock" is the
ratio to the stock row of the same run (below 1 = shorter waits). A case
the kernel refuses prints its error (e.g. EPERM) instead of figures.

examples:
  iosched-wakeup-probe
  iosched-wakeup-probe --cases stock,deadline --wakes 1000 --json

exit status: 0 measured (also when a case was refused), 1 the test could
not run (no privilege, no privsep daemon), 2 bad input."""


class BadInput(Exception):
    """Input the command cannot use: said on stderr, exit code 2."""


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, width=79)


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION % (VSLICER, DEFAULT_CONFIG),
        epilog=EPILOG, formatter_class=_formatter)
    p.add_argument('--config-file', action='append', default=[],
                   metavar='PATH',
                   help="the agent's configuration file (repeatable)")
    p.add_argument('--config-dir', action='append', default=[],
                   metavar='DIR',
                   help='a directory of *.conf files, as for io-host-agent')
    p.add_argument('--cases', default=','.join(lsvm_bound.PROBE_CASES),
                   metavar='LIST',
                   help='comma-separated cases, in order (default: %s)'
                        % ','.join(lsvm_bound.PROBE_CASES))
    p.add_argument('--wakes', type=str, default=None, metavar='N',
                   help='wake-ups per case, %d..%d (default: '
                        'selftest_wakes, 300)' % (wakeup_probe.WAKES_MIN,
                                                  wakeup_probe.WAKES_MAX))
    p.add_argument('--hogs-per-cpu', type=str, default=None, metavar='N',
                   help='busy loops per pCPU, %d..%d (default: '
                        'selftest_hogs_per_cpu, 2)' % (wakeup_probe.HOGS_MIN,
                                                       wakeup_probe.HOGS_MAX))
    p.add_argument('--json', action='store_true',
                   help='print one JSON object instead of the table')
    return p


def load_conf(args):
    cli, defaults = explain.config_files(args)
    try:
        CONF(cli, project='iosched', prog='io-host-agent',
             default_config_files=defaults)
        vs = CONF[VSLICER]
        return vs.selftest_wakes, vs.selftest_hogs_per_cpu, vs.lsvm_weight
    except (cfg.Error, OSError, ValueError) as e:
        raise BadInput('cannot read the agent configuration %s: %s' % (
            explain.config_names(args), e))


def _int(name, text, default):
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise BadInput('%s %r is not an integer' % (name, text))


def guest_cpus(conf):
    """[libvirt] guest_pcpus, else the online CPUs (as the driver)."""
    online = cpulist.online_cpus(conf.host_paths.sys_root)
    configured = conf.libvirt.guest_pcpus
    if not configured:
        return online, online
    try:
        return cpulist.parse_cpu_list(configured), online
    except ValueError as e:
        raise BadInput('[libvirt] guest_pcpus: %s' % e)


def settings(args):
    """(cases, cpus, wakes, hogs_per_cpu, lsvm_weight), checked."""
    wakes, hogs, weight = load_conf(args)
    wakes = _int('--wakes', args.wakes, wakes)
    hogs = _int('--hogs-per-cpu', args.hogs_per_cpu, hogs)
    cases = [c.strip() for c in args.cases.split(',') if c.strip()]
    try:
        cpus, online = guest_cpus(CONF)
        cases, cpus = wakeup_probe.check_args(cases, cpus, wakes, hogs,
                                              weight, online)
    except wakeup_probe.ProbeArgError as e:
        raise BadInput(str(e))
    except linux.LinuxKnobError as e:
        raise BadInput(str(e))
    return cases, cpus, wakes, hogs, weight


def rows_json(rows):
    ratio = wakeup_probe_rows.ratios(rows)
    out = []
    for r in rows:
        d = wakeup_probe_rows.to_dict(r)
        p50x, p99x = ratio.get(r.mechanism, (None, None))
        d.update(p50_vs_stock=p50x, p99_vs_stock=p99x)
        out.append(d)
    return out


def _fmt(v, spec):
    return '-' if v is None else format(v, spec)


def render(rows, cpus, wakes, hogs, wall_s):
    lines = ['wake-up self-test on CPUs %s: %d busy loop(s) per CPU, %d '
             'wakes per case, %.1f s' % (
                 ','.join(map(str, cpus)), hogs, wakes, wall_s),
             '%-9s %-3s %9s %9s %7s %7s  %s' % (
                 'case', 'ok', 'p50 us', 'p99 us', 'p50 x', 'p99 x',
                 'error'),
             ('%-9s %-3s %9s %9s %7s %7s' % (
                 '', '', '', '', 'stock', 'stock')).rstrip()]
    for d in rows_json(rows):
        ok = d['ok']
        lines.append(('%-9s %-3s %9s %9s %7s %7s  %s' % (
            d['mechanism'], 'yes' if ok else 'no',
            _fmt(d['p50_us'] if ok else None, '.1f'),
            _fmt(d['p99_us'] if ok else None, '.1f'),
            _fmt(d['p50_vs_stock'], '.2f'), _fmt(d['p99_vs_stock'], '.2f'),
            d['error'])).rstrip())
    return '\n'.join(lines) + '\n'


def main(argv=None, out=None, err=None, probe=None):
    out = out or sys.stdout
    err = err or sys.stderr
    probe = probe or privileged_probe.probe
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cases, cpus, wakes, hogs, weight = settings(args)
    except BadInput as e:
        print(clip('%s: error: %s' % (PROG, e)), file=err)
        return EXIT_BAD_INPUT
    start = time.monotonic()
    try:
        rows = probe(CONF, cases, cpus, wakes=wakes, hogs_per_cpu=hogs,
                     lsvm_weight=weight)
    except wakeup_probe.ProbeArgError as e:
        print(clip('%s: error: %s' % (PROG, e)), file=err)
        return EXIT_BAD_INPUT
    except Exception as e:  # privsep start-up errors have many types
        print('%s: error: the self-test could not run: %s: %s (run it as '
              'root, or set [host_agent_privsep] helper_command)'
              % (PROG, type(e).__name__, e), file=err)
        return EXIT_FAILED
    wall = time.monotonic() - start
    if args.json:
        json.dump({'cpus': list(cpus), 'wakes': wakes, 'hogs_per_cpu': hogs,
                   'lsvm_weight': weight, 'wall_s': round(wall, 2),
                   'rows': rows_json(rows)}, out, indent=2, sort_keys=True)
        out.write('\n')
    else:
        out.write(render(rows, cpus, wakes, hogs, wall))
    return 0


if __name__ == '__main__':
    sys.exit(main())
