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
"""``iosched-iotrace``: record, analyse and draw the five I/O layers.

Exit status: 0 done (``analyze`` also when it finds an inversion), 1 a
recording that could not run (no tracefs, no privilege, no libvirt),
2 bad input (said on stderr in one line).
"""

import argparse
import json
import os
import sys

from iosched.host_agent.cmd import clip

PROG = 'iosched-iotrace'
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

DESCRIPTION = """\
Seed 004's I/O analysis tool: where along the path does a VM's I/O wait?

Every request of every VM is followed through five layers:

  Request     the VM submits it
  Queuing     it enters the host's block queue (elevator)
  Dispatch    the elevator hands it to the device
  Completion  the device finishes it
  Response    the completion reaches the VM

together with each vCPU's state (running, runnable, idle, inactive =
idle for more than 30 ms). A trace comes from the simulator (simulate:
seed 004's four dd VMs on one disk under stock CFQ or VA-CFQ) or from
this host (record: tracefs block events on one device, attributed to
libvirt domains through QEMU's threads). analyze prints finish times,
their SD, Jain's index, queue waits and the I/O priority inversions it
finds; render draws the time, share, integrated and queue-wait views as
PNGs and one self-contained HTML page. How to read them: docs/iotrace.md.
"""

EPILOG = """\
examples:
  iosched-iotrace simulate --scheduler cfq -o cfq.jsonl.gz
  iosched-iotrace analyze cfq.jsonl.gz
  iosched-iotrace render cfq.jsonl.gz -o out/cfq     # PNGs + report.html
  iosched-iotrace record --device /dev/loop0 --duration 10 -o host.jsonl.gz

exit status: 0 done (also when analyze finds an inversion), 1 the
recording could not run (tracefs, privilege, libvirt), 2 bad input."""


class BadInput(Exception):
    """Input the command cannot use: said on stderr, exit code 2."""


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, width=79)


