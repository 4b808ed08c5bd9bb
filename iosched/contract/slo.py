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

"""The SLO of a volume, <B, L> after Flubber, parsed from admin text.

``parse()`` reads the admin's text; ``SLO.from_specs()`` reads the
``iosched:*`` keys of a QoS spec back (the host agent does this). Fields are
separated by commas and/or spaces; a field is ``name=value`` or a bare value
whose unit says which field it is::

    500iops,10ms,p99
    40MB/s,20ms
    throughput=500iops latency=10ms stat=p99 ref_io=16KiB qd=8

Fields: ``throughput`` (``<n>iops`` or a bandwidth, converted to IOPS of
``ref_io`` bytes), ``latency`` (``<n>ms|us|s``), ``stat`` (mean, p50, p90,
p95, p99, p999, max; default mean), ``ref_io`` (default 16 KiB), ``qd``
(expected outstanding requests), ``window`` (default 1s), ``tolerance``
(default 0.05) and ``class`` (latency|throughput; default derived). See
docs/slo.md.
"""

import dataclasses
import math
import re

from iosched.contract import qos_keys
from iosched.contract import slo_units

SLOError = slo_units.SLOError

# The reference request size S: an SLO's default ``ref_io`` (sysbench's
# default block size, digest 002; ``[cinder_qos] default_ref_io_bytes``
# may change it for new SLOs), and the unit of the agent's disk capacities
# and iotune caps (IOPS of 16 KiB operations): a request of x bytes costs
# max(1, x / S) operations, as QEMU's size_iops_sec.
DEFAULT_REF_IO_BYTES = 16384
MIN_REF_IO_BYTES = 512           # one sector
MAX_REF_IO_BYTES = 64 * 1024 ** 2  # sanity bound
DEFAULT_LATENCY_STAT = 'mean'    # what the Flubber paper checks
DEFAULT_WINDOW_S = 1.0           # one agent tick; digest 002 section 4.3
DEFAULT_TOLERANCE = 0.05         # share of windows allowed to miss
# A virtio request's own trip through guest, KVM and QEMU takes tens of
# microseconds, so a lower target cannot be met whatever the disk.
MIN_LATENCY_MS = 0.05
# Requests a window must hold at rate B for a percentile to exist:
# the q-quantile needs at least 1 / (1 - q) samples (p99: 100). A mean or
# max of an empty window is just skipped by the agent.
STAT_MIN_SAMPLES = {stat: round(1 / (1 - q))
                    for stat, q in qos_keys.STAT_QUANTILES.items() if q < 1}
# Upper bounds (ns) of the latency histogram buckets the agent's drivers
# keep per disk, from which it takes the percentile statistics
# (``iosched.contract.stats.hist_quantile``; QEMU's
# block-latency-histogram-set boundaries; the simulator keeps the same):
# geometric, ratio 1.25, from 50 us to ~13 s, so a percentile interpolated
# inside its bucket is within 25 %.
LATENCY_HIST_BOUNDS_NS = tuple(int(50000 * 1.25 ** k) for k in range(57))

FIELDS = ('throughput', 'latency', 'stat', 'ref_io', 'qd', 'window',
          'tolerance', 'class')
_BARE_WORDS = frozenset(qos_keys.LATENCY_STATS + qos_keys.CLASSES)
# What each field takes, for messages.
_FIELD_ACCEPTED = {
    'throughput': slo_units.THROUGHPUT_ACCEPTED,
    'latency': '<n>ms, <n>us, <n>s', 'window': '<n>ms, <n>us, <n>s',
    'stat': ', '.join(qos_keys.LATENCY_STATS),
    'ref_io': '<n> with a unit: %s' % slo_units.SIZE_ACCEPTED,
    'qd': 'an integer >= 1',
    'tolerance': 'a fraction in [0, 1) such as 0.05, or 5%',
    'class': ', '.join(qos_keys.CLASSES)}


