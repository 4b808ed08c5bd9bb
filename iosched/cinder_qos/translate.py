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

"""Translate an SLO into Cinder QoS spec keys, and check a spec like QEMU.

Pure: no configuration, no clock, no I/O. Callers pass the ``[cinder_qos]``
option values (``iosched.cinder_qos.conf``) as arguments::

    specs = translate.translate(slo.parse('120iops,60ms'), headroom=1.5)
    # consumer: translate.consumer() == 'front-end'

``check(specs)`` lists what QEMU's ``throttle_is_valid()`` (util/throttle.c)
and libvirt would reject, and ``iosched:*`` values that contradict the
front-end ceiling.
"""

import dataclasses
import difflib
import fractions
import math
import re

from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.contract import slo_units

DEFAULT_HEADROOM = 1.5
DEFAULT_EXPECTED_QD = 16
DEFAULT_LATENCY_CLASS_THRESHOLD = 16.0
THROTTLE_VALUE_MAX = 10 ** 15       # QEMU include/qemu/throttle.h

# The rule (digest 002 section 4.3), with B in IOPS, L in seconds:
#
#   Little's law: N = X * R  (outstanding requests = throughput * latency).
#   A guest that keeps N requests outstanding and must see latency <= L
#   needs X >= N / L. A cap below N / L guarantees a violation, so:
#
#     N               = expected_qd (argument, else the SLO's qd,
#                       else DEFAULT_EXPECTED_QD = 16)
#     total_iops_sec  = ceil(h * max(B, N / L))       h = headroom >= 1
#     size_iops_sec   = ref_io_bytes                  (S: one op = S bytes)
#     class           = the SLO's class= if given, else
#                       'latency' if B * L < threshold (16) else 'throughput'
#                       (B * L is the queue depth the SLO itself implies)
#     total_iops_sec_max = total_iops_sec   for class 'throughput' only:
#                       a 1 s bucket, as Nova cannot pass *_max_length;
#                       a latency volume keeps QEMU's avg/10 bucket
#                       (~100 ms), which is already about B * L.
#   Only total_* keys: QEMU forbids mixing them with read_*/write_*.
#
# Worked example, the Flubber paper's SLOs (h = 1.5, N = sysbench threads):
#
#   workload    B/L (IOPS/ms)  N   N/L    B*L  class       total  total_max
#   seq read    1000/80        16  200    80   throughput  1500   1500
#   seq write   1200/150       16  106.7  180  throughput  1800   1800
#   rand read   120/60         8   133.3  7.2  latency     200    -
#   rand write  600/100        8   80     60   throughput  900    900
#   rand r/w    100/60         8   133.3  6    latency     200    -
#
# Without N (default 16), rand read and rand r/w get 400 = 1.5 * 16 / 0.06.


@dataclasses.dataclass(frozen=True)
class Derivation:
    """Every number translate() derives; the CLI explains each one."""

    slo: slo_mod.SLO
    headroom: float
    expected_qd: int            # N used in N / L
    qd_source: str              # 'argument', 'slo' or 'default'
    little_iops: fractions.Fraction     # N / L
    total_iops_sec: int
    implied_qd: fractions.Fraction      # B * L
    threshold: float
    slo_class: str
    class_source: str           # 'slo' or 'derived'

    @property
    def burst(self):
        """total_iops_sec_max, or None for the latency class."""
        if self.slo_class == qos_keys.THROUGHPUT_CLASS:
            return self.total_iops_sec
        return None


def _exact(x):
    """The decimal a float was written as (1.1 -> 11/10), as a Fraction."""
    if isinstance(x, int):
        return fractions.Fraction(x)
    return fractions.Fraction(repr(float(x)))


def consumer():
    """The QoS spec consumer for SLO specs: Nova must see the ceiling."""
    return qos_keys.FRONTEND_CONSUMER


