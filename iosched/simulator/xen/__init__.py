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
"""Faithful models of the Xen-side schedulers of the seed papers.

Each is a ``iosched.simulator.sched_base.Scheduler`` chosen with
``HostSpec(scheduler=<Spec>())``:

* ``credit``: Xen Credit (Credit1): 30 ms slices, BOOST/UNDER/OVER
  (its accounting in ``credit_accounting``, placement and stealing in
  ``credit_placement``);
* ``credit2``: Xen Credit2 (4.12): credit-ordered run-queues, resets
  (run-queue membership and tickles in ``credit2_placement``,
  balance_load in ``credit2_balance``);
* ``isacs``: ISACS on Credit2 (seed 000): Eqs. 1-4, concealing,
  CPU-BOOST state, Algorithms 1 and 2 (the end of a round in
  ``isacs_realloc``, the math in ``isacs_math``);
* ``vslicer``: vSlicer on Credit (seed 001 ch. 2): Algorithm 1;
* ``vturbo``: vTurbo on Credit (seed 001 ch. 3): turbo cores, two-pool
  accounting (Algorithm 3).
"""

from iosched.simulator.xen.specs_credit import CreditSpec  # noqa: E402,F401
from iosched.simulator.xen.specs_credit import VSlicerSpec  # noqa: E402,F401
from iosched.simulator.xen.specs_credit import VTurboSpec  # noqa: E402,F401
from iosched.simulator.xen.specs_credit2 import Credit2Spec  # noqa: E402,F401
from iosched.simulator.xen.specs_credit2 import IsacsSpec  # noqa: E402,F401
