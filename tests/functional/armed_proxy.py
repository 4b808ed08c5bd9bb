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
"""A proxy that injects a fault at an exact point of the agent's tick.

``ArmedProxy(inner, method, fire, when=None)`` passes every attribute of
``inner`` through; once ``armed`` is set, the first call of ``method``
(for which ``when(args)`` holds, when given) runs ``fire()`` first (a
domain destroyed, libvirtd killed, a guest booted), then the call goes
on to ``inner``. ``fired`` counts the faults injected. Used by the
real-guest fault tests (``test_libvirt_agent``, ``test_libvirt_faults``).
"""


class ArmedProxy(object):

    def __init__(self, inner, method, fire, when=None):
        self._inner, self._method = inner, method
        self._fire, self._when = fire, when
        self.armed = False
        self.fired = 0

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name != self._method:
            return attr

        def call(*args, **kwargs):
            if self.armed and (self._when is None or self._when(args)):
                self.armed = False
                self.fired += 1
                self._fire()
            return attr(*args, **kwargs)
        return call
