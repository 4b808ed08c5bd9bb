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
"""Knobs libvirt applies to a live domain (``VIR_DOMAIN_AFFECT_LIVE``).

=================  =========================  ==============================
kind               target                     value
=================  =========================  ==============================
vcpu_pin           vCPU index                 tuple of pCPU ids; None = all
disk_iotune        disk target ('vda')        dict of the iotune keys set
iface_bandwidth    tap name ('tap1234')       {'inbound.average': KiB/s,
                                               'outbound.average': KiB/s};
                                              0 = unlimited
vm_sched           '' (the whole VM)          {'cpu_shares', 'vcpu_period',
                                               'vcpu_quota'} (schedinfo)
emulator_pin       '' (the whole VM)          as vcpu_pin, or {'emulator':
                                              that, 'iothreads': {'<id>':
                                              that}} (see below)
=================  =========================  ==============================

Reads return the same shape, so the journal can restore what it read.

``emulator_pin`` is the pin of the VM's whole I/O path: the emulator
(``pinEmulator``), each iothread libvirt knows (``pinIOThread``: Nova's
``<iothreads>`` get their own cgroup, whose cpuset Nova's
``<iothreadpin>`` narrows and no ``sched_setaffinity`` can widen) and the
other I/O threads (vhost workers, QEMU's own ``IO *``: ``sched_setaffinity``
through privsep, as libvirt 9 moves only the main loop live). *Decision:*
no separate knob kind for the iothreads: one write moves every thread
that the I/O-path deadline reservation needs widened, and the read-back
carries the iothreads' pins so that restoring it gives them back. It is a
plain pin when every iothread has the emulator's (Nova pins them alike),
so a policy's tuple compares equal once written; the dict form appears
only when they differ and is what the journal restores. All or nothing:
a failed write puts every pin back as read before.

Live changes only: a hard reboot starts from the persistent XML, and the
agent re-applies its plan on the next tick. A live migration carries the
live XML, these settings included, to the destination: ``mark_held`` and
``read_held`` keep the originals in the domain's metadata for the
destination's agent (``held_marker``).
"""

from iosched.contract import knob_kinds
from iosched.contract import qos_keys
from iosched.host_agent.actuators import held_marker
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.drivers import base

try:
    import libvirt
except ImportError:
    libvirt = None

# The QEMU emulator (main loop) threads' pCPUs, target '': vTurbo's host
# half pins LSVMs' I/O threads to a turbo pCPU (virDomainPinEmulator).
KINDS = (knob_kinds.VCPU_PIN, knob_kinds.DISK_IOTUNE,
         knob_kinds.IFACE_BANDWIDTH, knob_kinds.VM_SCHED,
         knob_kinds.EMULATOR_PIN)


def _cpumap(pcpus, ncpus):
    if pcpus is None:
        return tuple(True for _ in range(ncpus))
    bad = [c for c in pcpus if not 0 <= int(c) < ncpus]
    if bad or not pcpus:
        raise base.DriverError('cannot pin to %r: this host has CPUs 0-%d'
                               % (pcpus, ncpus - 1))
    return tuple(i in set(int(c) for c in pcpus) for i in range(ncpus))


def _from_cpumap(cpumap):
    if all(cpumap):
        return None
    return tuple(i for i, on in enumerate(cpumap) if on)


def _tap_qdiscs(tap):
    """The qdisc kinds on a tap (read only; ``tc`` needs no privilege
    to show).
    """
    import subprocess
    out = subprocess.run(['tc', 'qdisc', 'show', 'dev', tap],
                         capture_output=True, text=True).stdout
    return [line.split()[1] for line in out.splitlines()
            if line.startswith('qdisc ')]


