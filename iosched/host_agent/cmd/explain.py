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
"""``iosched-explain``: why the host agent set each knob it holds.

Reads the agent's change journal (read-only; the agent may be running) or
a saved HostReport, and prints per knob: instance, target, kind, original
value, value the agent set, policy rule (with what the rule means), reason
(the measured inputs) and when. ``--json`` for machines. Bad input (no
journal, unreadable file, bad JSON, bad config) exits 2 with one line on
stderr, never a traceback.
"""

import argparse
import json
import os
import sys

from oslo_config import cfg

from iosched.contract import payload
from iosched.contract import payload_check
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.cmd import clip
from iosched.host_agent.cmd import explain_format as fmt
from iosched.host_agent.conf import agent as agent_opts

PROG = 'iosched-explain'
EXIT_BAD_INPUT = 2
# Where the docs install the agent's configuration; read when no
# --config-file/--config-dir is given, with oslo's default locations.
DEFAULT_CONFIG = '/etc/iosched/host-agent.conf'

# What each policy rule means, one line each. Keyed by the rule names of
# iosched/host_agent/policies/*.py (a unit test fails when one is missing
# here); a rule not listed is printed without a description.
RULES = {
    'vslicer.lsvm_microslice':
        'vSlicer: a vCPU of a latency-sensitive VM (LSVM) gets a microslice '
        'T_m = min(lsvm_max_slice, budget) so that a woken vCPU waits at '
        'most W + (k-1)*T_m <= L (W = T_m with wakeup_preemption: '
        'budget L/k; W = T_NLSVM without: budget (L - T_NLSVM)/(k-1)); '
        'same CPU share as every VM.',
    'vslicer.nlsvm_slice':
        'vSlicer: a vCPU of a VM that is not latency-sensitive keeps the '
        'long slice T_NLSVM.',
    'vslicer.lsvm_io_thread':
        "vSlicer (host half of vTurbo): the LSVM's QEMU main-loop thread "
        'gets the LSVM microslice, so its I/O does not queue behind '
        'CPU-bound threads.',
    'vslicer.lsvm_pcpu':
        'vSlicer per-pCPU plan (pin_lsvms): the LSVM vCPU is pinned to its '
        'planned pCPU (strictest latency first, fewest LSVM vCPUs per pCPU) '
        'so that the per-core bound m_p*T_m holds.',
    'vslicer.lsvm_deadline':
        'vSlicer with mechanism=deadline: an LSVM vCPU thread gets a '
        'SCHED_DEADLINE reservation, runtime T_m, deadline L, period so '
        "that the VM holds its fair share: prompt at wake-up, throttled at "
        'its share if it turns CPU-bound.',
    'vslicer.lsvm_io_deadline':
        "vSlicer with mechanism=deadline: the LSVM's I/O-path threads (QEMU "
        'main loop, iothreads, vhost) get a small SCHED_DEADLINE '
        'reservation in the same period.',
    'vslicer.lsvm_dl_affinity':
        'vSlicer with mechanism=deadline: the LSVM threads may run on every '
        'CPU of their root domain (the kernel refuses SCHED_DEADLINE on '
        'narrower affinity).',
    'vslicer.lsvm_dl_release':
        'vSlicer with mechanism=deadline: an LSVM the host cannot admit '
        '(bandwidth, dedicated pinning) goes back to the fair class and '
        'gets slices.',
    'vslicer.lsvm_vm_weight':
        'vSlicer with mechanism=weight: the LSVM\'s VM-level cgroup weight '
        'is boosted so that it wins the CPU when it wakes.',
    'vslicer.lsvm_vm_cap':
        'vSlicer with mechanism=weight: the boosted LSVM is capped by a CFS '
        'quota at its fair share, so the weight buys no extra CPU.',
    'vslicer.lsvm_group':
        'vSlicer with mechanism=weight and a top-level group (weight_group):'
        ' the LSVM\'s vCPU and I/O-path threads move to a cgroup of their '
        'own beside libvirt\'s machine group, boosted so that they win the '
        'CPU against guests and host load alike, capped at the VM\'s fair '
        'share; stopping the agent moves them back.',
    'vslicer.equal_weight':
        'vSlicer: every vCPU keeps the same weight; slices change when a '
        'vCPU runs, never its CPU share.',
    'isacs.io_slice':
        'ISACS: an I/O-intensive vCPU (IVCredit > 0) gets a shorter slice, '
        'the shorter the larger its IVCredit against the host mean: an '
        'earlier turn, not more share.',
    'isacs.cpu_boost_slice':
        'ISACS CPU-BOOST: a CPU-bound vCPU of the boost group gets a longer '
        'slice (fewer preemptions).',
    'isacs.base_slice':
        'ISACS: a vCPU with no I/O credit and no boost keeps the base '
        'slice.',
    'isacs.equal_weight':
        'ISACS credit concealing: equal weights, so IVCredit changes the '
        'order of turns, not the CPU share.',
    'isacs.io_balance':
        'ISACS Algorithm 2: one I/O vCPU is pinned from the most to the '
        'least I/O-loaded pCPU when the gap exceeds the hysteresis '
        '(rate-limited).',
    'slo.hold_back':
        'SLO volumes (Flubber VBC over iotune): a volume missed its <B, L> '
        '(Ind = max((B-b)/B, (l-L)/L) > 0), so this disk (no SLO, or beating '
        'its own by the margin) is held back to its share of an allowance '
        'within the device capacity; the allowance is cut on each miss and '
        'given back step by step while every SLO is met.',
    'slo.retune':
        'SLO volumes: the volume\'s type, QoS spec or size changed while '
        'attached (online extend with per-GB keys, edited QoS spec); Nova '
        'applies QoS only at attach, so the agent writes the limits Nova '
        'would now apply and makes them the disk\'s original value.',
    'slo.release':
        'SLO volumes: the disk\'s original iotune (its static QoS ceiling) is '
        'back, because every SLO has been met and the caps no longer bind, '
        'or the volume now needs its own SLO defended.',
    'vaio.equal_weight':
        'Virtualization-aware I/O (seed 004): the VM has a disk on a host '
        'device shared with other VMs that runs BFQ, so its BFQ group gets '
        'the same weight as every other VM there: BFQ serves the VMs round '
        'robin, each with its own sync and async queues.',
    'vaio.scheduler':
        'Virtualization-aware I/O: a device shared by VMs ran a scheduler '
        'without per-VM groups and switch_scheduler is on, so it is set to '
        'bfq (the original is restored when the agent stops).',
    'vaio.slice_idle':
        'Virtualization-aware I/O: BFQ\'s idling on a shared device set '
        'from bfq_slice_idle_us (0: no idling, so a device with internal '
        'parallelism is not left idle while other VMs wait).',
    'vaio.release':
        'Virtualization-aware I/O: the VM is no longer on a shared BFQ '
        'device, so its blkio weight is back to its original value.',
    'ibalancer.cap':
        'I-Balancer (seed 003): the I/O-intensive vCPUs\' event counts '
        'deviate by more than beta (Eq. 2 / n), so the heavy half gets '
        'per-event delays (Eqs. 4-5, 200 us on average) and each delayed '
        "VM's disk is capped at r'/r = 1/(1 + r d) of its measured "
        'throughput (live iotune).',
    'ibalancer.hold':
        'I-Balancer: the cap is kept (deviation in the hysteresis band, or '
        'not yet calm for long enough), or given back by a step while the '
        'pool stays fair.',
    'ibalancer.release':
        'I-Balancer termination: the pool stayed fair and the disk no '
        'longer reaches its cap, so its original iotune is back.',
    'vturbo.io_thread_pin':
        "vTurbo host half: a turbo VM's I/O (QEMU emulator) threads are "
        'pinned to the turbo pCPUs, which carry only short I/O work.',
    'vturbo.io_thread_slice':
        "vTurbo host half: a turbo VM's I/O threads get the 0.1 ms turbo "
        'quantum on the turbo pCPUs.',
    'vturbo.regular_pool':
        'vTurbo host half: guest vCPUs are pinned to the regular pCPUs so '
        'the turbo pCPUs stay free for I/O threads.',
    'vturbo.charge_turbo':
        "vTurbo Algorithm 3: the CPU a turbo VM's I/O threads used on turbo "
        'pCPUs is charged to it: its VM cgroup weight is its fair share of '
        'both pools less that use, relative to the fair share.',
}


