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
"""iosched testbed: real libvirt/QEMU (TCG) guests for the host agent.

Tiny guests (Debian kernel + busybox initramfs + the static ``iosched-guest``
program) run request/response, CPU-burning, disk or idle workloads and talk
to the host over a virtio-serial port. See ``docs/testbed.md``.

API (``iosched.testbed.testbed``): ``Testbed(workdir)`` with ``build()``,
``up(specs, pin=None)``, ``guests()``, ``status()``, ``down()``;
``Guest`` with ``rr()``, ``burn_rate()``, ``disk_rate()``.
CLI: ``python -m iosched.testbed {build,up,down,status}``.
"""
