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
"""The testbed: build, start, list and remove the guests of one host.

    with Testbed() as tb:                     # __exit__ runs down()
        lsvm, cpu1 = tb.up([parse_guest('lsvm:rr'),
                            parse_guest('cpu1:burn')], pin=1)
        rtts = lsvm.rr(200, rate_per_s=50, burst_us=500)

Guests are libvirt domains named ``<prefix><name>`` (default prefix
``iosched-tb-``). Per guest, under the work dir: ``disks/<domain>.raw``,
``run/<domain>.sock`` (the virtio-serial channel) and the metadata sidecar
``instances/<uuid>.json`` = {"flavor", "extra_specs", "volumes", ...}: a
testbed stand-in for what the agent gets from Nova's API in production
(issue 5). The console log is ``/var/log/libvirt/qemu/<domain>-console.log``.
"""

import concurrent.futures
import json
import os
import time
import uuid as uuid_mod

from iosched.testbed import build as build_mod
from iosched.testbed import domxml
from iosched.testbed import guest as guest_mod

DEFAULT_WORKDIR = '/var/lib/libvirt/images/iosched-testbed'
PREFIX = 'iosched-tb-'
URI = 'qemu:///system'
LOG_DIR = '/var/log/libvirt/qemu'
STAND_IN = ('testbed stand-in: in production the agent reads flavor extra '
            'specs and volume QoS from the Nova/Cinder APIs (issue 5)')


class TestbedError(Exception):
    pass