def config_files(args):
    """(oslo argv, default config files) for the agent's configuration
    named by ``--config-file``/``--config-dir``, else the agent's default
    locations (``DEFAULT_CONFIG`` first).
    """
    cli = []
    for path in args.config_file:
        cli += ['--config-file', path]
    for path in args.config_dir:
        cli += ['--config-dir', path]
    defaults = None
    if not cli:
        defaults = cfg.find_config_files(project='iosched',
                                         prog='io-host-agent')
        if os.path.exists(DEFAULT_CONFIG):
            defaults.insert(0, DEFAULT_CONFIG)
    return cli, defaults


def config_names(args):
    """The --config-file and --config-dir paths, for messages."""
    return ', '.join(args.config_file + args.config_dir) or '(default files)'


class BadInput(Exception):
    """Input the command cannot use: said on stderr, exit code 2."""


def describe(rule):
    """What ``rule`` means, or '' for a rule this version does not know."""
    return RULES.get(rule, '')


DESCRIPTION = """\
Explain why the iosched host agent set each knob it holds on this host.

For every knob the agent changed and has not put back (a vCPU's EEVDF
slice, weight or pinning, a disk's I/O limits, ...), print the instance,
the target (vCPU, disk), the kind of knob, its original value (before the
agent first touched it), the value the agent set, the policy rule that
chose it (with what the rule means), the reason (the measured inputs that
led to it) and when it was set.

By default the knobs come from the agent's change journal, whose path is
[host_agent] journal_path in the agent's configuration: --config-file and
--config-dir, else %s and oslo's default files
(iosched.conf, io-host-agent.conf in ~/.iosched, ~, /etc/iosched, /etc),
else the option's default. The journal is only read, also while the agent
runs. A stopped agent has put every knob back: nothing is held.

With --report FILE, explain the decisions of a saved HostReport (JSON, as
the agent sends it to the schedulers): version 1.1 carries the newest
decisions, including knobs that already had the chosen value, dry runs
(actuator = noop) and writes that failed."""

