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
# Cython declarations for cpu_balance.py (the compiled build; see
# compiled.py).
cimport cython

from iosched.simulator cimport cpu_wakeup
from iosched.simulator.eevdf cimport Entity, PCpu


cdef class BalanceMixin(cpu_wakeup.WakeupMixin):
    @cython.locals(q=PCpu, w=object, lag=object, rel_deadline=object,
                   v_dst=object)
    cpdef _migrate_waiting(self, PCpu src, Entity x, PCpu dst, long long now)
    @cython.locals(q=PCpu, src=PCpu, x=Entity, cand=Entity, nr=cython.long,
                   best_nr=cython.long)
    cpdef _idle_pull(self, PCpu p, long long now)
    cpdef _after_arrival(self, PCpu dst, Entity x, long long now)
