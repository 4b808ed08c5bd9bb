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
"""Shared parts of the benchmarks on the one-machine cloud that
``iosched-cloud up`` runs (``bench/cloud_*.py``).

* ``OpenStack``: the ``openstack`` CLI of the cloud's venv as the tenant
  (``devstack``) or admin (``devstack-admin``), JSON out: flavors, servers
  booted with ``--nic none``, waiting ACTIVE / gone.
* ``nova_guest``: the testbed client (``iosched.testbed.guest.Guest``) of
  a Nova-created guest: its libvirt domain by the instance uuid, its
  workload program on the second TCP serial port (ttyS1).
* ``pin_all``: vCPUs, emulator and I/O threads (Nova's domains have an
  ``<iothreads>`` that the testbed's do not) live on some pCPUs.
* ``CloudAgent``: the cloud's ``iosched-agent`` process, stopped (its
  SIGTERM restores every knob) and started through
  ``python -m iosched.cloud.procs``; its log read from an offset (the
  mechanism ``auto`` picked, the self-test table, the knobs it set and
  restored), the CPU time of its process group and its tick count (its
  Prometheus endpoint).
* ``domain_facts``: what a domain's XML, threads and cgroups hold, to
  compare Nova's domains with the testbed's.
"""

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import testbed_common as common  # noqa: E402
from iosched.host_agent.drivers.libvirt import threads  # noqa: E402
from iosched.testbed import guest as guest_mod  # noqa: E402

STATE_DIR = '/var/lib/iosched-cloud'
CLI = '/var/cache/iosched-cloud/venv/bin/openstack'
AGENT = 'iosched-agent'
TENANT, ADMIN = 'devstack', 'devstack-admin'
CPU_CGROUP = '/sys/fs/cgroup/cpu'
VIR_DOMAIN_AFFECT_LIVE = 1
VIR_DOMAIN_XML_INACTIVE = 2
SCHED_DEADLINE = 6
POLICIES = {os.SCHED_OTHER: 'other', os.SCHED_FIFO: 'fifo',
            os.SCHED_RR: 'rr', os.SCHED_BATCH: 'batch',
            os.SCHED_IDLE: 'idle', SCHED_DEADLINE: 'deadline'}

progress = common.progress


class CloudError(RuntimeError):
    pass


def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


