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
"""Guest specs: what ``up`` starts, from ``name:mode[:k=v,...]`` strings or
a YAML/JSON file (``{"guests": [{"name": ..., "mode": ..., ...}]}``).

Each mode has a default flavor with the iosched extra specs the agent
reads (``iosched.contract.flavor`` keys); a spec may override the flavor
name, its extra specs, memory, disk size and the guest program's options.
"""

import dataclasses
import json
import re
import typing

from iosched.contract import qos_keys

MODES = ('rr', 'burn', 'hybrid', 'disk', 'idle', 'dd')
NAME_RE = re.compile(r'^[a-z0-9][a-z0-9-]{0,30}$')
VOLUME_ID_RE = re.compile(r'^[0-9a-f-]{36}$')

# Default flavors per mode: (flavor name, extra specs).
FLAVORS = {
    'rr': ('lsvm.small', {'iosched:latency_sensitive': 'true',
                          'iosched:latency_ms': '2',
                          'iosched:io_profile': 'io'}),
    'burn': ('cpu.small', {'iosched:io_profile': 'cpu'}),
    # rr and burn on one vCPU (ISACS's I/O-and-CPU vCPU); not an LSVM.
    'hybrid': ('mixed.small', {'iosched:io_profile': 'mixed'}),
    'disk': ('io.small', {'iosched:io_profile': 'io'}),
    'idle': ('std.small', {}),
    # seed 004's dd test: sequential reads plus journal-like writes.
    'dd': ('io.small', {'iosched:io_profile': 'io'}),
}
# Options passed to the guest program (iosched.opts= on the command line).
GUEST_OPTS = ('report_ms', 'pattern', 'write_pct', 'bs', 'duty_pct',
              'period_ms', 'burn_nice', 'qd', 'rate', 'arrival',
              'journal_ms', 'jsync', 'dev')
# Integer options with their accepted range (inclusive).
OPT_RANGES = {'report_ms': (1, 3600000), 'write_pct': (0, 100),
              'bs': (512, 1048576), 'duty_pct': (1, 100),
              'period_ms': (1, 10000), 'burn_nice': (-20, 19),
              'qd': (1, 64), 'rate': (0, 1000000),
              'journal_ms': (0, 600000)}
# Options with a fixed set of values.
OPT_CHOICES = {'pattern': ('rand', 'seq'), 'arrival': ('fixed', 'poisson'),
               'jsync': ('0', '1'),
               # the disk the disk/dd modes use (a volume Nova attaches
               # after the root disk is vdb)
               'dev': ('vda', 'vdb', 'vdc', 'vdd')}
# QEMU cache modes of the guest's disk (libvirt <driver cache=>).
DISK_CACHES = ('none', 'directsync', 'writethrough', 'writeback', 'unsafe')


