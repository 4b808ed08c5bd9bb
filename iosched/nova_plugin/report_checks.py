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
"""Judge every host of a request by its agent's report: the I/O density and
LSVM checks behind ``IoDensityFilter`` and ``LsvmFilter``.

``judge(state, host_states, request, label, check, settings, name)`` reads
each host's fresh report once (``iosched.nova_plugin.prepared``: prepared once
per report, kept in the worker's ``state.prepared``) and its in-flight
estimate (placements since that report), applies ``[iosched]
missing_report_policy`` to a host without a fresh report and the check's
rule to the others, records every host's reason in the worker's explain
ring (written when read) and counts the verdicts in its metrics. The
filters call it and only log the rejections.

A check (``DENSITY``, ``LSVM``) says whether it looks at a request at all
(``wants``), whether ``missing_report_policy=reject`` applies to it
(``needs_report``), its verdict without the text (``tester``: the pure
rule's arithmetic, in the same order, once per request) and its reason
(``reason``: the pure rule itself, ``scoring.fits`` or
``lsvm_rule.check``).

No nova import.
"""

import collections
import itertools

from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import metrics
from iosched.nova_plugin import request_view
from iosched.nova_plugin import scoring

Verdicts = collections.namedtuple('Verdicts', 'hosts oks passed reason_of')
Verdicts.__doc__ = """A filter's verdicts on ``hosts`` (a list): ``oks[i]``,
the passing hosts in order (``passed``) and the i-th host's reason
``reason_of(i)`` (written when called)."""


def missing_reason(policy):
    return 'no fresh report (missing_report_policy=%s)' % policy


def _always(prep, pending):
    return True


class _Check(object):

    def verdicts(self, preps, pendings, request, settings, missing):
        """Each host's verdict: ``missing`` where ``preps`` has None,
        else ``tester``'s.
        """
        test = self.tester(request, settings)
        if test is _always:
            if missing:
                return [True] * len(preps)
            return [p is not None for p in preps]
        return [missing if p is None else test(p, q)
                for p, q in zip(preps, pendings)]


class DensityCheck(_Check):
    """I/O-intensive vCPUs per pCPU under ``max_io_vcpus_per_pcpu``."""

    name = 'I/O density'
    # Also log the hosts that pass (the reason then shows the margin).
    log_passes = False

    def wants(self, request):
        return True

    def needs_report(self, request):
        return scoring.needs_report(request)

    # scoring.fits's verdict: io_vcpus(r) == 0, or
    # (h.io_vcpus + p.io_vcpus + io_vcpus(r)) / h.pcpus
    #     <= max_io_vcpus_per_pcpu + 1e-9
    def tester(self, request, settings):
        wanted = scoring.request_io_vcpus(request)
        if wanted == 0:
            return _always
        limit = settings.max_io_vcpus_per_pcpu + 1e-9

        def test(prep, pending):
            return ((prep.io_vcpus + pending.io_vcpus + wanted)
                    / prep.pcpus <= limit)
        return test

    def verdicts(self, preps, pendings, request, settings, missing):
        """``tester``'s verdicts, inlined (one expression per host)."""
        wanted = scoring.request_io_vcpus(request)
        if wanted == 0:
            return super().verdicts(preps, pendings, request, settings,
                                    missing)
        limit = settings.max_io_vcpus_per_pcpu + 1e-9
        return [missing if p is None else
                (p.io_vcpus + q.io_vcpus + wanted) / p.pcpus <= limit
                for p, q in zip(preps, pendings)]

    def reason(self, report, pending, request, settings):
        return scoring.fits(report, pending, request,
                            settings.max_io_vcpus_per_pcpu)[1]


class LsvmCheck(_Check):
    """An LSVM only where its host's worst-case latency bound holds."""

    name = 'LSVM'
    log_passes = True

    def wants(self, request):
        return request.latency_sensitive

    def needs_report(self, request):
        return True

    # lsvm_rule.check's verdict (lsvm_rule.passes), memoised per report.
    def tester(self, request, settings):
        if not request.latency_sensitive:
            return _always

        def test(prep, pending):
            if pending is scoring.NO_PENDING:
                return prep.lsvm_passes(request, 0, 0)
            m_pending, n_pending = lsvm_rule.pending_terms(pending)
            return prep.lsvm_passes(request, m_pending, n_pending)
        return test

    def reason(self, report, pending, request, settings):
        return lsvm_rule.check(report, pending, request)[1]


DENSITY = DensityCheck()
LSVM = LsvmCheck()


def judge(state, host_states, request, label, check, settings, name,
          spec_obj=None):
    """``Verdicts`` of ``check`` on ``host_states`` (a list) for
    ``request`` (``label`` names it in the ring; ``spec_obj``, its
    RequestSpec, keys the figures shared with the other filters and the
    weigher: ``request_view``), recorded in ``state``
    under the filter ``name``; None when the check does not look at the
    request (every host passes, nothing recorded).
    """
    if not check.wants(request):
        return None
    profile = settings.inflight_vcpu_profile
    cols = request_view.columns(state.views, state.store, state.prepared,
                                spec_obj, host_states, profile)
    preps = cols.preps
    pendings = cols.pendings()
    policy = settings.missing_report_policy
    missing_passes = policy == 'pass' or not check.needs_report(request)
    oks = check.verdicts(preps, pendings, request, settings, missing_passes)
    passed = list(itertools.compress(host_states, oks))
    rejected_missing = 0 if missing_passes else preps.count(None)
    rejected_rule = len(oks) - len(passed) - rejected_missing
    request_view.narrow(state.views, cols, oks)

    def reason_of(i):
        prep = preps[i]
        if prep is None:
            return missing_reason(policy)
        return check.reason(prep.report, pendings[i], request, settings)

    state.explainer.record_batch('filter', label, host_states, reason_of,
                                 passed=oks)
    state.metrics.note_filters(name, len(passed), {
        metrics.CAUSE_RULE: rejected_rule,
        metrics.CAUSE_NO_REPORT: rejected_missing})
    return Verdicts(host_states, oks, passed, reason_of)