# -- the openstack CLI --------------------------------------------------------
class OpenStack:
    """The ``openstack`` CLI against the cloud's ``clouds.yaml``."""

    def __init__(self, state_dir=STATE_DIR, cli=CLI):
        self.cli = cli
        self.env = dict(os.environ, OS_CLIENT_CONFIG_FILE=os.path.join(
            state_dir, 'clouds.yaml'))
        self.env.pop('OS_CLOUD', None)

    def run(self, *args, admin=False, parse=True, check=True):
        argv = [self.cli, '--os-cloud', ADMIN if admin else TENANT]
        argv += list(args) + (['-f', 'json'] if parse else [])
        res = subprocess.run(argv, capture_output=True, text=True,
                             env=self.env)
        if check and res.returncode:
            raise CloudError('%s: exit %d: %s' % (
                ' '.join(args[:3]), res.returncode,
                (res.stderr or res.stdout).strip()[-800:]))
        if not parse:
            return res.stdout
        return json.loads(res.stdout) if res.stdout.strip() else None

    def ensure_flavor(self, name, vcpus, ram_mib, disk_gib):
        """A public flavor with no extra specs (admin), made if missing."""
        found = [f for f in self.run('flavor', 'list', '--all', admin=True)
                 if f['Name'] == name]
        if found:
            return False
        self.run('flavor', 'create', '--vcpus', str(vcpus), '--ram',
                 str(ram_mib), '--disk', str(disk_gib), '--public', name,
                 admin=True)
        return True

    def flavor_specs(self, name):
        return self.run('flavor', 'show', name).get('properties') or {}

    def servers(self, prefix):
        """{name: id} of the tenant's servers named ``<prefix>*``."""
        return {s['Name']: s['ID'] for s in self.run(
            'server', 'list', '--name', '^%s' % re.escape(prefix))
            if s['Name'].startswith(prefix)}

    def boot(self, name, flavor, image):
        """Create a server without NICs; its id (not waiting)."""
        return self.run('server', 'create', '--flavor', flavor, '--image',
                        image, '--nic', 'none', name)['id']

    def wait_active(self, ids, timeout=300.0):
        """Block until every server is ACTIVE; CloudError on ERROR."""
        deadline = time.monotonic() + timeout
        pending = set(ids)
        while pending:
            for sid in sorted(pending):
                s = self.run('server', 'show', sid)
                if s['status'] == 'ACTIVE':
                    pending.discard(sid)
                elif s['status'] == 'ERROR':
                    raise CloudError('server %s (%s) ERROR: %s' % (
                        s['name'], sid, s.get('fault')))
            if pending and time.monotonic() > deadline:
                raise CloudError('servers %s not ACTIVE after %.0f s'
                                 % (sorted(pending), timeout))
            if pending:
                time.sleep(2)

    def delete(self, ids, timeout=180.0):
        """Delete servers and wait until they are gone."""
        if not ids:
            return
        self.run('server', 'delete', *ids, parse=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = {s['ID'] for s in self.run('server', 'list')} & set(ids)
            if not left:
                return
            time.sleep(2)
        raise CloudError('servers %s not deleted after %.0f s'
                         % (sorted(left), timeout))


# -- guests -------------------------------------------------------------------
def console_log(xml_text):
    """The log file of the domain's first serial port (Nova's console)."""
    for el in ET.fromstring(xml_text).iterfind('devices/serial/log'):
        return el.get('file')
    return None


def nova_guest(conn, server_id, name, mode):
    """The ``Guest`` client of a Nova server's workload program: the
    domain whose uuid is the instance uuid, ttyS1's TCP port.
    """
    dom = conn.lookupByUUIDString(server_id)
    xml = dom.XMLDesc(0)
    ports = guest_mod.serial_tcp_ports(xml)
    if len(ports) < 2:
        raise CloudError('%s (%s): %d TCP serial port(s), want 2 (is '
                         '[serial_console] enabled in nova.conf and '
                         'hw_serial_port_count=2 on the image?)'
                         % (name, dom.name(), len(ports)))
    return guest_mod.Guest(name, dom.name(), server_id, mode, ports[1],
                           console_log(xml), domain=dom)


def pin_all(guest, cpus, iothreads=False):
    """Pin a guest's vCPUs and emulator threads (live) to ``cpus``, as
    ``testbed_common.pin_guest``; with ``iothreads`` also the threads of
    Nova's ``<iothreads>`` (libvirt keeps them out of ``emulatorpin``).
    """
    common.pin_guest(guest, cpus)
    if not iothreads:
        return
    dom = guest.domain
    ncpu = len(dom.emulatorPinInfo(0))
    cpumap = tuple(i in cpus for i in range(ncpu))
    for iothread_id, _ in dom.ioThreadInfo(0):
        dom.pinIOThread(iothread_id, cpumap, VIR_DOMAIN_AFFECT_LIVE)


# -- the cloud's host agent ---------------------------------------------------
SET_RE = re.compile(r' set (\w+) ([0-9a-f-]{36})/(\S*): (.*?) -> (.*?) '
                    r'\(([\w.]+): ')
RESTORE_ERR_RE = re.compile(r' cannot restore (\w+) ([0-9a-f-]{36})/')
RESTORED_RE = re.compile(r' restored (\w+) ([0-9a-f-]{36})/(\S*) = ')
MECH_RE = re.compile(r'LSVM mechanism: (\S+) \(wanted (\S+)\)'
                     r'(?:, measured p99 wake-up (\S+) us)?')
SELFTEST_RE = re.compile(r'wake-up self-test \(([\d.]+) s\)')
METRICS_RE = re.compile(r'Prometheus metrics on (http://\S+/metrics)')
ROW_RE = re.compile(r'^(\w+)\s+(yes|no)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s*'
                    r'(.*)$')


def _value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_agent_log(text):
    """What one stretch of the agent's log says: the self-test (seconds,
    rows as ``testbed_lsvm`` records them), the mechanism it picked and
    the one it wanted, its metrics URL, the knobs it set (``decisions``,
    the latest per (kind, uuid, target), shaped like the actuator's for
    ``testbed_lsvm_report.share_limit``) and restored.
    """
    out = {'selftest': None, 'mechanism': None, 'wanted': None,
           'wakeup_p99_us': None, 'metrics_url': None, 'decisions': {},
           'sets': [], 'restored': [], 'restore_errors': []}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = SELFTEST_RE.search(line)
        if m:
            rows = []
            for row in lines[i + 2:]:
                r = ROW_RE.match(row)
                if not r:
                    break
                rows.append({'mechanism': r.group(1),
                             'ok': r.group(2) == 'yes',
                             'p50_us': float(r.group(3)),
                             'p99_us': float(r.group(4)),
                             'error': r.group(6).strip()})
            out['selftest'] = {'seconds': float(m.group(1)), 'rows': rows}
            continue
        m = MECH_RE.search(line)
        if m:
            out['mechanism'], out['wanted'] = m.group(1), m.group(2)
            out['wakeup_p99_us'] = _value(m.group(3)) if m.group(3) else None
            continue
        m = METRICS_RE.search(line)
        if m:
            out['metrics_url'] = m.group(1)
            continue
        m = SET_RE.search(line)
        if m:
            kind, uuid, target, before, after, rule = m.groups()
            d = types.SimpleNamespace(kind=kind, instance_uuid=uuid,
                                      target=target, before=_value(before),
                                      after=_value(after), rule=rule)
            out['decisions'][(kind, uuid, target)] = d
            out['sets'].append(d)
            continue
        m = RESTORED_RE.search(line)
        if m:
            out['restored'].append(m.groups())
            continue
        m = RESTORE_ERR_RE.search(line)
        if m:
            out['restore_errors'].append(line.split('] ', 1)[-1][:300])
    return out


def _alive(pid):
    """Running (not gone, not a zombie)."""
    st = _read('/proc/%d/stat' % pid)
    return st is not None and st.rsplit(')', 1)[1].split()[0] != 'Z'


def leftover_policies(guest, reset=False):
    """Threads of a guest's QEMU not under SCHED_OTHER (what a stopped
    agent should have restored): [(tid, comm, policy)]; ``reset`` puts
    them back to SCHED_OTHER.
    """
    pid = threads.qemu_pid(common.RUN_DIR, guest.domain_name)
    out = []
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            pol = os.sched_getscheduler(int(t)) & ~os.SCHED_RESET_ON_FORK
        except OSError:
            continue
        if pol != os.SCHED_OTHER:
            out.append((int(t), _read('/proc/%d/task/%s/comm' % (pid, t)),
                        pol))
            if reset:
                os.sched_setscheduler(int(t), os.SCHED_OTHER,
                                      os.sched_param(0))
    return out


class CloudAgent:
    """The cloud's ``iosched-agent`` process (``iosched.cloud.procs``)."""

    def __init__(self, state_dir=STATE_DIR, python=sys.executable):
        self.state_dir, self.python = state_dir, python
        self.pidfile = os.path.join(state_dir, 'run', AGENT + '.pid')
        self.logfile = os.path.join(state_dir, 'logs', AGENT + '.log')
        self.metrics_url = 'http://127.0.0.1:9487/metrics'

    def pid(self):
        try:
            with open(self.pidfile) as fh:
                pid = int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if os.path.exists('/proc/%d' % pid) else None

    def running(self):
        return self.pid() is not None

    def _procs(self, action):
        res = subprocess.run([self.python, '-m', 'iosched.cloud.procs',
                              self.state_dir, action, AGENT],
                             capture_output=True, text=True)
        if res.returncode:
            raise CloudError('procs %s %s: %s' % (action, AGENT,
                                                  res.stderr.strip()))

    def stop(self, timeout=60.0):
        """SIGTERM to the agent alone (it restores every knob), wait for
        it to exit, then ``procs stop`` (pidfile, anything left in its
        process group). Seconds taken.

        Not ``procs stop`` alone: it signals the whole process group, and
        the agent's privsep daemon is in it; dying at the same time, it
        fails the agent's first restores (seen: ``cannot restore
        io_thread_deadline ... FailedToDropPrivileges``, the thread left
        SCHED_DEADLINE and libvirt's pinning then EBUSY).
        """
        t0 = time.monotonic()
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            while (_alive(pid) and time.monotonic() - t0 < timeout):
                time.sleep(0.1)
        self._procs('stop')
        return round(time.monotonic() - t0, 2)

    def start(self):
        """Start it again with its recorded command."""
        self._procs('restart')

    def log_offset(self):
        try:
            return os.path.getsize(self.logfile)
        except OSError:
            return 0

    def log_since(self, offset, end=None):
        """The log's text from byte ``offset`` (to byte ``end``)."""
        with open(self.logfile, 'rb') as fh:
            fh.seek(offset)
            data = fh.read(-1 if end is None else max(0, end - offset))
        return data.decode(errors='replace')

    def wait_plan(self, offset, uuid, timeout=90.0, settle=2.5):
        """After ``start``: wait until the agent has picked its mechanism
        and set a knob of instance ``uuid``, then ``settle`` s (two
        ticks, as the testbed waits). Returns ``parse_agent_log`` of the
        log since ``offset`` plus ``ready_s``.
        """
        t0 = time.monotonic()
        while True:
            info = parse_agent_log(self.log_since(offset))
            if info['mechanism'] and any(d.instance_uuid == uuid
                                         for d in info['sets']):
                break
            if not self.running():
                raise CloudError('%s exited; see %s' % (AGENT, self.logfile))
            if time.monotonic() - t0 > timeout:
                progress('agent: no knob of %s set after %.0f s (mechanism '
                         '%s); measuring anyway' % (uuid, timeout,
                                                    info['mechanism']))
                break
            time.sleep(0.25)
        time.sleep(settle)
        info['ready_s'] = round(time.monotonic() - t0, 2)
        if info['metrics_url']:
            self.metrics_url = info['metrics_url']
        return info

    def cpu_s(self):
        """User + system CPU seconds of the agent's process group (the
        agent and its privsep daemon), or None when it does not run.
        """
        pid = self.pid()
        if pid is None:
            return None
        tck = os.sysconf('SC_CLK_TCK')
        total = 0
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                with open('/proc/%s/stat' % entry) as fh:
                    f = fh.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(f[2]) == pid:          # pgrp (started in its session)
                total += int(f[11]) + int(f[12])
        return total / tck

    def ticks(self):
        """The agent's tick count from its metrics endpoint, or None."""
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=3) as r:
                text = r.read().decode()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith('iosched_agent_tick_duration_seconds_count'):
                return int(float(line.split()[-1]))
        return None


