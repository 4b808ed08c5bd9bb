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
# Cython declarations for cpu_wakeup.py (the compiled build; see
# compiled.py). WakeupMixin is the first EEVDF class of cpu.Scheduler's
# chain: the scheduler's state is declared here, where the chain starts
# using it (cpu.Scheduler.__init__ sets it).
cimport cython

from iosched.simulator cimport events
from iosched.simulator cimport sched_base
from iosched.simulator.eevdf cimport Entity, PCpu


cdef class WakeupMixin(sched_base.Scheduler):
    cdef public object kernel
    cdef public bint exact, place_lag, preempt_short, parity_min
    cdef public long long tick_us, idle_exit, lag_tick_us, default_slice_us
    cdef public long long cost, balance_us, nr_waiting
    cdef public double dl_bw
    cdef public list dl_waiting, cpus
    cdef public events.EventLoop loop
    cdef public object _on_cpu_cb

    @cython.locals(cpus=list, p=PCpu, prev_ok=cython.bint)
    cpdef PCpu select_cpu(self, Entity e)
    @cython.locals(avg=object, lag=object, w=object)
    cpdef _place(self, PCpu p, Entity e)
    @cython.locals(c=Entity, best=Entity, w=object, s=object)
    cpdef _check_preempt(self, PCpu p, Entity e, long long now)
    @cython.locals(best=Entity, x=Entity, short=cython.bint, m=cython.longlong, v=object)
    cpdef _check_preempt_617(self, PCpu p, Entity e, Entity c,
                             long long now)


@cython.locals(best=PCpu, q=PCpu)
cdef PCpu _least_loaded(list cpus, ids)
