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

"""The ``[cinder_qos]`` options: how SLO tuples become QoS spec values.

The defaults are the constants ``iosched.cinder_qos.translate`` and
``iosched.contract.slo`` use when called without arguments, so the CLI, the
agent and a bare ``translate(slo)`` agree. Example::

    [cinder_qos]
    headroom = 1.5
    default_ref_io_bytes = 16384
    default_expected_qd = 16
    latency_class_threshold = 16
"""

from oslo_config import cfg

from iosched.cinder_qos import translate
from iosched.contract import opt_types
from iosched.contract import slo

GROUP = cfg.OptGroup(
    name='cinder_qos',
    title='SLO volume types',
    help='Translation of <throughput, latency> SLOs into Cinder QoS specs.')

OPTS = [
    cfg.FloatOpt(
        'headroom',
        default=translate.DEFAULT_HEADROOM,
        min=1.0,
        max=10.0,
        help="""
Headroom factor h of the static front-end ceiling.

The QoS spec caps a volume at ``total_iops_sec = ceil(h * max(B, N / L))``
operations per second, where B is the SLO throughput, L the latency target
and N the expected outstanding requests. The cap still applies when the
iosched host agent is down, so it must leave room above the SLO: a cap at
exactly B, or below N / L (Little's law), makes the SLO unreachable. The
Flubber digest suggests 1.5 to 2.

Possible values:

* A dimensionless factor from 1.0 (cap exactly at the SLO) to 10.0.

Related options:

* ``[cinder_qos] default_expected_qd``
"""),
    cfg.IntOpt(
        'default_ref_io_bytes',
        default=slo.DEFAULT_REF_IO_BYTES,
        min=slo.MIN_REF_IO_BYTES,
        max=slo.MAX_REF_IO_BYTES,
        help="""
Reference request size S, in bytes, when an SLO does not give ``ref_io``.

One operation of the SLO throughput, and of QEMU's throttle through
``size_iops_sec``, is S bytes: a larger request counts as size / S
operations. A bandwidth SLO such as ``40MB/s`` is converted to IOPS of S
bytes. The default, 16 KiB, is sysbench's block size in the Flubber paper.

Possible values:

* An integer number of bytes from 512 (one sector) to 67108864 (64 MiB).

Related options:

* None
"""),
    cfg.IntOpt(
        'default_expected_qd',
        default=translate.DEFAULT_EXPECTED_QD,
        min=1,
        max=65536,
        help="""
Expected outstanding requests N of a guest whose SLO does not give ``qd``.

By Little's law (N = X * R), a guest that keeps N requests in flight and
must see latency L needs at least N / L IOPS, so the ceiling is never set
below that. Over-estimating N only loosens the ceiling; under-estimating
it makes the SLO unreachable. 16 is the larger thread count of the Flubber
paper's workloads and the digest's rule ``max(B, 16 / L)``.

Possible values:

* An integer number of requests from 1 to 65536.

Related options:

* ``[cinder_qos] headroom``
* ``[cinder_qos] latency_class_threshold``
"""),
    cfg.FloatOpt(
        'latency_class_threshold',
        default=translate.DEFAULT_LATENCY_CLASS_THRESHOLD,
        min=0.001,
        help="""
Boundary between the latency and throughput classes, in requests.

B * L (L in seconds) is, by Little's law, the number of requests an SLO
keeps in flight when it is just met. An SLO with B * L below this value
is class ``latency``: it gets no burst key, so QEMU's default 100 ms
bucket smooths its arrivals. Otherwise it is class ``throughput`` and gets
``total_iops_sec_max`` equal to ``total_iops_sec`` (a 1 s bucket). An SLO
may force its class with ``class=``.

Possible values:

* A positive number of outstanding requests (default 16).

Related options:

* ``[cinder_qos] default_expected_qd``
"""),
]


opt_types.harden(OPTS)     # no NaN nor infinite headroom or threshold


def register_opts(conf):
    """Register the ``[cinder_qos]`` group and options on ``conf``."""
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    """For oslo-config-generator (entry point ``cinder_qos``)."""
    return [(GROUP.name, OPTS)]
