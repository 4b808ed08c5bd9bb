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
"""``python -m iosched.testbed {build,up,down,status}``."""

import argparse
import json
import os
import sys

from iosched.host_agent.cmd import clip
from iosched.testbed import daemons
from iosched.testbed import spec as spec_mod
from iosched.testbed import testbed

EPILOG = '''examples:
  python -m iosched.testbed build
  python -m iosched.testbed up --pin 1 \\
      --guest lsvm:rr --guest cpu1:burn --guest cpu2:burn --guest cpu3:burn
  python -m iosched.testbed up --guest db:disk:pattern=seq,write_pct=30
  python -m iosched.testbed up --spec guests.yaml
  python -m iosched.testbed status --json
  python -m iosched.testbed down

guest modes: rr (request/response server), burn (CPU burner), hybrid (rr
and burn on one vCPU), disk (O_DIRECT 4 KiB I/O on /dev/vda), idle. Guest
options (name:mode:k=v,...): report_ms, pattern=rand|seq, write_pct, bs,
duty_pct and period_ms (burn, hybrid: burn at most duty_pct % of every
period_ms), burn_nice (hybrid). A spec file (YAML or JSON) is a
list, or {"guests": [...]}, of {name, mode, flavor, extra_specs, memory_mib,
disk_mib, opts, volume_qos}. Guests run under TCG (type='qemu'), 1 vCPU.
'''


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m iosched.testbed',
        description='Real libvirt/QEMU test guests for the iosched host '
                    'agent: tiny TCG guests (Debian kernel + busybox '
                    'initramfs + iosched-guest) talking to the host over '
                    'virtio-serial.',
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--workdir', default=testbed.DEFAULT_WORKDIR,
                   help='build cache, disks, sockets and metadata sidecars '
                        '(default: %(default)s; keep it under '
                        '/var/lib/libvirt/images for DAC labelling)')
    p.add_argument('--prefix', default=testbed.PREFIX,
                   help='domain name prefix that marks testbed guests '
                        '(default: %(default)s)')
    p.add_argument('-q', '--quiet', action='store_true',
                   help='print only errors and requested output')
    sub = p.add_subparsers(dest='command', required=True, metavar='COMMAND')
    b = sub.add_parser('build', help='download the kernel, compile the '
                       'guest program, pack the initramfs (cached)')
    b.add_argument('--force', action='store_true',
                   help='rebuild even when the cache is current')
    u = sub.add_parser('up', help='define and start guests, wait until '
                       'their program says HELLO')
    u.add_argument('--guest', action='append', default=[],
                   metavar='NAME:MODE[:K=V,...]',
                   help='a guest (repeatable), e.g. lsvm:rr or cpu1:burn')
    u.add_argument('--spec', metavar='FILE',
                   help='guests from a YAML/JSON file (added to --guest)')
    u.add_argument('--pin', type=int, metavar='CPU',
                   help='pin every vCPU and emulator thread to this host CPU')
    u.add_argument('--timeout', type=float, default=180.0,
                   help='seconds to wait for all guests (default: '
                        '%(default)s)')
    u.add_argument('--fix-kvm-perms', action='store_true',
                   help='set /dev/kvm to root:kvm 0660 (Debian udev '
                        'default) so libvirt stops re-probing QEMU (~4 s) '
                        'on every start; guests still use TCG')
    sub.add_parser('down', help='destroy and undefine the testbed guests, '
                   'remove their disks, sockets and sidecars (idempotent)')
    s = sub.add_parser('status', help='list testbed guests: state, pid, '
                       'pinning')
    s.add_argument('--json', action='store_true', help='print JSON')
    return p


