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
"""Reports bound to the host that sent them: HMAC-SHA256 with per-host keys.

The schedulers hold one secret, the *master key* (``[iosched]
report_master_key``). Each compute node holds only its own *host key*,
derived from it (``[reporter] report_key``)::

    host_key = HMAC-SHA256(master_key, "iosched-report-key\\0" + host)   (hex)
    signature = "hmac-sha256:" + HMAC-SHA256(host_key, canonical(report))

where ``canonical`` is the report dict as compact JSON with sorted keys
(scheme ``hmac-sha256``, RPC 1.1). A scheduler derives the key of the host
a report *claims* to come from and compares the signatures in constant
time. A node that leaks its key can speak only for itself; a bus client
with no key cannot speak for any host, invented host names included.
``iosched-report-key --host NAME`` prints a host's key from the
scheduler's configuration (operator guide).

The signature covers ``ts`` and ``seq`` but a captured report stays
validly signed: the scheduler's store refuses a replay by those fields
(older than the host's newest accepted report, or than ``[iosched]
report_max_age``; ``iosched.nova_plugin.store``).

Scheme ``hmac-sha256-v2`` (RPC 1.2, what agents send now): re-encoding a
whole report (32 vCPU records, 50 decisions: 20 KB of JSON) cost a
scheduler 0.3 ms per report, as much as parsing it. The per-vCPU records
and the decisions (the *tail*, ``TAIL``), which a scheduler does not keep,
are covered through their digest instead::

    tail_digest = SHA-256(canonical({"vcpus": ..., "decisions": ...}))  (hex)
    mac = HMAC-SHA256(host_key, "iosched-report-v2\0" + canonical(head)
                      + "\0" + counts + "\0" + tail_digest)
    signature = "hmac-sha256-v2:" + tail_digest + ":" + mac

where ``head`` is the report without the tail fields and ``counts`` the
length of each tail field (``-1``: absent or not a list), e.g. ``32,50``.
A scheduler (``verify(..., whole=False)``) checks the MAC over the ~1 KB
head and the counts only: everything it stores (the aggregates, and the
non-LSVM vCPU count it derives from ``len(vcpus)``) is covered. A reader
that keeps the tail (``iosched-status``, ``whole=True``) also recomputes
the tail digest.

Head-only messages (RPC 1.3, what agents cast to the schedulers now):
``split(report)`` gives the head (the report without ``TAIL``) and the
tail's ``counts`` (``{"vcpus": 32, "decisions": 50}``; a field the report
lacks is left out and counts ``-1``). The v2 signature of the whole
report, tail digest included, verifies the head alone with those counts
(``verify(head, signature, key, counts=counts)``): one signature for both
the head the schedulers get and the whole report ``iosched-status`` asks
for. A head carries no tail to recompute, so ``counts`` implies
``whole=False``; a v1 signature cannot verify a head.

Standard library only: nova-scheduler imports this module.
"""

import hashlib
import hmac
import json

SCHEME = 'hmac-sha256'
SCHEME_V2 = 'hmac-sha256-v2'
SCHEMES = (SCHEME, SCHEME_V2)
# The report fields a v2 signature covers through their digest.
TAIL = ('vcpus', 'decisions')
_V2_CONTEXT = b'iosched-report-v2\x00'
_HEX = frozenset('0123456789abcdef')
# What a payload that cannot be encoded raises (not an agent's report).
_UNENCODABLE = (TypeError, ValueError, RecursionError)
_KEY_CONTEXT = b'iosched-report-key\x00'
# The shortest master key accepted: 128 bits as hex.
MIN_MASTER_KEY_CHARS = 32


class BadKey(ValueError):
    """A key that cannot be used, with what is accepted."""


def check_master_key(master_key):
    """Raise ``BadKey`` unless ``master_key`` is long enough."""
    if not isinstance(master_key, str) or \
            len(master_key.strip()) < MIN_MASTER_KEY_CHARS:
        raise BadKey(
            'the report master key must be at least %d characters (e.g. '
            '`openssl rand -hex 32`); got %s' % (
                MIN_MASTER_KEY_CHARS,
                'none' if not master_key else
                '%d characters' % len(master_key.strip())))
    return master_key.strip()


def derive_host_key(master_key, host):
    """The hex key of ``host`` under ``master_key``."""
    master = check_master_key(master_key)
    if not isinstance(host, str) or not host:
        raise BadKey('a host key needs a non-empty host name; got %r'
                        % (host,))
    return hmac.new(master.encode('utf-8'),
                    _KEY_CONTEXT + host.encode('utf-8'),
                    hashlib.sha256).hexdigest()


