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
"""The iosched placement rules as a table, evaluated for every host.

``RULES`` has one entry per iosched host filter: its name, the Nova plugin
class it stands for, the ``[iosched]`` options it reads and a ``check``
function ``(report, query, thresholds) -> Verdict`` that calls the pure
rule of ``nova_plugin`` the filter itself calls (``scoring.fits``,
``lsvm_rule.check``, ``slo_rule.admit``). Adding a filter to the CLI
is adding one entry. The weigher (``IoStrengthWeigher``) is evaluated by
``evaluate`` the way Nova does it: raw values from ``scoring.score``,
hosts without a fresh report filled in by ``scoring.missing_weights``,
normalised to [0, 1] over the hosts that passed every filter, times the
multiplier.

Pure: no I/O, no clock, no nova. What it cannot know: Nova's own filters
(RAM, disk, compute state, ...) and weighers, and the in-flight estimate
of each scheduler worker (placements since a host's last report).
"""

import dataclasses

from iosched.contract import lsvm as lsvm_bound
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import scoring
from iosched.nova_plugin import slo_rule

# Nova's weigher normalisation (nova.weights.normalize): min..max -> 0..1,
# all equal -> 0. Restated here, since this module must not import nova.


def normalize(values):
    """Nova's normalisation of one weigher's raw values."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if lo == hi:
        return [0.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The ``[iosched]`` options the scheduler applies."""

    max_io_vcpus_per_pcpu: float = 1.0
    io_strength_weight_multiplier: float = 1.0
    missing_report_policy: str = 'pass'
    missing_report_weight: str = 'lowest'
    slo_capacity_fraction: float = 1.0

    @classmethod
    def from_conf(cls, conf):
        group = conf.iosched
        return cls(
            max_io_vcpus_per_pcpu=group.max_io_vcpus_per_pcpu,
            io_strength_weight_multiplier=group.io_strength_weight_multiplier,
            missing_report_policy=group.missing_report_policy,
            missing_report_weight=group.missing_report_weight,
            slo_capacity_fraction=group.slo_capacity_fraction)

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One rule on one host: passed, why, and the numbers behind it."""

    passed: bool
    reason: str
    numbers: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Query:
    """What is asked: the flavor's request and its SLO volumes' floors."""

    request: scoring.Request
    slo_iops: float = 0.0      # sum of iosched:min_iops of its SLO volumes


@dataclasses.dataclass(frozen=True)
class Rule:
    """One iosched host filter, as the CLI evaluates it.

    ``check(report, query, thresholds)`` for a host with a fresh report;
    ``needs_report(query)``: whether the filter applies its
    ``missing_report_policy`` to a host without one (else it passes).
    """

    name: str
    plugin: str
    options: tuple
    check: object
    needs_report: object


def _missing_policy(needs, thresholds, reason='no fresh report'):
    policy = thresholds.missing_report_policy
    passed = policy == 'pass' or not needs
    return Verdict(passed, '%s (missing_report_policy=%s)' % (reason, policy),
                   {'missing_report_policy': policy})


def check_io_density(report, query, thresholds):
    """``IoDensityFilter``: ``scoring.fits`` with no pending placements."""
    request = query.request
    passed, reason = scoring.fits(report, scoring.NO_PENDING, request,
                                  thresholds.max_io_vcpus_per_pcpu)
    numbers = {
        'io_vcpus_per_pcpu_after': scoring.io_density_after(
            report, scoring.NO_PENDING, request),
        'max_io_vcpus_per_pcpu': thresholds.max_io_vcpus_per_pcpu,
        'reported_io_vcpus': report.io_vcpus,
        'request_io_vcpus': scoring.request_io_vcpus(request),
        'pcpus': report.pcpus}
    return Verdict(passed, reason, numbers)


def check_lsvm(report, query, thresholds):
    """``LsvmFilter``: ``lsvm_rule.check`` with no pending placements."""
    passed, reason, figures = lsvm_rule.check(report, scoring.NO_PENDING,
                                              query.request)
    numbers = dataclasses.asdict(figures) if figures is not None else {}
    if numbers.get('budget_us') == float('inf'):
        numbers['budget_us'] = None          # JSON has no infinity
    return Verdict(passed, reason, numbers)


# What a host reports about its LSVMs (HostReport 1.3): the mechanism it
# serves them with, the p99 wake-up latency W it measured under it and,
# for deadline, its SCHED_DEADLINE bandwidth in CPUs:
#   reservable = dl_bw_limit - dl_bw_foreign   (what LsvmFilter admits to)
#   reserved   = dl_bw_reserved                (the LSVMs' reservations now)
def lsvm_host(report):
    """The host's LSVM mechanism and measured figures, as a dict."""
    lsvm = report.lsvm
    out = {'supported': lsvm.supported, 'mechanism': lsvm.mechanism,
           'wakeup_latency_us': lsvm.wakeup_latency_us,
           'probes': [{'mechanism': p.mechanism, 'ok': p.ok,
                       'p50_us': p.p50_us, 'p99_us': p.p99_us,
                       'error': p.error} for p in lsvm.probes]}
    if lsvm.mechanism == lsvm_bound.MECH_DEADLINE:
        out.update(deadline_max_share=lsvm.deadline_max_share,
                   dl_bw_limit=lsvm.dl_bw_limit,
                   dl_bw_foreign=lsvm.dl_bw_foreign,
                   dl_bw_reserved=lsvm.dl_bw_reserved,
                   dl_bw_reservable=lsvm.dl_bw_limit - lsvm.dl_bw_foreign)
    return out