def derive(slo, headroom=DEFAULT_HEADROOM, expected_qd=None,
           default_expected_qd=DEFAULT_EXPECTED_QD,
           latency_class_threshold=DEFAULT_LATENCY_CLASS_THRESHOLD):
    """Apply the rule above; return a Derivation. Raises SLOError."""
    if not (math.isfinite(headroom) and headroom >= 1.0):
        slo_units.fail('headroom', headroom, 'must be at least 1.0 (a ceiling '
                   'below the SLO guarantees a miss)', 'a finite number >= 1')
    if not (math.isfinite(latency_class_threshold)
            and latency_class_threshold > 0):
        slo_units.fail('latency_class_threshold', latency_class_threshold,
                   'must be greater than 0', 'a number > 0')
    for name, value in (('qd', expected_qd),
                        ('default_expected_qd', default_expected_qd)):
        if value is not None:
            slo_units.whole(name, value)
    if expected_qd is not None:
        n, source = int(expected_qd), 'argument'
    elif slo.expected_qd is not None:
        n, source = slo.expected_qd, 'slo'
    else:
        n, source = int(default_expected_qd), 'default'
    latency_s = _exact(slo.latency_ms) / 1000
    b = _exact(slo.min_iops)
    little = n / latency_s
    total = math.ceil(_exact(headroom) * max(b, little))
    if total > THROTTLE_VALUE_MAX:
        slo_units.fail('throughput', slo_units.fmt(slo.min_iops),
                   'ceiling %d is above QEMU\'s limit' % total,
                   'total_iops_sec <= %d' % THROTTLE_VALUE_MAX)
    implied = b * latency_s
    if slo.slo_class is not None:
        klass, class_source = slo.slo_class, 'slo'
    elif implied < _exact(latency_class_threshold):
        klass, class_source = qos_keys.LATENCY_CLASS, 'derived'
    else:
        klass, class_source = qos_keys.THROUGHPUT_CLASS, 'derived'
    return Derivation(slo, headroom, n, source, little, total, implied,
                      latency_class_threshold, klass, class_source)


def specs_of(d):
    """The QoS spec dict (all values str) of a Derivation."""
    s = d.slo
    specs = {'total_iops_sec': str(d.total_iops_sec),
             'size_iops_sec': str(s.ref_io_bytes)}
    if d.burst is not None:
        specs['total_iops_sec_max'] = str(d.burst)
    specs[qos_keys.MIN_IOPS] = slo_units.fmt(s.min_iops)
    if s.min_bytes_sec is not None:
        specs[qos_keys.MIN_BYTES_SEC] = slo_units.fmt(s.min_bytes_sec)
    specs[qos_keys.LATENCY_MS] = slo_units.fmt(s.latency_ms)
    specs[qos_keys.LATENCY_STAT] = s.latency_stat
    specs[qos_keys.REF_IO_BYTES] = str(s.ref_io_bytes)
    specs[qos_keys.CLASS] = d.slo_class
    if d.qd_source != 'default':
        specs[qos_keys.EXPECTED_QD] = str(d.expected_qd)
    specs[qos_keys.WINDOW_S] = slo_units.fmt(s.window_s)
    specs[qos_keys.TOLERANCE] = slo_units.fmt(s.tolerance)
    return specs


def translate(slo, headroom=DEFAULT_HEADROOM, expected_qd=None,
              default_expected_qd=DEFAULT_EXPECTED_QD,
              latency_class_threshold=DEFAULT_LATENCY_CLASS_THRESHOLD):
    """Return the QoS spec keys (str -> str) for ``slo``; see the rule."""
    return specs_of(derive(slo, headroom, expected_qd, default_expected_qd,
                           latency_class_threshold))


_PER_GB_RE = re.compile(r'^((?:total|read|write)_(?:iops|bytes)_sec)'
                        r'_per_gb(_min)?$')


def _ull(raw):
    """libvirt reads iotune values as unsigned integers; None if not one."""
    text = str(raw).strip()
    if not re.fullmatch(r'[0-9]+', text):     # libvirt: ASCII digits
        return None
    # more digits than int() converts (4300) are above any limit anyway
    return int(text[-20:]) if len(text.lstrip('0')) <= 20 else 10 ** 20


def _unknown(key, problem, known):
    near = difflib.get_close_matches(key, known, n=1)
    hint = "; did you mean '%s'?" % near[0] if near else ''
    return '%s: %s%s' % (slo_units.shorten(key), problem, hint)