def _positive(kind, lo=None, hi=None):
    def conv(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError('%r is not a %s' % (
                text, 'number' if kind is float else 'whole number'))
        if v != v or (lo is not None and v < lo) or (
                hi is not None and v > hi):     # v != v: NaN
            raise argparse.ArgumentTypeError(
                '%s is out of range, want %s..%s' % (text, lo, hi))
        return v
    return conv


def _analysis_args(p):
    p.add_argument('--window', type=_positive(float, 0.01, 3600),
                   default=1.0, metavar='S',
                   help='moving-average window of the shares, s '
                        '(default 1)')
    p.add_argument('--step', type=_positive(float, 0.001, 60), default=0.1,
                   metavar='S', help='one share point every S s '
                                     '(default 0.1)')
    p.add_argument('--min-wait', type=_positive(float, 0.0, 3600),
                   default=0.5, metavar='S',
                   help="the detector's threshold: an async write's queue "
                        'wait (Dispatch - Queuing) of at least S s '
                        '(default 0.5, twice CFQ\'s async FIFO expiry)')


def _add_simulate(sub):
    """``simulate``: seed 004 in the simulator, its trace written."""
    s = sub.add_parser(
        'simulate', formatter_class=_formatter,
        help='run seed 004 in the simulator and write its trace',
        description='Run seed 004\'s experiment in the simulator '
        '(iosched.simulator.vaio: VMs each reading GiB with dd from its own '
        'partition of one HDD, journal-like async writes that block the '
        'reader) under dom0\'s stock CFQ (one shared async queue) or '
        'VA-CFQ (one queue per VM, round robin), and write its trace. '
        'The paper\'s run (1 GiB) takes a few seconds.')
    s.add_argument('--scheduler', choices=('cfq', 'va-cfq'), default='cfq',
                   help="dom0's elevator (default cfq)")
    s.add_argument('--vms', type=_positive(int, 2, 16), default=4,
                   help='identical VMs (default 4)')
    s.add_argument('--gib', type=_positive(float, 0.001, 8), default=1.0,
                   help='GiB each dd reads (default 1, the paper\'s)')
    s.add_argument('--seed', type=_positive(int, 0, 2 ** 31), default=1,
                   help='random seed (default 1)')
    s.add_argument('--commit-ms', type=_positive(float, 1, 1e7),
                   default=None, metavar='MS',
                   help='mean gap between journal commits (default: the '
                        "model's 20 s, scaled down with --gib below 1)")
    s.add_argument('-o', '--output', default='iotrace-sim.jsonl.gz',
                   help='trace file (.gz: compressed; default '
                        'iotrace-sim.jsonl.gz)')


def _add_record(sub):
    """``record``: this host's VMs on one block device."""
    r = sub.add_parser(
        'record', formatter_class=_formatter,
        help="record this host's VMs on one block device",
        description='Record the five layers of the VMs whose disks are on '
        'one block device of this host, and their vCPU states, through a '
        'private tracefs instance (removed afterwards, also on Ctrl-C). '
        'Needs root, tracefs and libvirt. Layer sources: docs/iotrace.md.')
    r.add_argument('--device', required=True,
                   help='the block device the VMs\' disks are on '
                        '(e.g. /dev/loop0, /dev/sdb)')
    r.add_argument('--duration', type=_positive(float, 0.1, 86400),
                   default=None, metavar='S',
                   help='seconds to record (default: until Ctrl-C)')
    r.add_argument('--domain', action='append', default=[],
                   help='a libvirt domain to attribute to (repeatable; '
                        'default: every running domain with a disk on '
                        '--device)')
    r.add_argument('--tracefs', default='/sys/kernel/tracing',
                   help='tracefs mount point (default /sys/kernel/tracing)')
    r.add_argument('--libvirt-uri', default='qemu:///system')
    r.add_argument('--run-dir', default='/run/libvirt/qemu',
                   help="libvirt's QEMU pidfile directory")
    r.add_argument('--proc', default='/proc', help='procfs mount point')
    r.add_argument('--buffer-kb', type=_positive(int, 64, 1 << 20),
                   default=8192,
                   help='trace buffer per CPU, KiB (default 8192)')
    r.add_argument('--poll', type=_positive(float, 0.01, 5), default=0.25,
                   help='seconds between reads of the buffer (default '
                        '0.25)')
    r.add_argument('--no-sched', action='store_true',
                   help='block events only: no Response layer and no vCPU '
                        'states, for less overhead (docs/iotrace.md, '
                        '"Recording overhead")')
    r.add_argument('--text-pipe', action='store_true',
                   help='read the text trace_pipe instead of the binary '
                        'per-CPU pages (slower; for a kernel whose binary '
                        'layout this tool misreads)')
    r.add_argument('-o', '--output', default='iotrace-host.jsonl.gz')


def _add_analyze(sub):
    """``analyze``: fairness, queue waits, inversions, printed."""
    a = sub.add_parser(
        'analyze', formatter_class=_formatter,
        help='print fairness, queue waits and inversions found',
        description='Print the finish times, their SD, slowest / fastest, '
        "Jain's index over per-VM throughput, each VM's queue waits and "
        'every I/O priority inversion the detector finds (an async write '
        'of one VM held between Queuing and Dispatch while other VMs\' '
        'sync requests were dispatched, its vCPU inactive and its '
        'Request-layer share collapsed), in words with timestamps. Exit '
        'status 0 also when it finds one.')
    a.add_argument('trace')
    a.add_argument('--json', action='store_true',
                   help='one JSON object instead of text')
    _analysis_args(a)


def _add_render(sub):
    """``render``: the views as PNGs and one HTML page."""
    d = sub.add_parser(
        'render', formatter_class=_formatter,
        help='draw the views as PNGs and one HTML page',
        description='Write time.png, share.png, integrated.png, waits.png '
        'and report.html (self-contained: images inlined, no external '
        'URL) into the output directory.')
    d.add_argument('trace')
    d.add_argument('-o', '--outdir', default='iotrace-report')
    _analysis_args(d)


def parser():
    p = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION,
                                epilog=EPILOG, formatter_class=_formatter)
    sub = p.add_subparsers(dest='cmd', metavar='COMMAND')
    sub.required = True

    _add_simulate(sub)
    _add_record(sub)
    _add_analyze(sub)
    _add_render(sub)
    return p


def _progress(msg):
    print(msg, file=sys.stderr, flush=True)


def _load(path):
    from iosched.iotrace import fmt
    try:
        return fmt.read(path)
    except fmt.TraceError as e:
        raise BadInput(str(e))
    except RecursionError:      # JSON nested thousands deep
        raise BadInput('%s: not a trace: a record is nested too deeply'
                       % path)


def _check_points(t, args):
    """Refuse a --step that would need more share points than the
    analysis draws (analyze.MAX_POINTS).
    """
    from iosched.iotrace import analyze
    if t.end / args.step > analyze.MAX_POINTS:
        raise BadInput('--step %g: a trace of %g s would need %d share '
                       'points; accepted: --step %g or more (at most %d '
                       'points)' % (args.step, t.end, t.end / args.step,
                                    t.end / analyze.MAX_POINTS,
                                    analyze.MAX_POINTS))


def _check_out(path):
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise BadInput('output directory %s does not exist' % d)
    if os.path.isdir(path):
        raise BadInput('-o %s is a directory; accepted: a trace file name '
                       '(.gz: compressed)' % path)


