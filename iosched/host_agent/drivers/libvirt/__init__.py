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
"""The libvirt driver: real guests on a KVM/QEMU compute node.

* ``domain_xml``: pure parsing of a domain's XML (Nova metadata, disks,
  NICs, pinning);
* ``threads``: vCPU and emulator thread ids from procfs (read only);
* ``tracing``: exact I/O event timestamps from the ``sched:sched_wakeup``
  tracepoint on the vCPU threads;
* ``resolve``: instance -> domain, QEMU pid, thread ids, cgroups (what
  the knob writers ask);
* ``lsvm_probes``: deadline admission and the wake-up self-test;
* ``driver``: ``LibvirtDriver``, the
``iosched.host_agent.drivers.base.Driver``.

``libvirt`` is imported optionally: without libvirt-python, building the
driver fails with a clear message and nothing else is affected.
"""