def check(specs):
    """Return the problems QEMU/libvirt/Nova would have with ``specs``."""
    problems, val, per_gb = [], {}, set()
    cons = specs.get(qos_keys.CONSUMER_KEY, qos_keys.FRONTEND_CONSUMER)
    if cons not in qos_keys.CONSUMERS:
        problems.append("consumer '%s': unknown; accepted: %s"
                        % (slo_units.shorten(cons),
                           ', '.join(qos_keys.CONSUMERS)))
    for key in sorted(specs):
        raw, m = specs[key], _PER_GB_RE.match(key)
        if key in qos_keys.FRONTEND_KEYS or m:
            n = _ull(raw)
            if n is None:
                problems.append("%s '%s': not a whole number; libvirt takes "
                                "unsigned integers (0 = unset)"
                                % (key, slo_units.shorten(raw)))
            elif n > THROTTLE_VALUE_MAX:
                problems.append("%s '%s': above QEMU's limit %d"
                                % (key, slo_units.shorten(raw),
                                   THROTTLE_VALUE_MAX))
            elif m and n and not m.group(2):
                per_gb.add(m.group(1))     # Cinder sets the base key
            elif not m:
                val[key] = n
        elif qos_keys.is_iosched_key(key) and key not in qos_keys.IOSCHED_KEYS:
            problems.append(_unknown(key, 'not an iosched key; the agent '
                                     'ignores it', qos_keys.IOSCHED_KEYS))
        elif (key != qos_keys.CONSUMER_KEY and not qos_keys.is_iosched_key(key)
              and cons == qos_keys.FRONTEND_CONSUMER):
            problems.append(_unknown(key, 'Nova ignores it: not one of the '
                                     '13 front-end keys nor iosched:*',
                                     qos_keys.FRONTEND_KEYS))
    if cons == 'back-end' and val:
        problems.append("consumer 'back-end': Nova never sees %s"
                        % ', '.join(sorted(val)))

    def avg(d, kind):
        key = '%s_%s_sec' % (d, kind)
        return val.get(key, 0) or (key in per_gb)

    for kind in ('bytes', 'iops'):
        for suffix, get in (('', avg),
                            ('_max', lambda d, k: val.get(
                                '%s_%s_sec_max' % (d, k), 0))):
            if get('total', kind) and (get('read', kind) or
                                       get('write', kind)):
                problems.append(
                    'total_%s_sec%s and read_/write_%s_sec%s cannot be used '
                    'at the same time' % (kind, suffix, kind, suffix))
        for d in ('total', 'read', 'write'):
            a, mx = avg(d, kind), val.get('%s_%s_sec_max' % (d, kind), 0)
            name = '%s_%s_sec' % (d, kind)
            if mx and not a:
                problems.append('%s_max needs %s to be set' % (name, name))
            elif mx and name in val and mx < val[name]:
                problems.append('%s_max %d is lower than %s %d; QEMU needs '
                                'max >= avg' % (name, mx, name, val[name]))
    if val.get('size_iops_sec') and not any(avg(d, 'iops') for d in
                                            ('total', 'read', 'write')):
        problems.append('size_iops_sec needs total_iops_sec, read_iops_sec '
                        'or write_iops_sec to be set')
    if any(qos_keys.is_iosched_key(k) for k in specs):
        problems.extend(_check_slo(specs, val))
    return problems


def _check_slo(specs, val):
    """Problems between the iosched:* SLO and the front-end ceiling."""
    try:
        s = slo_mod.SLO.from_specs(specs)
    except slo_mod.SLOError as e:
        return [str(e)]
    out, cap = [], val.get('total_iops_sec')
    if cap and cap < s.min_iops:
        out.append('total_iops_sec %d is below %s %s: the ceiling guarantees '
                   'an SLO miss' % (cap, qos_keys.MIN_IOPS,
                                    slo_units.fmt(s.min_iops)))
    little = (s.expected_qd or 0) * 1000 / _exact(s.latency_ms)
    if cap and cap < little:
        out.append("total_iops_sec %d is below N/L = %s (Little's law with "
                   '%s %d): the ceiling guarantees an SLO miss' % (
                       cap, slo_units.fmt(round(float(little), 1)),
                       qos_keys.EXPECTED_QD, s.expected_qd))
    size = val.get('size_iops_sec')
    if size and size != s.ref_io_bytes:
        out.append('size_iops_sec %d differs from %s %d: the ceiling and the '
                   'SLO count operations differently'
                   % (size, qos_keys.REF_IO_BYTES, s.ref_io_bytes))
    return out
