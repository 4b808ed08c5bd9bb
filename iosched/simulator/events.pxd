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


@cython.final
cdef class EventLoop:
    cdef public long long now
    cdef public list heap
    cdef public object _seq
    cdef public long long processed

    cpdef at(self, t_us, callback, a=*, b=*)

    @cython.locals(heap=list, n=cython.Py_ssize_t, ev=tuple)
    cpdef run_until(self, t_us)
