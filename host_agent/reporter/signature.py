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

where ``canonical`` is the report dict as compact JSON with sorted keys.
A scheduler derives the key of the host a report *claims* to come from and
compares the signatures in constant time. A node that leaks its key can
speak only for itself; a bus client with no key cannot speak for any host,
invented host names included. ``iosched-report-key --host NAME`` prints a
host's key from the scheduler's configuration (operator guide).

The signature covers ``ts`` and ``seq``, so a replayed report is an old
one: the store ignores it as older than the held report.

Standard library only: nova-scheduler imports this module.
"""

import hashlib
import hmac
import json

SCHEME = 'hmac-sha256'
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


def canonical(report):
    """The bytes a signature covers: compact JSON with sorted keys."""
    return json.dumps(report, sort_keys=True, separators=(',', ':'),
                      ensure_ascii=True, allow_nan=True).encode('ascii')


def sign(report, host_key):
    """The signature string of the report dict ``report``."""
    digest = hmac.new(host_key.encode('utf-8'), canonical(report),
                      hashlib.sha256).hexdigest()
    return '%s:%s' % (SCHEME, digest)


def verify(report, signature, host_key):
    """True if ``signature`` is ``report``'s under ``host_key``."""
    if not isinstance(signature, str) or not signature.startswith(
            SCHEME + ':'):
        return False
    try:
        expected = sign(report, host_key)
    except (TypeError, ValueError):
        # not JSON-serialisable: cannot have been signed by an agent
        return False
    return hmac.compare_digest(expected.encode('ascii'),
                               signature.encode('ascii', 'replace'))


def why_rejected(report, signature, master_key):
    """None if ``signature`` binds ``report`` to its host, else the reason."""
    if signature is None:
        return 'unsigned (the scheduler requires signed reports)'
    host = report.get('host') if isinstance(report, dict) else None
    if not isinstance(host, str) or not host:
        return 'no host to check the signature against'
    if not verify(report, signature, derive_host_key(master_key, host)):
        return 'bad signature for host %s' % host
    return None
