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
# Cython declarations for throttle.py (the compiled build; see
# compiled.py).
cimport cython


@cython.final
cdef class _Bucket:
    cdef public double avg, max, level, burst_level
    cdef public long long length

    cpdef leak(self, long long dt_us)
    @cython.locals(size=cython.double, extra=cython.double)
    cpdef long wait_us(self) except? -1
    cpdef add(self, double amount)


@cython.final
cdef class Throttle:
    cdef public list buckets
    cdef public long long op_size, last_us
    cdef public tuple touched

    @cython.locals(bkt=_Bucket, dt=cython.longlong, wait=cython.long,
                   w=cython.long)
    cpdef long wait_us(self, bint is_write, long long now_us) except? -1
    @cython.locals(bkt=_Bucket, units=cython.double)
    cpdef account(self, bint is_write, long long nbytes)
