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
"""The disk capacity the cloud's agent is given: measured, not assumed.

``[host_agent] disk_capacity_iops`` (DevStack: ``IOSCHED_DISK_CAPACITY_IOPS``)
is the capacity of the device the node's volumes share, in I/Os of the
SLOs' reference size (16 KiB): the SLO loop's first cut and
``SloCapacityFilter``'s bound. Here that device is the one-node Ceph, so
it is measured once per cluster, as docs/operator.md tells an operator to:
``rbd bench`` with random 16 KiB reads, ``THREADS`` in flight, over an
image written through first (reads of never-written objects reach no
device), then the image is removed. The figure is kept in
``<ceph state>/capacity.json``: ``up`` on a running cloud reuses it.
"""

import json
import os
import re
import subprocess

from iosched.cloud import ceph as ceph_mod
from iosched.contract import slo as slo_mod

IMAGE = 'iosched-capacity'
IMAGE_MIB = 256
READ_MIB = 256
THREADS = 8
FILE = 'capacity.json'
_OPS_RE = re.compile(r'ops/sec:\s*([0-9.]+)')


class CapacityError(RuntimeError):
    pass


def parse_ops_per_s(text):
    """The ``ops/sec`` of ``rbd bench``'s summary line (its last)."""
    found = _OPS_RE.findall(text)
    if not found:
        raise CapacityError('no "ops/sec:" in rbd bench output: %r'
                            % text[-300:])
    return float(found[-1])


def _rbd(conf, *args, timeout=300):
    res = subprocess.run(['rbd', '-c', conf] + list(args),
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode:
        raise CapacityError('rbd %s: %s' % (' '.join(args[:2]),
                                            (res.stderr or '').strip()))
    return res.stdout


def measure(ceph_dir, pool=ceph_mod.POOL):
    """{'iops': random 16 KiB reads per second, 'method': how}."""
    conf = os.path.join(ceph_dir, 'ceph.conf')
    spec = '%s/%s' % (pool, IMAGE)
    if _exists(conf, pool):                 # left by a killed run
        _rbd(conf, 'rm', '--no-progress', spec, timeout=120)
    _rbd(conf, 'create', '--size', '%dM' % IMAGE_MIB, spec)
    try:
        _rbd(conf, 'bench', '--io-type', 'write', '--io-size', '4M',
             '--io-threads', '4', '--io-total', '%dM' % IMAGE_MIB,
             '--io-pattern', 'seq', spec)
        ref = slo_mod.DEFAULT_REF_IO_BYTES
        out = _rbd(conf, 'bench', '--io-type', 'read', '--io-size',
                   str(ref), '--io-threads', str(THREADS), '--io-total',
                   '%dM' % READ_MIB, '--io-pattern', 'rand', spec)
    finally:
        _rbd(conf, 'rm', '--no-progress', spec, timeout=120)
    return {'iops': round(parse_ops_per_s(out), 1),
            'method': 'rbd bench: random %d KiB reads, %d in flight, %d MiB '
                      'over a %d MiB image written through' % (
                          slo_mod.DEFAULT_REF_IO_BYTES // 1024, THREADS,
                          READ_MIB, IMAGE_MIB)}


def _exists(conf, pool):
    return IMAGE in _rbd(conf, 'ls', pool).split()


def ensure(ceph_dir):
    """The cluster's measured capacity (measured at its first call)."""
    path = os.path.join(ceph_dir, FILE)
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        pass
    got = measure(ceph_dir)
    with open(path, 'w') as fh:
        json.dump(got, fh)
    return got
