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
"""Options of the vTurbo host-half policy, ``[host_agent_policy.vturbo]``."""

from oslo_config import cfg

VTURBO_GROUP = cfg.OptGroup(
    'host_agent_policy.vturbo', title='vTurbo host half: turbo pCPUs',
    help='Pins the I/O (QEMU emulator) threads of LSVM flavors and of '
         'flavors with iosched:turbo=true to turbo pCPUs with a 0.1 ms '
         'slice, and keeps guest vCPUs on the other pCPUs. Enable it by '
         'adding "vturbo" to [host_agent] policies and setting turbo_pcpus.')

VTURBO_OPTS = [
    cfg.ListOpt('turbo_pcpus', default=[], item_type=cfg.types.Integer(
        min=0), help="""
Host pCPU ids reserved as turbo pCPUs (vTurbo's turbo cores).

Empty (the default) leaves the policy inert. Must be a proper subset of the
pCPUs the agent manages; keep them out of Nova's cpu_dedicated_set. One is
enough for a few dozen LSVMs: their I/O threads run 0.1 ms at a time.

Possible values:

* A list of pCPU ids, e.g. ``3`` or ``3,7``.
"""),
    cfg.IntOpt('turbo_slice_us', default=100, min=100, max=100000,
               help="""
EEVDF slice of turbo VMs' I/O threads on turbo pCPUs, microseconds.

vTurbo's turbo quantum is 0.1 ms, the kernel's minimum slice.

Possible values:

* 100 to 100000.
"""),
    cfg.BoolOpt('pin_regular_vcpus', default=True, help="""
Pin every guest vCPU (except hw:cpu_policy=dedicated flavors, which Nova
pins) to the pCPUs that are not turbo pCPUs, so turbo pCPUs carry only I/O
threads. Off: vCPUs may still run on turbo pCPUs and delay the I/O threads.
"""),
    cfg.BoolOpt('charge_turbo', default=True, help="""
vTurbo's Algorithm 3: charge the CPU a turbo VM's I/O threads used on turbo
pCPUs to that VM. Its fair share of both pools less that turbo use is its
regular allowance, installed as its VM cgroup weight (``vm_weight`` x
allowance / fair share). Off: turbo pCPU time is free for the VM.
"""),
    cfg.IntOpt('vm_weight', default=100, min=1, max=10000, help="""
The VM cgroup weight (cgroup v2 cpu.weight scale) of a VM that used nothing
on turbo pCPUs; ``charge_turbo`` scales it down for turbo VMs.

Possible values:

* 1 to 10000 (100: the kernel's and libvirt's default).
"""),
]


def register_opts(conf):
    conf.register_group(VTURBO_GROUP)
    conf.register_opts(VTURBO_OPTS, group=VTURBO_GROUP)


def list_opts():
    return [(VTURBO_GROUP, VTURBO_OPTS)]