def _specs(args):
    cpus = os.cpu_count() or 1
    if args.pin is not None and not 0 <= args.pin < cpus:
        raise spec_mod.SpecError('--pin %d: accepted: a host CPU, 0..%d'
                                 % (args.pin, cpus - 1))
    if not 0 < args.timeout < float('inf'):
        raise spec_mod.SpecError('--timeout %s: accepted: seconds > 0'
                                 % args.timeout)
    specs = [spec_mod.parse_guest(g) for g in args.guest]
    if args.spec:
        specs += _load_spec(args.spec)
    if not specs:
        raise spec_mod.SpecError('no guests: give --guest NAME:MODE or '
                                 '--spec FILE')
    return spec_mod.check_unique(specs)


def _load_spec(path):
    """spec.load_file, with every way a file can be bad as a SpecError
    naming --spec and the file.
    """
    import yaml
    try:
        return spec_mod.load_file(path)
    except spec_mod.SpecError as e:
        raise spec_mod.SpecError('--spec %s' % e if str(e).startswith(path)
                                 else '--spec %s: %s' % (path, e))
    except OSError as e:
        raise spec_mod.SpecError('--spec %s: cannot read it: %s' % (
            path, e.strerror or e))
    except (ValueError, yaml.YAMLError, RecursionError) as e:
        # JSON, UTF-8 and YAML errors
        raise spec_mod.SpecError('--spec %s: not YAML or JSON: %s' % (
            path, str(e).splitlines()[0] if str(e) else type(e).__name__))
    except (TypeError, AttributeError) as e:
        # a guest that is not a mapping, a field of the wrong type
        raise spec_mod.SpecError(
            '--spec %s: each guest must be a mapping of name, mode, flavor, '
            'extra_specs, memory_mib, disk_mib, opts, volume_qos (%s)'
            % (path, e))


def _status(tb, as_json):
    rows = tb.status()
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    if not rows:
        print('no testbed guests (prefix %s)' % tb.prefix)
        return
    fmt = '%-22s %-9s %-5s %-11s %-8s %-9s %-9s %s'
    print(fmt % ('NAME', 'STATE', 'MODE', 'FLAVOR', 'PID', 'VCPU-PIN',
                 'EMU-PIN', 'UUID'))
    for r in rows:
        pins = ';'.join(','.join(map(str, c)) for c in r['vcpu_pins'] or [])
        emu = ','.join(map(str, r['emulator_pin'] or [])) or '-'
        print(fmt % (r['name'], r['state'], r['mode'] or '-',
                     r['flavor'] or '-', r['pid'] or '-', pins or '-', emu,
                     r['uuid']))


def main(argv=None):
    args = _parser().parse_args(argv)
    log = (lambda *a: None) if args.quiet else print
    try:
        if args.command == 'build':
            testbed.Testbed(args.workdir, args.prefix, log=log).build(
                force=args.force)
            return 0
        specs = _specs(args) if args.command == 'up' else None
        if daemons.ensure_libvirtd():
            log('started virtlogd/libvirtd (left running)')
        tb = testbed.Testbed(args.workdir, args.prefix, log=log)
        try:
            if args.command == 'up':
                if args.fix_kvm_perms and daemons.kvm_caps_thrash():
                    daemons.set_kvm_perms()
                    log('set /dev/kvm to root:kvm 0660')
                elif daemons.kvm_caps_thrash():
                    log('note: libvirt re-probes QEMU on every start (~4 s) '
                        'because libvirt-qemu cannot open /dev/kvm; see '
                        '--fix-kvm-perms')
                guests = tb.up(specs, pin=args.pin, timeout=args.timeout)
                for g in guests:
                    log('%s uuid=%s mode=%s boot=%.1fs socket=%s' % (
                        g.domain_name, g.uuid, g.mode, g.boot_s,
                        g.socket_path))
            elif args.command == 'down':
                if not tb.down():
                    log('nothing to remove')
            else:
                _status(tb, args.json)
        finally:
            tb.close()
        return 0
    except (spec_mod.SpecError, testbed.TestbedError, RuntimeError,
            OSError) as e:
        print(clip('error: %s' % e), file=sys.stderr)
        return 1