class Testbed:
    """One host's testbed guests. ``log`` is a print-like callable."""

    def __init__(self, workdir=DEFAULT_WORKDIR, prefix=PREFIX, uri=URI,
                 log=None):
        self.workdir, self.prefix, self.uri = workdir, prefix, uri
        self.log = log or (lambda *a: None)
        self._conn = None
        self._guests = {}            # domain name -> Guest

    # -- plumbing -----------------------------------------------------------
    @property
    def conn(self):
        if self._conn is None:
            import libvirt
            self._conn = libvirt.open(self.uri)
        return self._conn

    def _path(self, sub, name=''):
        d = os.path.join(self.workdir, sub)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name) if name else d

    def _files(self, dom_name, uuid=None):
        files = [self._path('disks', dom_name + '.raw'),
                 self._path('run', dom_name + '.sock'),
                 os.path.join(LOG_DIR, dom_name + '-console.log'),
                 os.path.join(LOG_DIR, dom_name + '.log')]
        if uuid:
            files.append(self._path('instances', uuid + '.json'))
        return files

    def _domains(self):
        return sorted((d for d in self.conn.listAllDomains()
                       if d.name().startswith(self.prefix)),
                      key=lambda d: d.name())

    def sidecar(self, uuid):
        """The metadata sidecar of instance ``uuid`` (dict) or None."""
        try:
            with open(self._path('instances', uuid + '.json')) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def close(self):
        for g in self._guests.values():
            g.close()
        self._guests.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.down()
        finally:
            self.close()

    # -- commands -----------------------------------------------------------
    def build(self, force=False):
        """Build or reuse kernel + initramfs; returns the build manifest."""
        return build_mod.build(self.workdir, force=force, log=self.log)

    def up(self, specs, pin=None, timeout=180.0):
        """Define and start one guest per spec, wait for every guest's HELLO
        on its channel and return the ``Guest`` objects (``boot_s`` set).
        ``pin``: host CPU for all vCPUs and emulator threads.
        """
        specs = list(specs)
        manifest = self.build()
        existing = {d.name() for d in self.conn.listAllDomains()}
        clash = [s.name for s in specs if self.prefix + s.name in existing]
        if clash:
            raise TestbedError('guests already exist: %s (run down first)'
                               % ', '.join(clash))
        taps = _free_taps(len(specs))
        guests, doms = [], []
        for spec, tap in zip(specs, taps):
            g, dom = self._define(spec, tap, pin)
            guests.append(g)
            doms.append(dom)
        t0 = time.monotonic()

        def start(pair):
            g, dom = pair
            t = time.monotonic()
            dom.create()
            g.wait_hello(timeout=max(1.0, timeout - (t - t0)))
            g.boot_s = time.monotonic() - t
            return g

        with concurrent.futures.ThreadPoolExecutor(len(guests) or 1) as ex:
            futures = [ex.submit(start, p) for p in zip(guests, doms)]
            errors = []
            for g, f in zip(guests, futures):
                try:
                    f.result()
                    self.log('up: %s booted to HELLO in %.1f s (guest uptime '
                             '%s ms)' % (g.domain_name, g.boot_s,
                                         g.hello.get('uptime_ms')))
                except Exception as e:     # report all, raise once
                    errors.append('%s: %s\n%s' % (g.domain_name, e,
                                                  _tail(g.console_log)))
        if errors:
            raise TestbedError('guests failed to boot:\n' + '\n'.join(errors))
        self.log('up: %d guests in %.1f s (kernel %s)' % (
            len(guests), time.monotonic() - t0, manifest['kernel_version']))
        return guests

    def _define(self, spec, tap, pin):
        name = self.prefix + spec.name
        uuid = str(uuid_mod.uuid4())
        volume_id = spec.volume_id or str(uuid_mod.uuid4())
        port_id = str(uuid_mod.uuid4())
        disk, sock, console, _ = self._files(name)
        for stale in (sock, console):
            if os.path.exists(stale):
                os.unlink(stale)
        if not spec.disk_dev:       # else a region of a shared device
            with open(disk, 'wb') as fh:
                fh.truncate(spec.disk_mib * 2**20)
        side = {'uuid': uuid, 'name': spec.name, 'domain': name,
                'mode': spec.mode, 'flavor': spec.flavor_name,
                'extra_specs': spec.flavor_extra_specs,
                'volumes': [{'target': 'vda', 'serial': volume_id,
                             'qos': dict(spec.volume_qos)}],
                'socket': sock, 'console_log': console, 'tap': tap,
                'note': STAND_IN}
        path = self._path('instances', uuid + '.json')
        with open(path + '.tmp', 'w') as fh:
            json.dump(side, fh, indent=1, sort_keys=True)
        os.replace(path + '.tmp', path)
        xml = domxml.domain_xml(
            spec, domain_name=name, uuid=uuid, volume_id=volume_id,
            port_id=port_id, kernel=os.path.join(self.workdir, 'vmlinuz'),
            initrd=os.path.join(self.workdir, 'initrd.gz'), disk=disk,
            socket_path=sock, console_log=console, tap=tap, pin=pin)
        dom = self.conn.defineXML(xml)
        g = guest_mod.Guest(spec.name, name, uuid, spec.mode, sock, console,
                            domain=dom)
        self._guests[name] = g
        return g, dom

    def guests(self):
        """``Guest`` objects for the running testbed domains (also those
        started by another process, e.g. the CLI).
        """
        out = []
        for dom in self._domains():
            if not dom.isActive():
                continue
            name = dom.name()
            g = self._guests.get(name)
            if g is None:
                side = self.sidecar(dom.UUIDString()) or {}
                g = guest_mod.Guest(
                    side.get('name', name[len(self.prefix):]), name,
                    dom.UUIDString(), side.get('mode', 'idle'),
                    self._files(name)[1], self._files(name)[2], domain=dom)
                self._guests[name] = g
            out.append(g)
        return out

    def status(self):
        """One dict per testbed domain: name, uuid, state, pid, mode,
        flavor, vcpu_pins (host CPUs per vCPU), emulator_pin.
        """
        import libvirt
        rows = []
        for dom in self._domains():
            side = self.sidecar(dom.UUIDString()) or {}
            row = {'name': dom.name(), 'uuid': dom.UUIDString(),
                   'state': _STATES.get(dom.state()[0], 'unknown'),
                   'mode': side.get('mode'), 'flavor': side.get('flavor'),
                   'pid': None, 'vcpu_pins': None, 'emulator_pin': None}
            if dom.isActive():
                row['pid'] = _read_pid('/run/libvirt/qemu/%s.pid' % dom.name())
                try:
                    row['vcpu_pins'] = [[i for i, on in enumerate(m) if on]
                                        for m in dom.vcpuPinInfo(0)]
                    row['emulator_pin'] = [i for i, on in enumerate(
                        dom.emulatorPinInfo(0)) if on]
                except libvirt.libvirtError:
                    pass
            rows.append(row)
        return rows

    def _remove(self, dom):
        """Destroy and undefine one domain and remove its files (~2 s)."""
        import libvirt
        g = self._guests.pop(dom.name(), None)
        if g is not None:
            g.close()
        try:
            if dom.isActive():
                _fair_class(_read_pid('/run/libvirt/qemu/%s.pid'
                                      % dom.name()))
                dom.destroy()
        except libvirt.libvirtError:
            pass
        try:
            dom.undefine()
        except libvirt.libvirtError:
            pass
        for path in self._files(dom.name(), dom.UUIDString()):
            _unlink(path)
        return dom.name()

    def remove(self, names):
        """Remove the named guests only (short names); the others stay
        up. Returns the domain names removed.
        """
        want = {self.prefix + n for n in names}
        return [self._remove(d) for d in self._domains() if d.name() in want]

    def reconnect(self):
        """Drop the libvirt connection (libvirtd was restarted): the next
        use opens a new one.
        """
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def down(self):
        """Destroy and undefine the testbed's domains and remove their
        sockets, disks, sidecars and console logs. Idempotent; returns the
        domain names removed.
        """
        for g in self._guests.values():
            g.close()
        self._guests.clear()
        remove = self._remove

        doms = self._domains()
        with concurrent.futures.ThreadPoolExecutor(len(doms) or 1) as ex:
            removed = list(ex.map(remove, doms))
        for d in (self._path('disks'), self._path('run'), LOG_DIR):
            for f in os.listdir(d) if os.path.isdir(d) else ():
                if f.startswith(self.prefix):    # leftovers of a failed up
                    _unlink(os.path.join(d, f))
        for f in os.listdir(self._path('instances')):
            side = self.sidecar(f[:-5]) if f.endswith('.json') else None
            if side and side.get('domain', '').startswith(self.prefix):
                _unlink(self._path('instances', f))
        if removed:
            self.log('down: removed %s' % ', '.join(removed))
        return removed