class SpecError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class GuestSpec:
    name: str                       # short name; domain is <prefix><name>
    mode: str = 'idle'              # rr | burn | hybrid | disk | idle | dd
    flavor: str = ''                # default: FLAVORS[mode][0]
    extra_specs: typing.Optional[typing.Mapping[str, str]] = None
    memory_mib: int = 128
    disk_mib: int = 64
    opts: typing.Mapping[str, str] = dataclasses.field(default_factory=dict)
    volume_qos: typing.Mapping[str, str] = dataclasses.field(
        default_factory=dict)       # Cinder QoS specs of the fake volume
    # A region of a shared block device instead of a file of its own
    # (shared_disk.SharedDisk): the device and the region's byte offset;
    # the region's size is disk_mib.
    disk_dev: str = ''
    disk_offset: int = 0
    # The disk's <serial> (the Cinder volume id); empty: a fresh uuid.
    volume_id: str = ''
    # QEMU cache mode of the disk: none (O_DIRECT, io=native) or a host
    # page cache mode (io=threads).
    disk_cache: str = 'none'
    # The disk's <iotune> as Nova writes it at attach from the volume's
    # front-end QoS spec ({key of qos_keys.FRONTEND_KEYS: int > 0}); empty:
    # none.
    disk_iotune: typing.Mapping[str, int] = dataclasses.field(
        default_factory=dict)

    def __post_init__(self):
        if not NAME_RE.match(self.name or ''):
            raise SpecError('bad guest name %r (want [a-z0-9-], <=31 chars)'
                            % self.name)
        if self.mode not in MODES:
            raise SpecError('guest %s: mode %r not in %s' % (
                self.name, self.mode, '|'.join(MODES)))
        if not 64 <= int(self.memory_mib) <= 4096:
            raise SpecError('guest %s: memory_mib must be 64..4096'
                            % self.name)
        bad = set(self.opts) - set(GUEST_OPTS)
        if bad:
            raise SpecError('guest %s: unknown opts %s (known: %s)' % (
                self.name, sorted(bad), ', '.join(GUEST_OPTS)))
        for k, v in self.opts.items():
            if not re.match(r'^[A-Za-z0-9_.-]+$', str(v)):
                raise SpecError('guest %s: bad opt value %r' % (self.name, v))
            if k in OPT_CHOICES and v not in OPT_CHOICES[k]:
                raise SpecError('guest %s: %s=%r, want one of %s' % (
                    self.name, k, v, '|'.join(OPT_CHOICES[k])))
            if k in OPT_RANGES:
                lo, hi = OPT_RANGES[k]
                try:
                    ok = lo <= int(v) <= hi
                except ValueError:
                    ok = False
                if not ok:
                    raise SpecError('guest %s: %s=%r, want an integer %d..%d'
                                    % (self.name, k, v, lo, hi))
        if self.disk_dev and not self.disk_dev.startswith('/dev/'):
            raise SpecError('guest %s: disk_dev %r is not a /dev path'
                            % (self.name, self.disk_dev))
        if self.disk_cache not in DISK_CACHES:
            raise SpecError('guest %s: disk_cache %r, want one of %s' % (
                self.name, self.disk_cache, '|'.join(DISK_CACHES)))
        if self.volume_id and not VOLUME_ID_RE.match(self.volume_id):
            raise SpecError('guest %s: volume_id %r: want a volume uuid '
                            '([0-9a-f-], 36 characters)'
                            % (self.name, self.volume_id))
        for k, v in self.disk_iotune.items():
            if k not in qos_keys.FRONTEND_KEYS or isinstance(v, bool) or \
                    not isinstance(v, int) or v <= 0:
                raise SpecError('guest %s: disk_iotune %s=%r: want one of %s'
                                ' = an integer > 0' % (
                                    self.name, k, v,
                                    '|'.join(qos_keys.FRONTEND_KEYS)))
        if int(self.disk_offset) < 0 or int(self.disk_offset) % 4096:
            raise SpecError('guest %s: disk_offset must be a multiple of '
                            '4096 bytes' % self.name)

    @property
    def flavor_name(self):
        return self.flavor or FLAVORS[self.mode][0]

    @property
    def flavor_extra_specs(self):
        if self.extra_specs is not None:
            return dict(self.extra_specs)
        return dict(FLAVORS[self.mode][1])

    @property
    def opts_string(self):
        return ','.join('%s=%s' % (k, self.opts[k]) for k in sorted(self.opts))

    # no_timer_check: a TCG guest booting on a loaded host can fail the
    # kernel's IO-APIC timer check and panic ("IO-APIC + timer doesn't
    # work", seen at load 12 on the 2-core host); cloud images set it too.
    def kernel_args(self, console='ttyS0'):
        """The guest kernel's command line words (the testbed's domains
        and the cloud's images alike).
        """
        words = ['console=%s' % console, 'quiet', 'panic=-1',
                 'no_timer_check', 'iosched.mode=%s' % self.mode]
        if self.opts_string:
            words.append('iosched.opts=%s' % self.opts_string)
        return words


def parse_guest(text):
    """``name:mode`` or ``name:mode:k=v,k=v`` (k: a guest program option)."""
    parts = text.split(':', 2)
    if len(parts) < 2:
        raise SpecError('guest %r: want name:mode[:k=v,...]' % text)
    opts = {}
    if len(parts) == 3 and parts[2]:
        for item in parts[2].split(','):
            k, sep, v = item.partition('=')
            if not sep:
                raise SpecError('guest %r: option %r is not k=v'
                                % (text, item))
            opts[k.strip()] = v.strip()
    return GuestSpec(name=parts[0], mode=parts[1], opts=opts)


def from_dict(d):
    known = {f.name for f in dataclasses.fields(GuestSpec)}
    bad = set(d) - known
    if bad:
        raise SpecError('unknown guest keys %s' % sorted(bad))
    d = dict(d)
    for key in ('opts', 'volume_qos', 'extra_specs'):
        if d.get(key) is not None:
            d[key] = {str(k): str(v) for k, v in d[key].items()}
    return GuestSpec(**d)


def load_file(path):
    """Guest specs from a YAML or JSON file: a list or {"guests": [...]}."""
    with open(path) as fh:
        text = fh.read()
    if path.endswith('.json'):
        data = json.loads(text)
    else:
        import yaml
        data = yaml.safe_load(text)
    if isinstance(data, dict):
        data = data.get('guests')
    if not isinstance(data, list) or not data:
        raise SpecError('%s: want a non-empty list of guests' % path)
    return [from_dict(g) for g in data]


def check_unique(specs):
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError('duplicate guest names: %s' % ', '.join(dup))
    return list(specs)
