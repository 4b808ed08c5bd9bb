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

"""Names of the QoS spec keys cinder_qos may emit, and their value domains.

Two families of keys go into one Cinder QoS spec (consumer ``front-end``):

* ``FRONTEND_KEYS``: the only keys Nova's libvirt volume driver copies into
  the guest's ``<iotune>`` (the six ``RATE_KEYS``, their ``_max`` bursts
  and ``size_iops_sec``); also the keys the agent writes live. They are a
  static ceiling that still holds when the iosched host agent is down.
* ``IOSCHED_KEYS``: the SLO itself (``iosched:*``). Nova ignores them; the
  host agent reads them back (``iosched.contract.slo.SLO.from_specs``).

Example spec for ``120iops,60ms`` (see ``docs/slo.md``)::

    consumer=front-end
    total_iops_sec=400  size_iops_sec=16384
    iosched:min_iops=120  iosched:latency_ms=60  iosched:latency_stat=mean
    iosched:ref_io_bytes=16384  iosched:class=latency
    iosched:window_s=1  iosched:tolerance=0.05
"""

# NOTE(iosched): mirrored from the local list ``tune_opts`` in
# ``LibvirtBaseVolumeDriver.get_config()`` of
# ``nova/virt/libvirt/volume/volume.py`` (the same 13 keys since Rocky).
# Nova copies each of these into ``disk_<key>`` of the libvirt disk config
# and silently drops every other key, including the ``*_max_length`` keys
# that libvirt and QEMU would accept. tests/nova/test_cinder_qos_keys.py
# checks this tuple against the installed Nova.
# The six rates (bytes and I/O operations per second: total, read, write);
# Cinder's per-GB keys are ``<rate>_per_gb`` (qos_attach), QEMU's burst
# keys ``<rate>_max`` and ``<rate>_max_length``.
RATE_KEYS = (
    'total_bytes_sec', 'read_bytes_sec', 'write_bytes_sec',
    'total_iops_sec', 'read_iops_sec', 'write_iops_sec',
)
SIZE_IOPS_SEC = 'size_iops_sec'
# Nova's 13: the rates, their bursts and the operation size, in this order.
FRONTEND_KEYS = (RATE_KEYS + tuple(k + '_max' for k in RATE_KEYS)
                 + (SIZE_IOPS_SEC,))

# Values of a QoS spec's ``consumer`` (cinder/volume/qos_specs.py). Cinder
# hands the spec to Nova, in connection_info['data']['qos_specs'], only for
# 'front-end' and 'both'.
CONSUMERS = ('front-end', 'back-end', 'both')
FRONTEND_CONSUMER = 'front-end'
# The consumers whose spec reaches the host (Nova's <iotune>, the agent).
HOST_CONSUMERS = ('front-end', 'both')
CONSUMER_KEY = 'consumer'

PREFIX = 'iosched:'

# B: throughput floor, in IOPS of REF_IO_BYTES-sized operations. Required.
MIN_IOPS = PREFIX + 'min_iops'
# B as the admin gave it when it was a bandwidth, in bytes/s. Optional.
MIN_BYTES_SEC = PREFIX + 'min_bytes_sec'
# L: latency target, in milliseconds. Required.
LATENCY_MS = PREFIX + 'latency_ms'
# Which statistic of the per-request latency L bounds (LATENCY_STATS).
LATENCY_STAT = PREFIX + 'latency_stat'
# S: request size, in bytes, that counts as one operation (size_iops_sec).
REF_IO_BYTES = PREFIX + 'ref_io_bytes'
# 'latency' or 'throughput' (CLASSES): burst shaping and agent treatment.
CLASS = PREFIX + 'class'
# N: the guest's expected outstanding requests. Optional.
EXPECTED_QD = PREFIX + 'expected_qd'
# Measurement and control window of the agent, in seconds.
WINDOW_S = PREFIX + 'window_s'
# Fraction of windows allowed to miss the SLO, in [0, 1).
TOLERANCE = PREFIX + 'tolerance'

IOSCHED_KEYS = (
    MIN_IOPS, MIN_BYTES_SEC, LATENCY_MS, LATENCY_STAT, REF_IO_BYTES, CLASS,
    EXPECTED_QD, WINDOW_S, TOLERANCE,
)
REQUIRED_IOSCHED_KEYS = (MIN_IOPS, LATENCY_MS)

# Statistics accepted for L: the mean (what the Flubber paper checks,
# computed from counters) and quantiles of the per-request latency, each
# the q of ``iosched.contract.stats`` (nearest rank; from a latency
# histogram on the agent: ``slo.LATENCY_HIST_BOUNDS_NS``).
STAT_MEAN = 'mean'
STAT_QUANTILES = {'p50': 0.5, 'p90': 0.9, 'p95': 0.95, 'p99': 0.99,
                  'p999': 0.999, 'max': 1.0}
LATENCY_STATS = (STAT_MEAN,) + tuple(STAT_QUANTILES)
LATENCY_CLASS = 'latency'
THROUGHPUT_CLASS = 'throughput'
CLASSES = (LATENCY_CLASS, THROUGHPUT_CLASS)


def is_iosched_key(key):
    """Return True if ``key`` is in the ``iosched:`` namespace."""
    return key.startswith(PREFIX)
