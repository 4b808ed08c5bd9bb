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
    cdef public object length

    cpdef leak(self, dt_us)
    cpdef wait_us(self)
    cpdef add(self, amount)


@cython.final
cdef class Throttle:
    cdef public list buckets
    cdef public object op_size, last_us
    cdef public tuple touched

    @cython.locals(bkt=_Bucket)
    cpdef wait_us(self, is_write, now_us)
    @cython.locals(bkt=_Bucket)
    cpdef account(self, is_write, nbytes)
