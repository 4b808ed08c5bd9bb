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
# Cython declarations for eevdf.py (the compiled build; see compiled.py).
# Times are C integers (microseconds); virtual times stay Python ints
# (``NO_VPROT`` and the products of the eligibility test exceed 64 bits).
cimport cython

from iosched.simulator cimport sched_base


cdef class PCpu


@cython.final
cdef class Entity(sched_base.Entity):
    cdef public long long lw, slice_us, slice_left
    cdef public object vslice, v, deadline
    cdef public bint protected
    cdef public object vprot
    cdef public PCpu cpu
    cdef public object vlag, dl, group
    cdef public bint throttled

    cpdef new_request(self)


@cython.final
cdef class PCpu:
    cdef public long id
    cdef public Entity curr
    cdef public list queue
    cdef public long long sum_w
    cdef public object sum_wv
    cdef public long long gen, last_update, ev_time
    cdef public object idle_v
    cdef public Entity dl_curr
    cdef public long long dl_gen

    cpdef enqueue(self, Entity e)
    cpdef dequeue(self, Entity e)

    @cython.locals(c=Entity)
    cpdef tuple totals(self)
    @cython.locals(w=object, s=object)
    cpdef avg_v(self)

    @cython.locals(c=Entity, best=Entity, x=Entity, w=object, s=object)
    cpdef pick(self, bint protect=*)


cpdef entity_lag(Entity e, avg_v, tick_us=*)