@dataclasses.dataclass(frozen=True)
class SLO:
    """A validated <B, L> SLO with its measurement details.

    ``min_iops`` is B in operations of ``ref_io_bytes`` bytes per second;
    ``min_bytes_sec`` is B in bytes/s when the admin gave a bandwidth.
    ``latency_ms`` is L; ``latency_stat`` names the statistic it bounds.
    ``expected_qd`` is the guest's outstanding requests N (None: unknown).
    ``slo_class`` is None when the class is to be derived by translate.
    """

    min_iops: float
    latency_ms: float
    latency_stat: str = DEFAULT_LATENCY_STAT
    ref_io_bytes: int = DEFAULT_REF_IO_BYTES
    min_bytes_sec: float | None = None
    expected_qd: int | None = None
    window_s: float = DEFAULT_WINDOW_S
    tolerance: float = DEFAULT_TOLERANCE
    slo_class: str | None = None

    def __post_init__(self):
        for name in ('min_iops', 'latency_ms', 'window_s', 'tolerance',
                     'min_bytes_sec'):
            value = getattr(self, name)
            if value is None and name == 'min_bytes_sec':
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SLOError('%s %s: not a number; accepted: a finite '
                               'number'
                               % (name, slo_units.shorten(repr(value))))
            if not math.isfinite(value):
                raise SLOError('%s %r: not a finite number; accepted: a '
                               'finite number' % (name, value))
            object.__setattr__(self, name, float(value))
        if self.min_iops <= 0:
            raise SLOError('throughput %s IOPS: must be greater than 0; '
                           'accepted: a number > 0'
                           % slo_units.fmt(self.min_iops))
        if self.latency_ms < MIN_LATENCY_MS:
            raise SLOError(
                'latency %s ms: below %s ms, about what the virtio path '
                'alone takes; accepted: latency >= %s ms' % (
                    slo_units.fmt(self.latency_ms), MIN_LATENCY_MS,
                    MIN_LATENCY_MS))
        if self.latency_stat not in qos_keys.LATENCY_STATS:
            slo_units.fail('stat', self.latency_stat, 'unknown statistic',
                       ', '.join(qos_keys.LATENCY_STATS))
        self._check_int('ref_io_bytes', MIN_REF_IO_BYTES, MAX_REF_IO_BYTES)
        if self.expected_qd is not None:
            self._check_int('expected_qd', 1, None)
        if self.min_bytes_sec is not None:
            if not math.isclose(self.min_bytes_sec / self.ref_io_bytes,
                                self.min_iops, rel_tol=1e-9):
                raise SLOError(
                    'throughput %s B/s and %s IOPS of %d B disagree; '
                    'accepted: min_iops = min_bytes_sec / ref_io_bytes' % (
                        slo_units.fmt(self.min_bytes_sec),
                        slo_units.fmt(self.min_iops), self.ref_io_bytes))
        if self.window_s * 1000 < self.latency_ms:
            raise SLOError(
                'window %s s is shorter than latency %s ms: no request could '
                'be judged within one window; accepted: window >= latency' % (
                    slo_units.fmt(self.window_s),
                    slo_units.fmt(self.latency_ms)))
        if not 0 <= self.tolerance < 1:
            slo_units.fail('tolerance', slo_units.fmt(self.tolerance),
                       'out of range', 'a fraction in [0, 1)')
        if (self.slo_class is not None
                and self.slo_class not in qos_keys.CLASSES):
            slo_units.fail('class', self.slo_class, 'unknown class',
                       ', '.join(qos_keys.CLASSES))
        need = STAT_MIN_SAMPLES.get(self.latency_stat)
        if need and self.min_iops * self.window_s < need:
            raise SLOError(
                'stat %s: a %s s window at %s IOPS holds %s requests, too few '
                'for a %s (needs %d); accepted: a longer window (window=%ss) '
                'or a coarser stat' % (
                    self.latency_stat, slo_units.fmt(self.window_s),
                    slo_units.fmt(self.min_iops),
                    slo_units.fmt(self.min_iops * self.window_s),
                    self.latency_stat, need,
                    slo_units.fmt(math.ceil(need / self.min_iops))))

    def _check_int(self, name, low, high):
        value = getattr(self, name)
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or isinstance(value, float) and not value.is_integer()):
            raise SLOError('%s %s: not a whole number; accepted: an integer '
                           '>= %d%s' % (name, slo_units.shorten(repr(value)),
                                        low,
                                        ' and <= %d' % high if high else ''))
        value = int(value)
        if value < low or (high is not None and value > high):
            raise SLOError('%s %s: out of range; accepted: %d..%s' % (
                name, slo_units.shorten(value), low,
                high if high is not None else ''))
        object.__setattr__(self, name, value)

    @property
    def bandwidth(self):
        """True if the admin gave B as a bandwidth."""
        return self.min_bytes_sec is not None

    def to_text(self):
        """Canonical SLO text; ``parse(slo.to_text()) == slo``."""
        if self.bandwidth:
            tput = slo_units.fmt(self.min_bytes_sec) + 'B/s'
        else:
            tput = slo_units.fmt(self.min_iops) + 'iops'
        parts = ['throughput=' + tput,
                 'latency=%sms' % slo_units.fmt(self.latency_ms),
                 'stat=' + self.latency_stat,
                 'ref_io=%dB' % self.ref_io_bytes,
                 'window=%ss' % slo_units.fmt(self.window_s),
                 'tolerance=' + slo_units.fmt(self.tolerance)]
        if self.expected_qd is not None:
            parts.append('qd=%d' % self.expected_qd)
        if self.slo_class is not None:
            parts.append('class=' + self.slo_class)
        return ' '.join(parts)

    @classmethod
    def from_specs(cls, specs):
        """Read the ``iosched:*`` keys of a QoS spec dict back into an SLO.

        Other keys are ignored. Values may be strings (as Cinder stores
        them) or numbers. Raises SLOError naming the bad key.
        """
        missing = [k for k in qos_keys.REQUIRED_IOSCHED_KEYS if k not in specs]
        if missing:
            raise SLOError('QoS spec lacks %s; accepted: a spec made by '
                           'iosched.cinder_qos.translate' % ', '.join(missing))
        kwargs = {}
        readers = (
            (qos_keys.MIN_IOPS, 'min_iops', slo_units.number),
            (qos_keys.MIN_BYTES_SEC, 'min_bytes_sec', slo_units.number),
            (qos_keys.LATENCY_MS, 'latency_ms', slo_units.number),
            (qos_keys.LATENCY_STAT, 'latency_stat', _word),
            (qos_keys.REF_IO_BYTES, 'ref_io_bytes', slo_units.whole),
            (qos_keys.EXPECTED_QD, 'expected_qd', slo_units.whole),
            (qos_keys.WINDOW_S, 'window_s', slo_units.number),
            (qos_keys.TOLERANCE, 'tolerance', slo_units.fraction),
            (qos_keys.CLASS, 'slo_class', _word),
        )
        for key, name, read in readers:
            if key in specs:
                kwargs[name] = read(key, specs[key])
        try:
            return cls(**kwargs)
        except SLOError as e:
            raise SLOError('QoS spec: %s' % e)