# -- the host around the guests ----------------------------------------------
def _proc_ticks():
    """{pid: (comm, process group, user + system clock ticks)}."""
    out = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        st = _read('/proc/%s/stat' % entry)
        if not st:
            continue
        f = st.rsplit(')', 1)[1].split()
        out[int(entry)] = (st[st.find('(') + 1:st.rfind(')')], int(f[2]),
                           int(f[11]) + int(f[12]))
    return out


def _cpu_jiffies():
    """{cpu index: (busy, total)} from /proc/stat."""
    out = {}
    for line in (_read('/proc/stat') or '').splitlines():
        name, *vals = line.split()
        if not name.startswith('cpu') or name == 'cpu':
            continue
        v = [int(x) for x in vals[:8]]       # user .. steal
        out[int(name[3:])] = (sum(v) - v[3] - v[4], sum(v))
    return out


class HostProbe:
    """Per phase: each pCPU's busy fraction and the CPU share (CPU s per
    wall s) of every host process but QEMU (the guests are measured on
    their own), by name: the cloud's agent (its process group),
    ``labels`` ({pid: name}: the busy loops, the bench itself), kernel
    threads by their prefix (``kworker``), others by ``comm``. ``top``
    keeps the largest; ``total`` sums them all.
    """

    def __init__(self, agent, labels=None, top=8):
        self.agent, self.labels, self.top = agent, labels or {}, top

    def sample(self):
        return time.monotonic(), _cpu_jiffies(), _proc_ticks(), \
            self.agent.pid()

    def diff(self, a, b):
        wall = b[0] - a[0]
        tck = os.sysconf('SC_CLK_TCK')
        by = {}
        for pid, (comm, pgrp, ticks) in b[2].items():
            if pid not in a[2] or comm.startswith('qemu'):
                continue
            if pid in self.labels:
                name = self.labels[pid]
            elif b[3] is not None and pgrp == b[3]:
                name = AGENT
            else:
                name = comm.split('/')[0]
            by[name] = by.get(name, 0) + ticks - a[2][pid][2]
        shares = {n: t / tck / wall for n, t in by.items()}
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:self.top]
        return {'pcpu_busy': {
            c: round((b[1][c][0] - a[1][c][0]) /
                     max(1, b[1][c][1] - a[1][c][1]), 3) for c in b[1]},
            'procs': {n: round(v, 4) for n, v in top},
            'procs_total': round(sum(shares.values()), 4)}


