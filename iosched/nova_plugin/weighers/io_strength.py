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
"""IoStrengthWeigher: weigh hosts by the I/O strength they would carry.

The raw value is ``iosched.nova_plugin.scoring.score``: minus the I/O strength
per pCPU after placement, so with a positive multiplier (the default) hosts
with less I/O strength win and I/O-bound vCPUs spread across hosts; a negative
multiplier packs them. Config (an aggregate's metadata key of the same name
overrides the multiplier)::

    [iosched]
    io_strength_weight_multiplier = 1.0
    missing_report_weight = lowest
    inflight_vcpu_profile = mixed

A thin adapter: ``weigh_objects`` reads the request, the options and this
worker's state (``iosched.nova_plugin.state``), calls
``iosched.nova_plugin.weighing. weigh`` (every host at once; a host without a
fresh report gets the value ``scoring.missing_weights`` gives it over all the
hosts being weighed, because Nova normalises each weigher's raw values over
those hosts) and logs each host's raw value at DEBUG. Loading the class makes
the worker's state and starts its report listener.
"""

import logging as std_logging
import operator
import threading

import nova.conf
from nova.scheduler import utils
from nova.scheduler import weights
from oslo_log import log as logging

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import request_view
from iosched.nova_plugin import state
from iosched.nova_plugin import weighing

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


_AGGREGATES = operator.attrgetter('aggregates')


def _multipliers(host_states, configured, multiplier_of, aggregated=None):
    """Each host's multiplier: ``configured`` for all when no host is in
    an aggregate (``aggregated``, when known: the aggregates read with
    the request's figures; else one pass in C), else ``multiplier_of``
    each.
    """
    if aggregated is None:
        try:
            aggregated = any(map(_AGGREGATES, host_states))
        except AttributeError:
            aggregated = True
    if not aggregated:
        return [configured] * len(host_states)
    return [multiplier_of(h, configured) for h in host_states]


class IoStrengthWeigher(weights.BaseHostWeigher):
    """Prefer hosts with less I/O strength per pCPU after placement."""

    # NOTE(iosched): minval/maxval stay None. A fixed minval would clamp a
    # host without a report to the same value as the worst reported host;
    # weigh_objects() places it just outside the reported range instead.
    minval = None
    maxval = None

    def __init__(self):
        super().__init__()
        # per thread: the request being weighed (weight_multiplier)
        self._request = threading.local()
        state.for_worker(CONF)

    def weight_multiplier(self, host_state):
        """Override the weight multiplier.

        Nova's get_weighed_objects calls weigh_objects, then this for each
        host in the same order, in the same thread: weigh_objects gives
        each host's multiplier (the option read once, an aggregate's
        metadata where the host has one) and those serve these calls; any
        other call reads the option.
        """
        turn = getattr(self._request, 'turn', None)
        if turn is not None:
            # the next (host, multiplier) of the request; None once done
            pair = next(turn, None)
            if pair is not None and pair[0] is host_state:
                return pair[1]
            self._request.turn = None
        return self._multiplier(
            host_state, CONF.iosched.io_strength_weight_multiplier)

    @staticmethod
    def _multiplier(host_state, configured):
        if not getattr(host_state, 'aggregates', None):
            # what get_weight_multiplier gives without aggregate metadata
            return configured
        return utils.get_weight_multiplier(
            host_state, 'io_strength_weight_multiplier', configured)

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: less I/O strength per pCPU after placement
        (None without a fresh report).
        """
        worker = state.current().configure(CONF)
        request = worker.requests.read(weight_properties)[0]
        return weighing.assess(worker, host_state, request,
                               worker.settings(CONF),
                               spec_obj=weight_properties)[0]

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Raw values of all hosts, with the missing ones filled in."""
        worker = state.for_request().configure(CONF)
        request, label = worker.requests.read(weight_properties)
        host_states = [w.obj for w in weighed_obj_list]
        # the multiplier once per request (see _configured)
        self._request.turn = None
        multiplier = CONF.iosched.io_strength_weight_multiplier
        filled, reason_of = weighing.weigh(
            worker, host_states, request, label, worker.settings(CONF),
            lambda h: self._multiplier(h, multiplier), type(self).__name__,
            spec_obj=weight_properties)
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, weight) in enumerate(zip(host_states,
                                                         filled)):
                LOG.debug('%(host_state)s raw I/O strength weight '
                          '%(weight).4f for %(request)s: %(reason)s',
                          {'host_state': host_state, 'weight': weight,
                           'request': label, 'reason': reason_of(i)})
        if host_states:
            latest = getattr(worker.views, 'latest', None)
            self._request.turn = zip(host_states, _multipliers(
                host_states, multiplier, self._multiplier,
                None if latest is None else request_view.in_aggregates(
                    latest(host_states))))
        return filled