def lsvm_cell(report):
    """One short cell: 'deadline W=13us, 0.5 of 1.85 CPUs reserved'."""
    if report is None:
        return '-'
    host = lsvm_host(report)
    if not host['supported']:
        return 'none'
    words = [host['mechanism']]
    words.append('W=%.4gus' % host['wakeup_latency_us']
                 if host['wakeup_latency_us'] > 0 else 'W unmeasured')
    text = ' '.join(words)
    if 'dl_bw_reservable' in host:
        text += ', %.3g of %.3g CPUs reserved' % (host['dl_bw_reserved'],
                                               host['dl_bw_reservable'])
    return text


def check_slo_capacity(report, query, thresholds):
    """``SloCapacityFilter``: ``slo_rule.admit`` with no pending floors."""
    disk = report.disk
    passed, reason = slo_rule.admit(
        disk.capacity_iops, disk.reserved_iops, 0.0, query.slo_iops,
        thresholds.slo_capacity_fraction)
    numbers = {'capacity_iops': disk.capacity_iops,
               'reserved_iops': disk.reserved_iops,
               'request_iops': query.slo_iops,
               'slo_capacity_fraction': thresholds.slo_capacity_fraction}
    if passed is None:      # capacity unknown: as a missing report
        return _missing_policy(True, thresholds, reason)
    return Verdict(passed, reason, numbers)


# One entry per iosched host filter (iosched/nova_plugin/filters/), in the
# order of docs/nova.md's enabled_filters.
RULES = (
    Rule('io_density', 'IoDensityFilter', ('max_io_vcpus_per_pcpu',),
         check_io_density,
         lambda q: scoring.needs_report(q.request)),
    Rule('lsvm', 'LsvmFilter', (), check_lsvm,
         lambda q: q.request.latency_sensitive),
    Rule('slo_capacity', 'SloCapacityFilter', ('slo_capacity_fraction',),
         check_slo_capacity,
         lambda q: q.slo_iops > 0),
)

WEIGHER = 'IoStrengthWeigher'


def check_missing(rule, query, thresholds):
    """One filter on a host without a fresh report: the policy decides."""
    return _missing_policy(rule.needs_report(query), thresholds)


@dataclasses.dataclass
class HostResult:
    """Everything the CLI says about one host."""

    host: str
    report: object                       # HostReport or None (missing)
    verdicts: list                       # [(Rule, Verdict)]
    raw: float = None                    # weigher raw value (filled in)
    weigher_reason: str = ''
    normalized: float = None             # only for candidates
    weighted: float = None               # multiplier * normalized
    rank: int = None                     # 1 = where Nova's I/O part sends it
    tied: bool = False                   # same weighted value as a neighbour

    @property
    def candidate(self):
        return all(v.passed for _, v in self.verdicts)

    @property
    def failed(self):
        return [rule.name for rule, v in self.verdicts if not v.passed]


def enabled(names, rules=RULES):
    """The rules whose filter is in ``names`` (Nova's enabled_filters);
    all of them when ``names`` is None (not configured).
    """
    if names is None:
        return tuple(rules)
    return tuple(r for r in rules if r.plugin in names)


def _weigher_value(report, request):
    if report is None:
        return None, 'no fresh report'
    return (scoring.score(report, scoring.NO_PENDING, request),
            scoring.score_reason(report, scoring.NO_PENDING, request))


def evaluate(reports, query, thresholds, rules=RULES, missing=()):
    """Evaluate ``query`` on every host; a list of ``HostResult``.

    :param reports: {host: HostReport}
    :param missing: host names without a fresh report to evaluate too
    :returns: results sorted by rank (candidates first), then host name
    """
    results = []
    for host in sorted(set(reports) | set(missing)):
        report = reports.get(host)
        if report is None:
            verdicts = [(rule, check_missing(rule, query, thresholds))
                        for rule in rules]
        else:
            verdicts = [(rule, rule.check(report, query, thresholds))
                        for rule in rules]
        results.append(HostResult(host, report, verdicts))

    multiplier = thresholds.io_strength_weight_multiplier
    assessed = [_weigher_value(r.report, query.request) for r in results]
    filled = scoring.missing_weights(
        [value for value, _ in assessed], [multiplier] * len(results),
        thresholds.missing_report_weight)
    for result, (value, reason), raw in zip(results, assessed, filled):
        result.raw = raw
        if value is None:
            reason = '%s: missing_report_weight=%s' % (
                reason, thresholds.missing_report_weight)
        result.weigher_reason = reason

    # Nova weighs only the hosts that passed the filters, and fills the
    # missing ones over those hosts: redo both over the candidates.
    candidates = [r for r in results if r.candidate]
    cand_raw = scoring.missing_weights(
        [v for r, (v, _) in zip(results, assessed) if r.candidate],
        [multiplier] * len(candidates), thresholds.missing_report_weight)
    for result, raw, norm in zip(candidates, cand_raw, normalize(cand_raw)):
        result.raw = raw
        result.normalized = norm
        result.weighted = multiplier * norm
    candidates.sort(key=lambda r: (-r.weighted, r.host))
    for i, result in enumerate(candidates):
        result.rank = i + 1
        neighbours = candidates[max(i - 1, 0):i] + candidates[i + 1:i + 2]
        result.tied = any(abs(n.weighted - result.weighted) < 1e-12
                          for n in neighbours)
    others = sorted((r for r in results if not r.candidate),
                    key=lambda r: r.host)
    return candidates + others
