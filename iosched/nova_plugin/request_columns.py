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
"""A request's host rows and the columns the iosched classes hand on
(``request_view``): each host's figures (``Row``), the hosts a class kept
with their rows and counters (``Columns``), and the counter stamps a
later class checks them by. No nova, no I/O.
"""

import itertools
import operator

from iosched.nova_plugin import inflight


class Row(object):
    """One host's figures for the request (``prep`` None: no fresh
    report).
    """

    __slots__ = ('host_state', 'num', 'used', 'prep', 'exact', 'profile',
                 '_pending')

    def __init__(self, host_state, num, used, prep, exact, profile=None):
        self.host_state = host_state
        self.num = num
        self.used = used
        self.prep = prep
        self.exact = exact
        self.profile = profile
        self._pending = None

    def pending(self, profile):
        """The in-flight estimate (``prepared.pendings``), on first use
        (it takes the host's in-flight baseline).
        """
        found = self._pending
        if found is None or profile != self.profile:
            prep = self.prep
            self.profile = profile
            found = self._pending = None if prep is None else (
                inflight.combine(self.exact, inflight.observe_node(
                    prep.bases, self.host_state), profile))
        return found


_PREP = operator.attrgetter('prep')
_HOST = operator.attrgetter('host')


class Columns(object):
    """The figures of a list of hosts as columns: ``hosts``, their
    ``counts`` (each host's ``_STAMP`` as read: ``(num_instances,
    vcpus_used, host, aggregates)``, None when a host lacks one),
    ``rows``, ``preps`` and, on first use, ``pendings``.
    """

    __slots__ = ('hosts', 'counts', 'rows', 'preps', 'profile', '_pendings')

    def __init__(self, hosts, counts, rows, profile, preps=None,
                 pendings=None):
        self.hosts = hosts
        self.counts = counts
        self.rows = rows
        self.profile = profile
        self.preps = list(map(_PREP, rows)) if preps is None else preps
        self._pendings = pendings

    def pendings(self):
        """Each row's ``pending`` (on first use, as ``Row.pending``)."""
        found = self._pendings
        if found is None:
            profile = self.profile
            found = self._pendings = [row.pending(profile)
                                      for row in self.rows]
        return found

    def narrow(self, oks):
        """The columns of the hosts whose ``oks`` entry is true."""
        pendings = self._pendings
        return Columns(
            list(itertools.compress(self.hosts, oks)),
            None if self.counts is None else list(
                itertools.compress(self.counts, oks)),
            list(itertools.compress(self.rows, oks)), self.profile,
            list(itertools.compress(self.preps, oks)),
            None if pendings is None else list(
                itertools.compress(pendings, oks)))


# What a row's validity is checked on, read in one pass: the counters the
# in-flight estimate reads, the host (its report's key) and the aggregates
# (the weigher's multiplier)
_STAMP = operator.attrgetter('num_instances', 'vcpus_used', 'host',
                             'aggregates')
_STAMP_HOST = operator.itemgetter(2)
_STAMP_AGGREGATES = operator.itemgetter(3)


def _stamps_of(host_states):
    """Each host's ``_STAMP``; None if one lacks an attribute of it."""
    try:
        return list(map(_STAMP, host_states))
    except AttributeError:
        return None


def in_aggregates(cols):
    """Whether a host of ``cols`` is in an aggregate (None: not known)."""
    if cols is None or cols.counts is None:
        return None
    return any(map(_STAMP_AGGREGATES, cols.counts))
