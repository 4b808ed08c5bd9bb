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
# Cython declarations for workloads.py (the compiled build; see
# compiled.py).

cimport cython

from iosched.simulator cimport events
from iosched.simulator cimport sched_base


cdef class _Base:
    cdef public object work_left
    cdef public sched_base.Entity ent
    cdef public sched_base.Scheduler sched
    cdef public events.EventLoop loop
    cdef public object vm, rng, _random


cdef class IdleW(_Base):
    pass


cdef class CpuBoundW(_Base):
    pass


cdef class _Requests(_Base):
    cdef public double rate, jitter
    cdef public long long burst
    cdef public object queue, cur_arrival, _arrive_cb

    @cython.locals(gap=cython.double)
    cpdef _schedule_arrival(self, long long now)
    @cython.locals(j=cython.double, e=cython.double, b=cython.longlong)
    cpdef _draw_burst(self)


cdef class RequestResponseW(_Requests):
    pass


cdef class MixedW(_Requests):
    cdef public long long period, batch_add, batch_left
    cdef public object _period_cb

    cpdef _next_item(self)


cdef class DiskClosedLoopW(_Base):
    cdef public object gdisk
    cdef public long long nbytes, outstanding, cpu_per_io, pending
    cdef public double write_ratio
    cdef public object _done_cb

    cpdef _submit(self)


cdef class SleeperW(_Base):
    cdef public long long period, work, slack, target
    cdef public object _timer_cb

    cpdef _arm(self)