# -- what a domain holds ------------------------------------------------------
def domain_facts(dom):
    """A domain's XML facts (iothreads, cputune live and as defined, the
    resource partition, the disk's iothread, serial ports) and live ones:
    per QEMU thread its name, cpu cgroup, affinity and policy; the
    cpu.shares and CFS quota of the domain's cgroups (cgroup v1 ``cpu``
    hierarchy).
    """
    root = ET.fromstring(dom.XMLDesc(0))
    tune = root.find('cputune')
    defined = ET.fromstring(dom.XMLDesc(VIR_DOMAIN_XML_INACTIVE))
    tune_def = defined.find('cputune')
    disk_driver = root.find('devices/disk/driver')
    out = {
        'name': dom.name(),
        'iothreads': root.findtext('iothreads'),
        'cputune_live': None if tune is None else [
            ET.tostring(c, encoding='unicode').strip() for c in tune],
        'cputune_defined': None if tune_def is None else [
            ET.tostring(c, encoding='unicode').strip() for c in tune_def],
        'partition': root.findtext('resource/partition'),
        'disk_iothread': None if disk_driver is None
        else disk_driver.get('iothread'),
        'disk_driver': None if disk_driver is None
        else dict(disk_driver.attrib),
        'serial': [s.get('type') for s in root.iterfind('devices/serial')],
        'channels': [c.get('type') for c in
                     root.iterfind('devices/channel')],
        'memballoon': (root.find('devices/memballoon').get('model')
                       if root.find('devices/memballoon') is not None
                       else None),
    }
    pid = threads.qemu_pid(common.RUN_DIR, dom.name())
    ths, groups = [], set()
    for t in sorted(os.listdir('/proc/%d/task' % pid), key=int):
        base = '/proc/%d/task/%s' % (pid, t)
        cg = None
        for line in (_read(base + '/cgroup') or '').splitlines():
            parts = line.split(':', 2)
            if len(parts) == 3 and 'cpu' in parts[1].split(','):
                cg = parts[2]
        try:
            policy = os.sched_getscheduler(int(t))
            aff = sorted(os.sched_getaffinity(int(t)))
        except OSError:
            policy, aff = None, None
        ths.append({'tid': int(t), 'comm': _read(base + '/comm'),
                    'cpu_cgroup': cg, 'affinity': aff,
                    'policy': None if policy is None else POLICIES.get(
                        policy & ~os.SCHED_RESET_ON_FORK, policy),
                    'reset_on_fork': None if policy is None else bool(
                        policy & os.SCHED_RESET_ON_FORK)})
        if cg:
            groups.add(cg)
            groups.add(os.path.dirname(cg))
    out['threads'] = ths
    out['cgroups'] = {g: {'cpu.shares': _read(CPU_CGROUP + g + '/cpu.shares'),
                          'cpu.cfs_quota_us': _read(
                              CPU_CGROUP + g + '/cpu.cfs_quota_us')}
                      for g in sorted(groups)}
    return out