EPILOG = """\
examples:
  iosched-explain --config-file /etc/iosched/host-agent.conf
  iosched-explain --instance 7f0c2a9e-... --kind vcpu_slice
  iosched-explain --journal /var/lib/iosched/journal.jsonl --json
  iosched-explain --report host-report.json

values are in the knob's unit: vcpu_slice, emulator_slice in us;
vcpu_weight in cgroup weight; vcpu_pin a pCPU list (null: unpinned);
disk_iotune libvirt iotune keys. "when" is the wall clock the journal
recorded, else the agent's clock (libvirt driver: seconds since boot).

exit status: 0 explained (also when nothing is held), 2 bad input (no
journal, unreadable file, not JSON, not a journal or a HostReport, bad
configuration).

rules (what each policy rule means):
""" + fmt.rules_table(RULES)


def parser():
    p = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION % DEFAULT_CONFIG, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--config-file', action='append', default=[],
                   metavar='PATH',
                   help="the agent's configuration file (repeatable, as "
                        'for io-host-agent); gives [host_agent] '
                        'journal_path')
    p.add_argument('--config-dir', action='append', default=[],
                   metavar='DIR',
                   help='a directory of *.conf files, as for io-host-agent')
    source = p.add_mutually_exclusive_group()
    source.add_argument('--journal', metavar='PATH',
                        help='read this journal file instead of the '
                             'configured one')
    source.add_argument('--report', metavar='FILE',
                        help='explain the decisions of a saved HostReport '
                             'JSON file instead of the journal')
    p.add_argument('--instance', action='append', default=[],
                   metavar='UUID',
                   help='only knobs of this instance (repeatable)')
    p.add_argument('--kind', action='append', default=[], metavar='KIND',
                   help='only knobs of this kind, e.g. vcpu_slice, '
                        'vcpu_weight, vcpu_pin, emulator_slice, disk_iotune '
                        '(repeatable)')
    p.add_argument('--json', action='store_true',
                   help='print one JSON object (knobs or decisions, and '
                        'the rules they name) instead of text')
    return p


