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
# Cython declarations for disk.py (the compiled build; see compiled.py).
cimport cython

from iosched.simulator cimport events
from iosched.simulator cimport throttle


@cython.final
cdef class Request:
    cdef public GuestDisk gdisk
    cdef public object nbytes, write, t_submit, done_cb


@cython.final
cdef class DiskDevice:
    cdef public events.EventLoop loop
    cdef public object rng, spec, busy, fifo, _done_cb

    cpdef submit(self, Request req)
    cpdef _start(self, Request req)


@cython.final
cdef class GuestDisk:
    cdef public object name
    cdef public events.EventLoop loop
    cdef public DiskDevice device
    cdef public object iotune
    cdef public throttle.Throttle throttle
    cdef public tuple queues
    cdef public object gen, rd_reqs, wr_reqs, rd_bytes, wr_bytes
    cdef public object total_time_us, lat_t, lat_v
    cdef public bint alive
    cdef public object _timer_cb, hist_bounds, hist

    cpdef submit(self, nbytes, write, done_cb)
    cpdef _kick(self, write)
    cpdef complete(self, Request req)
