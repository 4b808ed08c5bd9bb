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
"""Options of the libvirt driver."""

from oslo_config import cfg

GROUP = cfg.OptGroup('libvirt', title='iosched libvirt driver',
                     help='How the agent reaches and reads libvirt guests.')

OPTS = [
    cfg.StrOpt('uri', default='qemu:///system',
               help="""
libvirt connection URI of the local hypervisor.

Possible values:

* A libvirt URI, e.g. ``qemu:///system``.
"""),
    cfg.StrOpt('guest_pcpus',
               help="""
pCPUs guests run on (Nova's ``[compute] cpu_shared_set``), as a CPU list.

Possible values:

* A list like ``2-7,10``. Unset: every online CPU.
"""),
    cfg.BoolOpt('trace_wakeups', default=True,
                help="""
Record exact wake-up timestamps of vCPU threads (``sched:sched_wakeup``
tracepoint, a private tracefs instance) for the ISACS I/O strength.

When off or unavailable, I/O events are estimated from the threads'
voluntary context switches (see docs/architecture.md, I/O strength).
"""),
    cfg.BoolOpt('latency_histograms', default=True,
                help="""
Ask QEMU for a latency histogram per guest disk (QMP
``block-latency-histogram-set``, read with ``query-blockstats`` every tick)
so that SLOs on a latency percentile (p99, ...) are judged on the
percentile, not the mean.

The agent reaches QMP through libvirt's monitor passthrough, which logs
"tainted: custom-monitor" once per domain; nothing changes in the guest.
When off or refused, percentile SLOs are judged on the mean latency (a
note says so).
"""),
    cfg.BoolOpt('virtio_request_counts', default=False,
                help="""
Count the requests of a guest's virtio devices other than disks and NICs
(the virtio-serial channel, ...) from QEMU's virtqueues (QMP
``x-query-virtio-queue-status``, QEMU >= 7.2) for ISACS's I/O signal.

Disks (block stats) and NICs (interface stats) are always counted from
libvirt's standard statistics. Requests replace wake-ups as a vCPU's I/O
events when the vCPU wakes less than ``MIN_WAKEUPS_PER_REQUEST`` times per
request (a vCPU that never sleeps takes its I/O without waking). The
agent reaches QMP through libvirt's monitor passthrough, which logs
"tainted: custom-monitor" once per domain; nothing changes in the guest.
Off: the channel's requests are not seen.
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
