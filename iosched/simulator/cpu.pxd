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
# Cython declarations for cpu.py (the compiled build; see compiled.py).
cimport cython

from iosched.simulator cimport cpu_bandwidth
from iosched.simulator.eevdf cimport Entity, PCpu


cdef long long VSCALE


cdef class Scheduler(cpu_bandwidth.BandwidthMixin):
    @cython.locals(e=Entity, d=cython.longlong)
    cpdef _update_curr(self, PCpu p, long long now)
    cpdef _settle(self, PCpu p, long long now)
    @cython.locals(p=PCpu)
    cpdef settle_all(self, long long now)
    cpdef _enqueue_waiting(self, PCpu p, Entity e, long long now)
    @cython.locals(start=cython.longlong)
    cpdef _set_next(self, PCpu p, Entity e, long long now,
                    long long delay=*)
    @cython.locals(e=Entity, d=cython.longlong, s=cython.longlong, t=cython.longlong,
                   left=cython.longlong, tick=cython.longlong, ts=cython.longlong)
    cpdef _arm(self, PCpu p, long long start)
    cpdef _dispatch(self, PCpu p, long long now, long long delay=*)
    @cython.locals(c=Entity)
    cpdef _preempt(self, PCpu p, Entity e, long long now)
    @cython.locals(e=Entity, best=Entity, now=cython.longlong)
    cpdef _on_cpu(self, PCpu p, long long gen)
    @cython.locals(x=Entity)
    cpdef wake(self, e, long long now, bint initial=*)
    @cython.locals(p=PCpu)
    cpdef _fair_enqueue(self, Entity e, long long now)
    @cython.locals(x=Entity, m=cython.longlong, v=object)
    cpdef _set_protect(self, PCpu p, Entity e)
