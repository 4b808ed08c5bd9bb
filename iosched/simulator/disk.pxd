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
    cdef public long long nbytes, t_submit
    cdef public bint write
    cdef public object done_cb


@cython.final
cdef class DiskDevice:
    cdef public events.EventLoop loop
    cdef public object rng, spec, fifo, _done_cb, _random
    cdef public long long busy, parallelism, service_us
    cdef public double per_byte_ns
    cdef public bint exp

    cpdef submit(self, Request req)
    @cython.locals(mean=cython.double, d=cython.longlong)
    cpdef _start(self, Request req)


@cython.final
cdef class GuestDisk:
    cdef public object name
    cdef public events.EventLoop loop
    cdef public DiskDevice device
    cdef public object iotune
    cdef public throttle.Throttle throttle
    cdef public tuple queues
    cdef public long long gen, rd_reqs, wr_reqs, rd_bytes, wr_bytes
    cdef public long long total_time_us
    cdef public object lat_t, lat_v
    cdef public bint alive
    cdef public object _timer_cb, hist_bounds, hist

    @cython.locals(now=cython.longlong, wait=cython.longlong, req=Request)
    cpdef submit(self, long long nbytes, bint write, done_cb)
    @cython.locals(now=cython.longlong, wait=cython.longlong, req=Request)
    cpdef _kick(self, bint write)
    @cython.locals(now=cython.longlong, lat=cython.longlong)
    cpdef complete(self, Request req)
