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
"""Weigh every host of a request by the I/O strength it would carry:
``IoStrengthWeigher``'s raw values.

``weigh(state, host_states, request, label, settings, multiplier_of,
name)`` reads each host's fresh report once (prepared once per report,
``iosched.nova_plugin.prepared``) and its in-flight estimate, gives each
reported host ``scoring.score`` (minus the I/O strength per pCPU after
placement) and the hosts without a fresh report the value
``scoring.missing_weights`` gives them over all the hosts weighed (Nova
normalises each weigher's raw values over those hosts;
``multiplier_of(host_state)`` is the multiplier Nova applies to a host). Every
host's reason goes to the worker's explain ring (written when read), the count
of missing reports to its metrics. ``assess`` is the same for one host, without
a value for a missing report. The weigher calls them and only logs.

No nova import.
"""

from iosched.nova_plugin import request_view
from iosched.nova_plugin import scoring


def missing_reason(mode):
    return 'no fresh report: missing_report_weight=%s' % mode


def _rows(state, spec_obj, host_states, settings):
    return state.views.rows(state.store, state.prepared, spec_obj,
                            host_states, settings.inflight_vcpu_profile)


def assess(state, host_state, request, settings, spec_obj=None):
    """``(raw value, reason)`` of one host; the value is None without a
    fresh report.
    """
    row = _rows(state, spec_obj, [host_state], settings)[0]
    prep = row.prep
    if prep is None:
        return None, 'no fresh report'
    pending = row.pending(settings.inflight_vcpu_profile)
    return (scoring.score(prep.report, pending, request),
            scoring.score_reason(prep.report, pending, request))


def weigh(state, host_states, request, label, settings, multiplier_of,
          name, spec_obj=None):
    """``(raw values, reason_of)`` of ``host_states`` (a list), the
    missing ones filled in, recorded in ``state`` under the weigher
    ``name``; ``spec_obj`` keys the figures shared with the filters
    (``request_view``).
    """
    mode = settings.missing_report_weight
    profile = settings.inflight_vcpu_profile
    cols = request_view.columns(state.views, state.store, state.prepared,
                                spec_obj, host_states, profile)
    preps = cols.preps
    pendings = cols.pendings()
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
    state.metrics.note_weigher(name, missing)
    if missing:
        # missing_weights reads the multiplier of the missing hosts only
        filled = scoring.missing_weights(raw, [
            multiplier_of(h) if value is None else 1.0
            for h, value in zip(host_states, raw)], mode)
    else:
        filled = raw

    def reason_of(i):
        prep = preps[i]
        if prep is None:
            return missing_reason(mode)
        return scoring.score_reason(prep.report, pendings[i], request)

    state.explainer.record_batch('weigher', label, host_states, reason_of,
                                 weights=filled)
    return filled, reason_of
