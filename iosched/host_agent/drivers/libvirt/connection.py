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
"""The libvirt driver's connection: kept, lost, reopened (issue 15, 27).

A mixin of ``driver.LibvirtDriver``, which holds ``conf``, ``conn``,
``_lost_at`` and ``_xml`` (the domain objects of the current
connection). libvirt-python's connection does not survive a libvirtd
restart: ``_domains`` reopens a connection libvirtd dropped, once per
call, so the agent recovers on its first tick after libvirtd answers
again; ``_raise_if_lost`` turns an error from a connection that died in
the middle of a tick into ``DriverUnavailable``, so that tick is an
outage rather than a tick with data missing (docs/reliability.md §4b).
"""

import time

from oslo_log import log as logging

from iosched.host_agent.drivers import base

try:
    import libvirt
except ImportError:   # as in driver.py: from_conf says why not
    libvirt = None

LOG = logging.getLogger(__name__)


class Connection(object):

    def _domains(self):
        """The active domains. A connection libvirtd dropped (libvirtd
        restarted: running guests stay up) is reopened here, once per
        call, so the agent recovers on its first tick after libvirtd
        answers again. DriverError while it does not.
        """
        flags = libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
        if self.conn is not None:
            try:
                return self.conn.listAllDomains(flags)
            except libvirt.libvirtError as e:
                if self._alive():
                    raise base.DriverError('cannot list domains: %s' % e)
                self._lost(e)
        self._reopen()
        try:
            return self.conn.listAllDomains(flags)
        except libvirt.libvirtError as e:
            raise base.DriverError('cannot list domains: %s' % e)

    def _alive(self):
        try:
            return bool(self.conn.isAlive())
        except libvirt.libvirtError:
            return False

    def _lost(self, why):
        uri = self.conf.libvirt.uri
        LOG.warning('connection to libvirt at %s lost (%s); reconnecting '
                    'at every tick, knobs stay as they are meanwhile', uri,
                    why)
        self._lost_at = time.monotonic()
        try:
            self.conn.close()
        except libvirt.libvirtError:
            pass
        self.conn = None
        # Domain objects belong to the connection that made them.
        self._xml.clear()

    def _raise_if_lost(self, error):
        """Raise DriverUnavailable when ``error`` came from a connection
        libvirtd dropped in the middle of a call (killed or restarting):
        the tick is an outage, not a tick with some data missing (every
        domain skipped, no counters), which the policies would act on.
        An error on a live connection returns: one domain's problem.
        """
        if self.conn is None or self._alive():
            return
        self._lost(error)
        raise base.DriverUnavailable(
            'libvirt at %s does not answer (%s); trying again next tick'
            % (self.conf.libvirt.uri, error))

    def _reopen(self):
        uri = self.conf.libvirt.uri
        try:
            self.conn = libvirt.open(uri)
        except libvirt.libvirtError as e:
            raise base.DriverUnavailable(
                'libvirt at %s does not answer (%s); trying again next tick'
                % (uri, e))
        if self._lost_at is not None:
            LOG.info('reconnected to libvirt at %s after %.1f s', uri,
                     time.monotonic() - self._lost_at)
        self._lost_at = None
