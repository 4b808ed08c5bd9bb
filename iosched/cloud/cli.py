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
"""``iosched-cloud up | down | status | env``: a one-machine OpenStack
(Keystone, Placement, Glance, Neutron's API, Nova with the libvirt driver
under TCG, Cinder on a one-node Ceph) from PyPI and Debian packages, with
iosched installed from its sdist and configured by its DevStack plugin.
Run as root; everything it writes is under --state-dir (docs/cloud.md).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from iosched.cloud import backing
from iosched.cloud import devstack
from iosched.cloud import fakes
from iosched.cloud import identity
from iosched.cloud import layout as layout_mod
from iosched.cloud import procs
from iosched.cloud import services
from iosched.cloud import teardown
from iosched.cloud import venv


# Each fake compute is two more processes (a nova-compute and an agent)
# on a machine that already runs the whole cloud.
MAX_FAKE_COMPUTES = 8


def _repo_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    if not os.path.exists(os.path.join(repo, 'devstack', 'plugin.sh')):
        raise procs.ServiceFailed(
            'iosched-cloud runs from a checkout of iosched (it installs the '
            'package from it with its DevStack plugin); %s has no '
            'devstack/plugin.sh' % repo)
    return repo


class Steps:
    """Progress lines: what is being done, and how long each step took."""

    def __init__(self, out=sys.stdout):
        self.t0 = time.monotonic()
        self.out = out

    def __call__(self, what, fn, *args, **kw):
        t = time.monotonic()
        print('==> %s ...' % what, end='', flush=True, file=self.out)
        result = fn(*args, **kw)
        print(' %.1fs' % (time.monotonic() - t), file=self.out, flush=True)
        return result

    def total(self):
        return time.monotonic() - self.t0


def _check_libvirtd():
    res = subprocess.run(['virsh', '-c', 'qemu:///system', 'list'],
                         capture_output=True, text=True)
    if res.returncode:
        raise procs.ServiceFailed(
            'libvirtd does not answer on qemu:///system (%s); `make cloud` '
            'starts it (tools/services.sh)' % res.stderr.strip())


def _ceph(layout, steps):
    from iosched.cloud import ceph
    steps('ceph packages', ceph.ensure_packages)
    cluster = steps('ceph: mon, mgr, osd, pool volumes',
                    ceph.up, layout.path('ceph'))
    steps('ceph: rados/rbd bindings into the venv',
          ceph.link_python_bindings, layout.venv_dir)
    return cluster


def up(args):
    layout = layout_mod.Layout(
        state_dir=args.state_dir, cache_dir=args.cache_dir,
        repo_dir=_repo_dir(), fake_computes=fakes.count(
            args.fake_computes,
            layout_mod.load(args.state_dir).fake_computes))
    steps = Steps()
    backing.check(layout)
    _check_libvirtd()
    layout_mod.save(layout)
    steps('venv of keystone, glance, placement, neutron, nova, cinder',
          venv.ensure, layout, log=lambda m: None)
    cluster = _ceph(layout, steps)
    steps('databases %s*, rabbit vhost %s' % (layout.db_prefix,
                                              layout.rabbit_vhost),
          lambda: (backing.create_databases(layout, layout_mod.DATABASES),
                   backing.create_vhost(layout)))
    steps('keystone: db, fernet keys, bootstrap', identity.setup, layout)
    steps('keystone: start', identity.start, layout)
    identity.write_clouds(layout)
    steps('keystone: users, services, endpoints', identity.catalog, layout)
    steps('placement', lambda: (services.setup_placement(layout),
                                services.start_placement(layout)))
    steps('glance', lambda: (services.setup_glance(layout),
                             services.start_glance(layout)))
    steps('neutron (API only, no agents)', lambda: (
        services.setup_neutron(layout), services.start_neutron(layout),
        services.warm_neutron(identity.connect(layout))))
    steps('nova: nova.conf, cells, db sync', services.setup_nova, layout,
          cluster)
    steps('cinder: cinder.conf, db sync', services.setup_cinder, layout,
          cluster)
    from iosched.cloud import capacity
    cap = steps('ceph: read capacity (rbd bench, 16 KiB)',
                capacity.ensure, layout.path('ceph'))
    rc = devstack.localrc(cap['iops'])
    steps('iosched: plugin.sh stack install, post-config',
          devstack.run_phases, layout, 'stack install', 'stack post-config',
          localrc=rc)
    steps('nova: api, conductor, scheduler, compute', _start_nova, layout)
    conn = identity.connect(layout)
    steps('nova: compute host discovered', services.discover_compute,
          layout, conn)
    steps('cinder: api, scheduler, volume', _start_cinder, layout, conn)
    steps('iosched: plugin.sh stack extra (agent, example flavors and '
          'SLO types)', devstack.run_phases, layout, 'stack extra',
          localrc=rc)
    steps('iosched: the agent\'s provider and trait in Placement',
          services.wait_iosched_provider, layout, identity.connect(layout))
    if layout.fake_computes:
        _fake_computes(layout, steps)
    steps('images: the testbed guest into Glance', _images, layout)
    print('cloud up in %.0fs; state in %s' % (steps.total(),
                                               layout.state_dir))
    _print_status(layout)
    print('\nexport OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=devstack'
          % layout.clouds_yaml)
    return 0


def _start_nova(layout):
    services.start_nova_api(layout)
    for name in ('nova-conductor', 'nova-scheduler', 'nova-compute'):
        services.start_nova_service(layout, name)


def _fake_computes(layout, steps):
    n = layout.fake_computes
    steps('nova: %d fake compute(s) %s' % (n, ', '.join(
        layout.fake_host(i) for i in layout.fake_indexes)),
        fakes.start_computes, layout, identity.connect(layout))
    steps('iosched: %d simulated agent(s) (%s), providers and traits' % (
        n, ', '.join(fakes.profile(i) for i in layout.fake_indexes)),
        fakes.start_agents, layout, identity.connect(layout))


def _start_cinder(layout, conn):
    services.start_cinder(layout)
    services.wait_cinder_volume(layout, conn)
    services.ensure_default_type(identity.connect(layout))


def _images(layout):
    from iosched.cloud import image
    found = image.ensure_images(identity.connect(layout), log=lambda m: None)
    return sorted(found['images'])


def down(args):
    layout = layout_mod.load(args.state_dir)
    steps = Steps()
    for what, fn in teardown.steps(layout, purge=args.purge,
                                   cache_dir=args.cache_dir):
        try:
            steps(what, fn)
        except Exception as exc:  # keep tearing down; say what stayed
            print(' failed: %s' % exc)
    left = teardown.leftovers(layout)
    if left:
        print('left behind: %s' % '; '.join(left))
        return 1
    print('cloud down in %.0fs; nothing left behind' % steps.total())
    return 0


def _print_status(layout, as_json=False):
    running = procs.running(layout)
    rows = []
    for name in layout.processes():
        pid = running.get(name)
        port = layout_mod.PORTS.get(name)
        rows.append({'service': name, 'pid': pid,
                     'state': 'running' if pid else 'stopped',
                     'listen': '%s:%d' % (layout.host_ip, port)
                     if port else '', 'log': layout.log(name)})
    if as_json:
        print(json.dumps(rows, indent=1))
        return rows
    line = '%-21s %-8s %-8s %-16s %s'
    print(line % ('SERVICE', 'STATE', 'PID', 'LISTEN', 'LOG'))
    for r in rows:
        print(line % (r['service'], r['state'], r['pid'] or '-',
                      r['listen'], r['log']))
    return rows


def status(args):
    layout = layout_mod.load(args.state_dir)
    if not os.path.isdir(layout.state_dir):
        print('no cloud in %s' % layout.state_dir)
        return 3
    rows = _print_status(layout, args.json)
    return 0 if all(r['pid'] for r in rows) else 3


def env(args):
    layout = layout_mod.load(args.state_dir)
    print('export OS_CLIENT_CONFIG_FILE=%s' % layout.clouds_yaml)
    print('export OS_CLOUD=devstack')
    print('export PATH=%s:$PATH' % os.path.dirname(layout.python))
    return 0


def build_parser():
    p = argparse.ArgumentParser(
        prog='iosched-cloud', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--state-dir', default=layout_mod.DEFAULT_STATE_DIR,
                   help='everything the cloud writes (default %(default)s)')
    p.add_argument('--cache-dir', default=layout_mod.DEFAULT_CACHE_DIR,
                   help='the venv of the OpenStack packages, kept across '
                        'up/down (default %(default)s)')
    sub = p.add_subparsers(dest='command', required=True)
    u = sub.add_parser('up', help='install (first time), configure and '
                                  'start the cloud; idempotent')
    u.add_argument('--fake-computes', type=_fake_count, metavar='N',
                   help='also run N nova-computes with Nova\'s fake driver, '
                        'each with a simulated agent of its own load, for '
                        'placement between hosts (docs/cloud.md); default: '
                        'as many as the cloud runs (0 for a new one); '
                        'fewer than run is refused')
    d = sub.add_parser('down', help='stop everything, delete the servers, '
                                    'volumes, databases and state')
    d.add_argument('--purge', action='store_true',
                   help='remove the venv cache too')
    s = sub.add_parser('status', help="the cloud's processes (exit 3 when "
                                      'one is not running)')
    s.add_argument('--json', action='store_true')
    sub.add_parser('env', help='shell exports to use the cloud with the '
                               'openstack CLI')
    return p


def _fake_count(text):
    """``--fake-computes``: an integer from 0 to MAX_FAKE_COMPUTES."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_FAKE_COMPUTES:
        raise argparse.ArgumentTypeError(
            '%r: accepted: an integer from 0 to %d' % (text,
                                                      MAX_FAKE_COMPUTES))
    return value


def main(argv=None):
    args = build_parser().parse_args(argv)
    if os.geteuid() != 0 and args.command in ('up', 'down'):
        sys.exit('iosched-cloud %s: run as root (libvirt, Ceph, apt)'
                 % args.command)
    try:
        layout_mod.load(args.state_dir)
    except (OSError, ValueError, TypeError) as exc:
        # (a file, a too-long name, a layout.json that is no layout)
        print('iosched-cloud %s: --state-dir %.200s: %.300s; accepted: the '
              'directory a cloud was brought up in, or a new one'
              % (args.command, args.state_dir, exc), file=sys.stderr)
        return 2
    try:
        return {'up': up, 'down': down, 'status': status,
                'env': env}[args.command](args)
    except procs.ServiceFailed as exc:
        print('\niosched-cloud %s failed: %s' % (args.command, exc),
              file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
