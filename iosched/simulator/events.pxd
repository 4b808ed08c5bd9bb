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
# Cython declarations for events.py (the compiled build; see compiled.py).
cimport cython


cpdef double expovariate(random, double lambd) except? -1.0


@cython.locals(tx=cython.longlong, ty=cython.longlong, sx=cython.longlong,
               sy=cython.longlong)
cdef inline bint _before(tuple x, tuple y) except -1


@cython.locals(pos=cython.Py_ssize_t, parentpos=cython.Py_ssize_t,
               parent=tuple)
cpdef heap_push(list heap, tuple item)


@cython.locals(pos=cython.Py_ssize_t, parentpos=cython.Py_ssize_t,
               child=cython.Py_ssize_t, right=cython.Py_ssize_t,
               end=cython.Py_ssize_t, last=tuple, top=tuple, parent=tuple)
cpdef tuple heap_pop(list heap)


@cython.final
cdef class EventLoop:
    cdef public long long now
    cdef public list heap
    cdef public object _seq
    cdef public long long processed

    cpdef at(self, t_us, callback, a=*, b=*)

    @cython.locals(heap=list, n=cython.Py_ssize_t, ev=tuple, t=cython.longlong)
    cpdef run_until(self, long long t_us)