def _write(t, path):
    from iosched.iotrace import fmt
    try:
        fmt.write(t, path)
    except OSError as e:
        raise BadInput('cannot write the trace -o %s: %s' % (path, e))


def cmd_simulate(args):
    from iosched.iotrace import simconv
    _check_out(args.output)
    scn = simconv.scenario(args.scheduler, args.vms, args.gib, args.seed,
                           args.commit_ms)
    _progress('simulate: %s, %d VMs x %g GiB, seed %d ...'
              % (args.scheduler, args.vms, args.gib, args.seed))
    t = simconv.simulate(scn)
    _write(t, args.output)
    _progress('simulate: %d layer events, %d vCPU spans -> %s'
              % (len(t.io), len(t.vcpu), args.output))
    return 0


def cmd_record(args):
    from iosched.iotrace import hostmap
    from iosched.iotrace import record
    _check_out(args.output)
    try:
        hm = hostmap.HostMap(args.device, args.domain, args.libvirt_uri,
                             args.run_dir, args.proc)
    except hostmap.HostMapError as e:
        raise BadInput(str(e))
    try:
        hm.discover()
    except hostmap.HostMapError as e:
        print(clip('%s: %s' % (PROG, e)), file=sys.stderr)
        return EXIT_FAILED
    _progress('record: %s on %s (%d vCPU threads); %s' % (
        ', '.join(sorted(hm.vms)), args.device, len(hm.vcpu_tid),
        'for %g s' % args.duration if args.duration else 'Ctrl-C to stop'))
    try:
        rec = record.Recorder(args.tracefs, hm, args.buffer_kb, args.poll,
                              sched=not args.no_sched,
                              raw=not args.text_pipe)
        t = rec.run(args.duration, _progress)
    except (record.RecordError, OSError) as e:
        print(clip('%s: %s' % (PROG, e)), file=sys.stderr)
        return EXIT_FAILED
    _write(t, args.output)
    _progress('record: %d layer events, %d vCPU spans -> %s'
              % (len(t.io), len(t.vcpu), args.output))
    return 0


def _text(s):
    from iosched.iotrace import analyze
    out = ['source: %s; VMs: %s; %d requests; layers: %s' % (
        s['source'], ', '.join(s['vms']), s['requests'],
        ' '.join(s['layers']))]
    f = s['fairness']
    if f['sd'] is not None:
        out.append('finish (s): ' + ', '.join(
            '%s %.3f' % (vm, t) for vm, t in f['finish'].items()))
        out.append('finish SD %.3f s; slowest %s / fastest %s = %.3f; '
                   "Jain's index %.4f" % (f['sd'], f['slowest'],
                                          f['fastest'], f['ratio'],
                                          f['jain']))
    for vm, w in sorted(s['queue_wait'].items()):
        out.append('queue wait %s: n=%d mean %.3f ms p99 %.3f ms max '
                   '%.3f ms' % (vm, w['n'], w['mean'] * 1e3,
                                w['p99'] * 1e3, w['max'] * 1e3))
    if s['findings']:
        out.append('%d I/O priority inversion(s):' % len(s['findings']))
        out.extend(analyze.describe(x) for x in s['findings'])
    else:
        out.append('no I/O priority inversion found')
    return '\n'.join(out)


def cmd_analyze(args):
    from iosched.iotrace import analyze
    t = _load(args.trace)
    _check_points(t, args)
    s = analyze.summary(t, window=args.window, step=args.step,
                        min_wait=args.min_wait)
    if args.json:
        print(json.dumps(s, indent=1, sort_keys=True, default=str))
    else:
        print(_text(s))
    return 0


def cmd_render(args):
    from iosched.iotrace import render
    t = _load(args.trace)
    _check_points(t, args)
    if not args.outdir.strip():
        raise BadInput('--outdir is empty; accepted: a directory (created '
                       'if missing)')
    if os.path.exists(args.outdir) and not os.path.isdir(args.outdir):
        raise BadInput('--outdir %s exists and is not a directory'
                       % args.outdir)
    _progress('render: %d layer events ...' % len(t.io))
    try:
        paths = render.render(t, args.outdir, args.window, args.step,
                              args.min_wait)
    except OSError as e:        # a name too long, a read-only parent, ...
        raise BadInput('cannot write into --outdir %s: %s' % (
            args.outdir, e.strerror or e))
    for p in paths:
        print(p)
    return 0


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return {'simulate': cmd_simulate, 'record': cmd_record,
                'analyze': cmd_analyze, 'render': cmd_render}[args.cmd](args)
    except BadInput as e:
        print(clip('%s: %s' % (PROG, e)), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:          # before a recording started
        print('%s: interrupted' % PROG, file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