# One encoder (json.dumps builds one per call with these arguments).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(',', ':'),
                              ensure_ascii=True, allow_nan=True)


def canonical(report):
    """The bytes a signature covers: compact JSON with sorted keys."""
    return _CANONICAL.encode(report).encode('ascii')


def sign(report, host_key, scheme=SCHEME):
    """The signature string of the report dict ``report``."""
    if scheme == SCHEME_V2:
        return _sign_v2(report, host_key)
    if scheme != SCHEME:
        raise ValueError('signature scheme %r; accepted: %s'
                         % (scheme, ', '.join(SCHEMES)))
    digest = hmac.new(host_key.encode('utf-8'), canonical(report),
                      hashlib.sha256).hexdigest()
    return '%s:%s' % (SCHEME, digest)


def tail_digest(report):
    """The hex SHA-256 of the report's tail fields (``TAIL``)."""
    tail = {k: report[k] for k in TAIL if k in report}
    return hashlib.sha256(canonical(tail)).hexdigest()


def split(report):
    """(head, counts) of the report dict: the head without the ``TAIL``
    fields, ``counts`` the length of each tail field it has (a list).
    """
    head = {k: v for k, v in report.items() if k not in TAIL}
    counts = {k: len(report[k]) for k in TAIL
              if isinstance(report.get(k), (list, tuple))}
    return head, counts


def _counts_text(report, counts):
    if counts is None:     # a whole report: count its tail
        counts = split(report)[1]
    # -1: absent or not a list (a head's counts are checked by its reader)
    return ','.join(str(counts[k]) if type(counts.get(k)) is int
                    else '-1' for k in TAIL)


def _v2_message(report, digest, counts=None):
    # head: every field but the tail's, which count by their length
    head = {k: v for k, v in report.items() if k not in TAIL}
    counts = _counts_text(report, counts)
    return b''.join((_V2_CONTEXT, canonical(head), b'\x00',
                     counts.encode('ascii'), b'\x00',
                     digest.encode('ascii')))


def _sign_v2(report, host_key):
    digest = tail_digest(report)
    mac = hmac.new(host_key.encode('utf-8'), _v2_message(report, digest),
                   hashlib.sha256).hexdigest()
    return '%s:%s:%s' % (SCHEME_V2, digest, mac)


def _is_hex64(text):
    return len(text) == 64 and _HEX.issuperset(text)


def _verify_v2(report, signature, host_key, whole, counts):
    parts = signature.split(':')
    if len(parts) != 3 or not _is_hex64(parts[1]) or \
            not _is_hex64(parts[2]):
        return False
    _, digest, mac = parts
    if counts is not None and any(k in report for k in TAIL):
        return False    # a head with a tail in it: neither form
    expected = hmac.new(host_key.encode('utf-8'),
                        _v2_message(report, digest, counts),
                        hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, mac):
        return False
    return (not whole or counts is not None or
            hmac.compare_digest(tail_digest(report), digest))


def verify(report, signature, host_key, whole=True, counts=None):
    """True if ``signature`` is ``report``'s under ``host_key``.

    ``whole=False`` (a reader that drops the tail, ``TAIL``): a v2
    signature is checked without re-encoding the tail; the tail's digest
    is taken as signed. A v1 signature always covers the whole report.
    ``counts`` (a dict, ``split``'s): ``report`` is a head-only message
    with those tail counts; only a v2 signature verifies it.
    """
    if not isinstance(signature, str) or not isinstance(report, dict):
        return False
    if counts is not None and not isinstance(counts, dict):
        return False
    try:
        if signature.startswith(SCHEME_V2 + ':'):
            return _verify_v2(report, signature, host_key, whole, counts)
        if counts is not None or not signature.startswith(SCHEME + ':'):
            return False
        expected = sign(report, host_key)
    except _UNENCODABLE:
        # not JSON-serialisable: cannot have been signed by an agent
        return False
    return hmac.compare_digest(expected.encode('ascii'),
                               signature.encode('ascii', 'replace'))


def why_rejected(report, signature, master_key, whole=True, counts=None):
    """None if ``signature`` binds ``report`` to its host, else the reason.

    ``whole``, ``counts``: as for ``verify``.
    """
    if signature is None:
        return 'unsigned (the scheduler requires signed reports)'
    host = report.get('host') if isinstance(report, dict) else None
    if not isinstance(host, str) or not host:
        return 'no host to check the signature against'
    try:
        host.encode('utf-8')
    except UnicodeError:       # a lone surrogate, e.g. JSON's "\ud800"
        return 'a host name that is not valid Unicode text'
    if not verify(report, signature, derive_host_key(master_key, host),
                  whole=whole, counts=counts):
        return 'bad signature for host %s' % host
    return None