def _word(field, raw):
    return str(raw).strip().lower()


def _tokens(text):
    """Yield (name or None, value) pairs; '10 ms' is joined to one value."""
    text = re.sub(r'\s*=\s*', '=', text.strip())
    for group in text.split(','):
        words = group.split()
        i = 0
        while i < len(words):
            word = words[i]
            value = word.partition('=')[2] if '=' in word else word
            nxt = words[i + 1] if i + 1 < len(words) else None
            if (slo_units.NUMBER_RE.match(value) and nxt and '=' not in nxt
                    and nxt[0] not in '+-.0123456789'
                    and nxt.lower() not in _BARE_WORDS):
                word, i = word + ' ' + nxt, i + 1
            i += 1
            name, sep, value = word.partition('=')
            yield (name.lower(), value) if sep else (None, word)


def _field_of(value):
    """Guess the field of a bare value from its unit or word."""
    low = value.lower()
    if low in qos_keys.LATENCY_STATS:
        return 'stat'
    if low in qos_keys.CLASSES:
        return 'class'
    m = re.match(r'^[-+]?[\d.]+\s*(.*)$', low)
    unit = m.group(1) if m else None
    if unit == 'iops' or unit in slo_units.BANDWIDTH_UNITS:
        return 'throughput'
    if unit in slo_units.TIME_UNITS:
        return 'latency'
    if unit in slo_units.SIZE_UNITS:
        return 'ref_io'
    accepted = ('throughput in iops, %s; latency in %s; ref_io in %s; '
                'stat %s; or name=value with a name in %s' % (
                    ', '.join(slo_units.BANDWIDTH_NAMES),
                    slo_units.TIME_ACCEPTED,
                    slo_units.SIZE_ACCEPTED, ', '.join(qos_keys.LATENCY_STATS),
                    ', '.join(FIELDS)))
    if unit is None:
        problem = 'not a value of any field'
    elif not unit:
        problem = 'missing unit, so the field is unknown'
    else:
        problem = "unknown unit '%s'" % slo_units.shorten(
            value[len(value) - len(unit):], 20)
    slo_units.fail('field', value, problem, accepted)


def parse(text, default_ref_io_bytes=DEFAULT_REF_IO_BYTES):
    """Parse admin SLO text (see the module docstring) into an SLO."""
    raw = {}
    for name, value in _tokens(text or ''):
        name = name or _field_of(value)
        if name not in FIELDS:
            slo_units.fail('field', name, 'unknown field', ', '.join(FIELDS))
        if not value.strip():
            slo_units.fail(name, value, 'empty value', _FIELD_ACCEPTED[name])
        if name in raw:
            raise SLOError("duplicate field %s: '%s' and '%s'; give each "
                           "field once" % (name, slo_units.shorten(raw[name]),
                                           slo_units.shorten(value)))
        raw[name] = value
    for name, example in (('throughput', slo_units.THROUGHPUT_ACCEPTED),
                          ('latency', '<n>ms, <n>us, <n>s')):
        if name not in raw:
            raise SLOError("missing %s; accepted: %s (e.g. '500iops,10ms')"
                           % (name, example))
    kwargs = {'ref_io_bytes': default_ref_io_bytes}
    if 'ref_io' in raw:
        kwargs['ref_io_bytes'] = slo_units.size_bytes('ref_io', raw['ref_io'])
    iops, bps = slo_units.throughput('throughput', raw['throughput'])
    if bps is not None:
        iops = bps / kwargs['ref_io_bytes']
        kwargs['min_bytes_sec'] = bps
    kwargs['min_iops'] = iops
    kwargs['latency_ms'] = slo_units.duration_ms('latency', raw['latency'])
    if 'stat' in raw:
        kwargs['latency_stat'] = raw['stat'].strip().lower()
    if 'qd' in raw:
        kwargs['expected_qd'] = slo_units.whole('qd', raw['qd'])
    if 'window' in raw:
        kwargs['window_s'] = slo_units.duration_ms('window', raw['window'],
                                                   1000)
    if 'tolerance' in raw:
        kwargs['tolerance'] = slo_units.fraction('tolerance', raw['tolerance'])
    if 'class' in raw:
        kwargs['slo_class'] = raw['class'].strip().lower()
    return SLO(**kwargs)
