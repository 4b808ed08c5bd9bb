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

The raw value is ``nova_plugin.scoring.score``: minus the I/O strength per
pCPU after placement, so with a positive multiplier (the default) hosts with
less I/O strength win and I/O-bound vCPUs spread across hosts; a negative
multiplier packs them. Config (an aggregate's metadata key of the same name
overrides the multiplier)::

    [iosched]
    io_strength_weight_multiplier = 1.0
    missing_report_weight = lowest
    inflight_vcpu_profile = mixed

A host without a fresh report gets the value ``scoring.missing_weights``
gives it, computed over all the hosts being weighed, because Nova
normalises each weigher's raw values over those hosts. ``weigh_objects``
weighs every host at once: the request and options read once, each
report's figures prepared once (``nova_plugin.prepared``), the reasons
written only when read (``nova_plugin.explain``) or logged at DEBUG.
"""

import logging as std_logging

from oslo_log import log as logging

import nova.conf
from nova.scheduler import utils
from nova.scheduler import weights

from nova_plugin import conf as iosched_conf
from nova_plugin import listener
from nova_plugin import explain
from nova_plugin import metrics
from nova_plugin import prepared
from nova_plugin import request_spec
from nova_plugin import scoring
from nova_plugin import store

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
iosched_conf.register_opts(CONF)


_GROUP = []


def _iosched():
    """``CONF.iosched``, looked up once: a group attribute reads the
    option's current value at each access (by the group's name)."""
    if not _GROUP:
        _GROUP.append(CONF.iosched)
    return _GROUP[0]


class IoStrengthWeigher(weights.BaseHostWeigher):
    """Prefer hosts with less I/O strength per pCPU after placement."""

    # NOTE(iosched): minval/maxval stay None. A fixed minval would clamp a
    # host without a report to the same value as the worst reported host;
    # weigh_objects() places it just outside the reported range instead.
    minval = None
    maxval = None

    def weight_multiplier(self, host_state):
        """Override the weight multiplier."""
        if not getattr(host_state, 'aggregates', None):
            # what get_weight_multiplier gives without aggregate metadata
            # (Nova asks once per host: the group is looked up once)
            return _iosched().io_strength_weight_multiplier
        return utils.get_weight_multiplier(
            host_state, 'io_strength_weight_multiplier',
            CONF.iosched.io_strength_weight_multiplier)

    def _assess(self, host_state, request, reports=None, profile=None):
        """(raw value, reason); the value is None without a fresh report."""
        if reports is None:
            reports = store.get_store(CONF)
        prep = prepared.fresh(reports, [host_state])[0]
        if prep is None:
            return None, 'no fresh report'
        pending = prepared.pendings(
            reports, [host_state], [prep],
            profile or CONF.iosched.inflight_vcpu_profile)[0]
        return (scoring.score(prep.report, pending, request),
                scoring.score_reason(prep.report, pending, request))

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: less I/O strength per pCPU after placement."""
        request = request_spec.to_request(weight_properties)
        return self._assess(host_state, request)[0]

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Raw values of all hosts, with the missing ones filled in."""
        listener.ensure_listener(CONF)
        request = request_spec.to_request(weight_properties)
        label = request_spec.label(weight_properties)
        s = prepared.settings(CONF)
        mode = s.missing_report_weight
        host_states = [w.obj for w in weighed_obj_list]
        reports = store.get_store(CONF)
        preps = prepared.fresh(reports, host_states)
        pendings = prepared.pendings(reports, host_states, preps,
                                     s.inflight_vcpu_profile)
        # scoring.score: 0 for a request without I/O strength, else
        # -(h.io_strength_total + p.io_strength + strength(r)) / h.pcpus
        strength = scoring.request_io_strength(request)
        if strength <= 0:
            raw = [None if p is None else 0.0 for p in preps]
        else:
            raw = [None if p is None else
                   -((p.io_strength + pending.io_strength + strength)
                     / p.pcpus)
                   for p, pending in zip(preps, pendings)]
        missing = raw.count(None)
        metrics.note_weigher(type(self).__name__, missing)
        if missing:
            # missing_weights reads the multiplier of the missing hosts only
            filled = scoring.missing_weights(raw, [
                self.weight_multiplier(h) if value is None else 1.0
                for h, value in zip(host_states, raw)], mode)
        else:
            filled = raw

        def reason_of(i):
            prep = preps[i]
            if prep is None:
                return 'no fresh report: missing_report_weight=%s' % mode
            return scoring.score_reason(prep.report, pendings[i], request)

        explain.record_batch('weigher', label, host_states, reason_of,
                             weights=filled)
        if LOG.isEnabledFor(std_logging.DEBUG):
            for i, (host_state, weight) in enumerate(zip(host_states,
                                                         filled)):
                LOG.debug('%(host_state)s raw I/O strength weight '
                          '%(weight).4f for %(request)s: %(reason)s',
                          {'host_state': host_state, 'weight': weight,
                           'request': label, 'reason': reason_of(i)})
        return filled