class LibvirtKnobs(knob_set.KnobWriter):
    """read/write of the kinds above on domains the driver resolves."""

    def __init__(self, driver):
        self.driver = driver

    def knobs(self):
        return KINDS

    def marked_kinds(self):
        """All of them: a live migration carries them to another host."""
        return KINDS

    def _live(self):
        return libvirt.VIR_DOMAIN_AFFECT_LIVE

    # -- the held-knobs marker (held_marker) -------------------------------
    def mark_held(self, uuid, held):
        """Record ``held`` ({(kind, target): original}) in the live
        domain's metadata; {} removes the record.
        """
        dom = self.driver.domain(uuid)
        kind = libvirt.VIR_DOMAIN_METADATA_ELEMENT
        try:
            if held:
                dom.setMetadata(kind, held_marker.to_xml(
                    self.driver.host_name(), held), held_marker.HELD_KEY,
                    held_marker.HELD_NS, self._live())
            else:
                dom.setMetadata(kind, None, None, held_marker.HELD_NS,
                                self._live())
        except libvirt.libvirtError as e:
            raise base.DriverError('cannot record the held knobs of %s in '
                                   'its metadata: %s' % (uuid, e))

    def read_held(self, uuid):
        """(host, {(kind, target): original}) recorded on the live
        domain, or None when there is no record.
        """
        dom = self.driver.domain(uuid)
        try:
            text = dom.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT,
                                held_marker.HELD_NS, self._live())
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN_METADATA:
                return None
            raise base.DriverError('cannot read the metadata of %s: %s'
                                   % (uuid, e))
        try:
            host, held = held_marker.from_xml(text)
        except held_marker.MarkerError as e:
            raise base.DriverError('metadata %s of %s: %s' % (
                held_marker.HELD_NS, uuid, e))
        return host, {(k, t): journal_mod._from_json(k, v)
                      for (k, t), v in held.items() if k in KINDS}

    def reconciled_kinds(self):
        """The pins: the domain's persistent definition (Nova's) says
        what they are when no agent changed them (``reconcile``).
        """
        return (knob_kinds.VCPU_PIN, knob_kinds.EMULATOR_PIN)

    def desired(self, kind, uuid, target):
        """The value of ``kind`` in the domain's persistent definition."""
        if kind not in self.reconciled_kinds():
            raise knob_set.NoDesired('%s is not reconciled' % kind)
        dom = self.driver.domain(uuid)
        try:
            if not dom.isPersistent():
                raise knob_set.NoDesired('%s is transient: no definition '
                                         'to reconcile %s with' % (uuid,
                                                                   kind))
        except libvirt.libvirtError as e:
            raise base.DriverError('cannot read the definition of %s: %s'
                                   % (uuid, e))
        return self._read(dom, kind, uuid, target,
                          libvirt.VIR_DOMAIN_AFFECT_CONFIG)

    def config_sched(self, uuid):
        """The persistent definition's schedinfo ({'cpu_shares',
        'vcpu_period', 'vcpu_quota', 'global_period', 'global_quota', ...};
        0: not set, libvirt leaves the cgroup default).
        """
        dom = self.driver.domain(uuid)
        try:
            if not dom.isPersistent():
                raise knob_set.NoDesired('%s is transient: no definition'
                                         % uuid)
            return {k: int(v) for k, v in dom.schedulerParametersFlags(
                libvirt.VIR_DOMAIN_AFFECT_CONFIG).items()}
        except libvirt.libvirtError as e:
            raise base.DriverError('cannot read the definition of %s: %s'
                                   % (uuid, e))

    def read_knob(self, kind, uuid, target):
        return self._read(self.driver.domain(uuid), kind, uuid, target,
                          self._live())

    def _read(self, dom, kind, uuid, target, flags):
        try:
            if kind == knob_kinds.VCPU_PIN:
                info = dom.vcpuPinInfo(flags)
                return _from_cpumap(info[int(target)])
            if kind == knob_kinds.DISK_IOTUNE:
                got = dom.blockIoTune(target, flags)
                return {k: int(got[k]) for k in qos_keys.FRONTEND_KEYS
                        if int(got.get(k, 0))}
            if kind == knob_kinds.IFACE_BANDWIDTH:
                got = dom.interfaceParameters(target, flags)
                return {k: int(got.get(k, 0)) for k in knob_kinds.IFACE_KEYS}
            if kind == knob_kinds.VM_SCHED:
                got = dom.schedulerParametersFlags(flags)
                return {k: int(got[k]) for k in knob_kinds.SCHED_KEYS
                        if k in got}
            if kind == knob_kinds.EMULATOR_PIN:
                return self._read_emulator_pin(dom, flags)
        except (libvirt.libvirtError, IndexError, ValueError) as e:
            raise base.DriverError('cannot read %s of %s/%s: %s'
                                   % (kind, uuid, target, e))
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(KINDS)))

    def _read_emulator_pin(self, dom, flags):
        pin = _from_cpumap(dom.emulatorPinInfo(flags))
        iothreads = {str(i): _from_cpumap(m)
                     for i, m in dom.ioThreadInfo(flags)}
        if all(p == pin for p in iothreads.values()):
            return pin
        return {'emulator': pin, 'iothreads': iothreads}

    @staticmethod
    def _emulator_pins(value, ids, ncpus):
        """(emulator cpumap, {iothread id: cpumap}) of an emulator_pin
        value; an iothread the value does not name gets the emulator's.
        """
        if not isinstance(value, dict):
            value = {'emulator': value, 'iothreads': {}}
        if set(value) != {'emulator', 'iothreads'} or not isinstance(
                value['iothreads'], dict):
            raise base.DriverError('emulator_pin %r is not a pin nor '
                                   '{\'emulator\': pin, \'iothreads\': '
                                   '{id: pin}}' % (value,))
        own = value['iothreads']
        return _cpumap(value['emulator'], ncpus), {
            i: _cpumap(own.get(str(i), value['emulator']), ncpus)
            for i in ids}

    def _pin_emulator(self, dom, uuid, value):
        """The emulator pin, each libvirt iothread's pin and the same CPUs
        as the emulator for the other I/O threads (IO *, vhost-*): a
        SCHED_DEADLINE reservation on an I/O thread needs its affinity
        over the root domain. All or nothing (module doc).
        """
        live = self._live()
        before = tuple(dom.emulatorPinInfo(live))
        io_before = [(int(i), tuple(m)) for i, m in dom.ioThreadInfo(live)]
        cpumap, io_maps = self._emulator_pins(
            value, [i for i, _ in io_before], len(before))
        cpus = [i for i, on in enumerate(cpumap) if on]
        try:
            dom.pinEmulator(cpumap, live)
            for i, _ in io_before:
                dom.pinIOThread(i, io_maps[i], live)
            for tid in self._io_tids(uuid, io_maps):
                self._set_affinity(tid, cpus)
        except Exception as e:
            self._put_back(dom, uuid, before, io_before)
            raise base.DriverError('cannot move the I/O threads of %s to '
                                   'CPUs %s (emulator and iothread pins put '
                                   'back): %s' % (uuid, cpus, e))

    def _put_back(self, dom, uuid, before, io_before):
        """Every pin as read before a failed write, as far as possible."""
        live = self._live()
        steps = [lambda: dom.pinEmulator(before, live)]
        steps.extend(lambda i=i, m=m: dom.pinIOThread(i, m, live)
                     for i, m in io_before)
        cpus = [i for i, on in enumerate(before) if on]
        try:
            tids = self._io_tids(uuid, dict(io_before))
        except Exception:
            tids = []
        steps.extend(lambda t=t: self._set_affinity(t, cpus) for t in tids)
        for step in steps:
            try:
                step()
            except Exception:
                pass

    def _io_tids(self, uuid, iothread_ids=()):
        """The I/O threads' tids but libvirt's iothreads (QEMU's 'IO
        iothread<id>'), which ``pinIOThread`` moves with their cgroup.
        """
        threads = self.driver.io_threads(uuid)
        io = threads.get('io', {}) if isinstance(threads, dict) else {}
        own = {'IO iothread%d' % i for i in iothread_ids}
        return sorted(tid for name, tid in io.items() if name not in own)

    @staticmethod
    def _set_affinity(tid, cpus):
        from iosched.host_agent.linux import privileged
        from iosched.host_agent import privsep
        privsep.ensure_started()
        privileged.set_affinity(tid, cpus)

    def _set_bandwidth(self, dom, uuid, target, value):
        params = {k: int(value.get(k, 0)) for k in knob_kinds.IFACE_KEYS}
        before = dom.interfaceParameters(target, self._live())
        try:
            dom.setInterfaceParameters(target, params, self._live())
        except libvirt.libvirtError as e:
            # NOTE(iosched): libvirt builds htb classes with an sfq leaf;
            # when the leaf fails (kernels without sch_sfq) it leaves the
            # htb root behind. Put the previous bandwidth back so nothing
            # is half-applied, then report the failure.
            try:
                dom.setInterfaceParameters(
                    target, {k: int(before.get(k, 0))
                             for k in knob_kinds.IFACE_KEYS},
                    self._live())
            except libvirt.libvirtError:
                pass
            left = [q for q in _tap_qdiscs(target) if q == 'htb']
            raise base.DriverError(
                'cannot set iface_bandwidth of %s/%s to %r: %s%s'
                % (uuid, target, value, e,
                   ' (htb left on %s after rollback)' % target if left
                   else ''))

    def write_knob(self, kind, uuid, target, value):
        dom = self.driver.domain(uuid)
        try:
            if kind == knob_kinds.VCPU_PIN:
                ncpus = len(dom.vcpuPinInfo(self._live())[0])
                dom.pinVcpuFlags(int(target), _cpumap(value, ncpus),
                                 self._live())
                return
            if kind == knob_kinds.DISK_IOTUNE:
                unknown = set(value) - set(qos_keys.FRONTEND_KEYS)
                if unknown:
                    raise base.DriverError(
                        'unknown iotune keys %s; accepted: %s'
                        % (sorted(unknown), ', '.join(qos_keys.FRONTEND_KEYS)))
                # libvirt merges: keys not given keep their value, so every
                # key is set (0 = unlimited) to make the write exact.
                params = {k: int(value.get(k, 0))
                          for k in qos_keys.FRONTEND_KEYS}
                dom.setBlockIoTune(target, params, self._live())
                return
            if kind == knob_kinds.IFACE_BANDWIDTH:
                return self._set_bandwidth(dom, uuid, target, value)
            if kind == knob_kinds.VM_SCHED:
                params = {k: int(v) for k, v in value.items()
                          if k in knob_kinds.SCHED_KEYS}
                dom.setSchedulerParametersFlags(params, self._live())
                return
            if kind == knob_kinds.EMULATOR_PIN:
                return self._pin_emulator(dom, uuid, value)
        except libvirt.libvirtError as e:
            raise base.DriverError('cannot set %s of %s/%s to %r: %s'
                                   % (kind, uuid, target, value, e))
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(KINDS)))