def _fair_class(pid):
    """Every thread of QEMU ``pid`` back to SCHED_OTHER before its domain
    is destroyed. Seen on this kernel: a QEMU whose main thread was a
    throttled SCHED_DEADLINE task (left by a test that kills the agent)
    never finished exiting (its replenishment never came: runtime < 0, its
    deadline 1,400 s past), held libvirt's state-change lock on the domain
    and failed every later test that read domain stats.
    """
    try:
        tids = [int(t) for t in os.listdir('/proc/%d/task' % int(pid))]
    except (OSError, TypeError, ValueError):
        return
    for tid in tids:
        try:
            if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                os.sched_setscheduler(tid, os.SCHED_OTHER,
                                      os.sched_param(0))
        except OSError:
            pass                # gone, or not ours to change


_STATES = {0: 'nostate', 1: 'running', 2: 'blocked', 3: 'paused',
           4: 'shutdown', 5: 'shutoff', 6: 'crashed', 7: 'pmsuspended'}


def _free_taps(n):
    used = set(os.listdir('/sys/class/net'))
    taps, i = [], 0
    while len(taps) < n:
        if 'iotb%d' % i not in used:
            taps.append('iotb%d' % i)
        i += 1
    return taps


def _read_pid(path):
    try:
        with open(path) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _tail(path, n=15):
    try:
        with open(path, errors='replace') as fh:
            return ''.join(fh.readlines()[-n:])
    except OSError as e:
        return '(no console log: %s)' % e
