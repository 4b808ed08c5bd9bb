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
# Cython declarations for sched_base.py (the compiled build; see
# compiled.py).


cdef class Entity:
    cdef public object id, vm, index, weight
    cdef public bint on_rq, running
    cdef public object last_cpu, allowed, wl
    cdef public long long run_us, wait_us, wait_start, wakeups, switches
    cdef public object io_events
    cdef public long long io_distinct, io_dropped
    cdef public bint alive

    cpdef allows(self, cpu_id)


cdef class Scheduler:
    cpdef wake(self, e, long long now, bint initial=*)
    cpdef io_event(self, Entity e, long long now)