def journal_path(args):
    """--journal, else [host_agent] journal_path of the configuration."""
    if args.journal:
        return args.journal
    conf = cfg.ConfigOpts()
    agent_opts.register_opts(conf)
    cli, defaults = config_files(args)
    try:
        conf(cli, project='iosched', prog='io-host-agent',
             default_config_files=defaults)
        path = conf.host_agent.journal_path
    except (cfg.Error, OSError, ValueError) as e:
        raise BadInput('cannot read the agent configuration %s: %s' % (
            config_names(args), e))
    if not path:
        raise BadInput('[host_agent] journal_path is empty in the agent '
                       'configuration: the agent keeps its journal in '
                       'memory only, there is nothing to read')
    return path


def _selected(args, uuid, kind):
    return ((not args.instance or uuid in args.instance) and
            (not args.kind or kind in args.kind))


def _shown(args, items):
    return ', %d shown' % len(items) if args.instance or args.kind else ''


def from_journal(args):
    """(explanation dicts, warnings, JSON header, text heading)."""
    path = journal_path(args)
    try:
        held, warnings = journal_mod.read_held(path)
    except FileNotFoundError:
        raise BadInput('no journal at %s: is [host_agent] journal_path of '
                       'the agent another file? (--config-file, --journal)'
                       % path)
    except OSError as e:
        raise BadInput('cannot read the journal %s: %s' % (path, e))
    except (journal_mod.JournalError, UnicodeDecodeError) as e:
        raise BadInput('not an agent journal: %s' % e)
    except RecursionError:
        raise BadInput('%s is not an agent journal: JSON nested too deeply'
                       % path)
    items = [fmt.from_held(h) for h in held
             if _selected(args, h.instance_uuid, h.kind)]
    heading = 'journal %s: %d knob(s) held by the agent%s' % (
        path, len(held), _shown(args, items))
    return items, warnings, {'source': 'journal', 'path': path}, heading


def from_report(args):
    """As ``from_journal``, from the decisions of a saved HostReport."""
    path = args.report
    try:
        report = payload.load(path)
    except OSError as e:
        raise BadInput('cannot read the report %s: %s' % (path, e))
    except payload_check.PayloadError as e:
        raise BadInput('%s is not a HostReport: %s' % (path, e))
    except ValueError as e:
        raise BadInput('%s is not JSON: %s' % (path, e))
    except RecursionError:
        raise BadInput('%s is not a HostReport: JSON nested too deeply'
                       % path)
    items = [fmt.from_entry(d) for d in report.decisions
             if _selected(args, d.instance_uuid, d.kind)]
    heading = ('report %s: host %s, version %s, seq %d: %d decision(s)%s'
               % (path, report.host, report.version, report.seq,
                  len(report.decisions), _shown(args, items)))
    warnings = []
    if not report.decisions and report.version == '1.0':
        warnings.append('HostReport 1.0 carries no decisions (agent older '
                        'than 1.1)')
    meta = {'source': 'report', 'path': path, 'host': report.host,
            'version': report.version, 'seq': report.seq, 'ts': report.ts}
    return items, warnings, meta, heading


def main(argv=None, out=None, err=None):
    out = out or sys.stdout
    err = err or sys.stderr
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        read = from_report if args.report else from_journal
        items, warnings, meta, heading = read(args)
    except BadInput as e:
        print(clip('%s: error: %s' % (PROG, e)), file=err)
        return EXIT_BAD_INPUT
    for w in warnings:
        print('%s: warning: %s' % (PROG, w), file=err)
    items.sort(key=fmt.sort_key)
    if args.json:
        meta = dict(meta, warnings=warnings,
                    rules={i['rule']: describe(i['rule']) for i in items})
        key = 'decisions' if args.report else 'knobs'
        json.dump(dict(meta, **{key: [dict(i, rule_description=describe(
            i['rule'])) for i in items]}), out, indent=2, sort_keys=True)
        out.write('\n')
        return 0
    out.write(fmt.render(heading, items, args, describe))
    return 0


if __name__ == '__main__':
    sys.exit(main())
