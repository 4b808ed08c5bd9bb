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
"""Text and JSON forms of an ``iosched-placement`` answer.

``as_dict`` is the ``--json`` document; ``table`` the one-line-per-host
view; ``explain_host`` the per-rule view of ``--host X``. Pure.
"""

from iosched.nova_plugin.cmd import placement_rules as rules_mod
from iosched.nova_plugin import scoring

NOTE = ('only the iosched rules are evaluated: Nova\'s own filters (RAM, '
        'disk, compute up, ...) and weighers (RAM, CPU, ...) also decide, '
        'and each scheduler worker adds the placements it made since a '
        "host's last report")


def _verdict_dict(rule, verdict):
    return {'rule': rule.name, 'plugin': rule.plugin,
            'options': list(rule.options), 'passed': verdict.passed,
            'reason': verdict.reason, 'numbers': verdict.numbers}


def host_dict(result):
    report = result.report
    return {
        'host': result.host,
        'candidate': result.candidate,
        'rank': result.rank,
        'tied': result.tied,
        'failed_rules': result.failed,
        'rules': [_verdict_dict(r, v) for r, v in result.verdicts],
        'weigher': {'plugin': rules_mod.WEIGHER, 'raw': result.raw,
                    'normalized': result.normalized,
                    'weighted': result.weighted,
                    'reason': result.weigher_reason},
        'report': None if report is None else {
            'seq': report.seq, 'ts': report.ts,
            'report_interval': report.report_interval,
            'pcpus': report.pcpus, 'io_vcpus': report.io_vcpus,
            'io_strength_total': report.io_strength_total,
            'health': report.health.status,
            'lsvm': rules_mod.lsvm_host(report)},
    }


def request_dict(request, source, specs):
    return {'source': source, 'vcpus': request.vcpus,
            'extra_specs': dict(specs),
            'io_profile': request.io_profile,
            'latency_sensitive': request.latency_sensitive,
            'latency_ms': request.latency_ms,
            'io_vcpus': scoring.request_io_vcpus(request),
            'io_strength': scoring.request_io_strength(request)}


def as_dict(results, query, source, specs, thresholds, rules, meta):
    return dict(meta, request=dict(request_dict(query.request, source, specs),
                                   slo_iops=query.slo_iops),
                thresholds=thresholds.as_dict(),
                rules=[{'rule': r.name, 'plugin': r.plugin,
                        'options': list(r.options)} for r in rules],
                rules_not_enabled=[r.plugin for r in rules_mod.RULES
                                   if r not in rules],
                weigher=rules_mod.WEIGHER,
                candidates=sum(1 for r in results if r.candidate),
                hosts=[host_dict(r) for r in results], note=NOTE)


def _fmt(value, spec='%.3f'):
    return '-' if value is None else spec % value


def _rank(result):
    if result.rank is None:
        return '-'
    return '%d%s' % (result.rank, '=' if result.tied else '')


def _rule_cell(verdict):
    return 'pass' if verdict.passed else 'FAIL'


def header(query, source, thresholds, rules, heading):
    request = query.request
    lines = [heading,
             'request: %s: %d vCPU(s), io_profile=%s, latency_sensitive=%s'
             '%s, SLO floors %g IOPS -> %d I/O vCPU(s), I/O strength +%.3f'
             % (source, request.vcpus, request.io_profile,
                str(request.latency_sensitive).lower(),
                (', latency_ms=%s' % request.latency_ms
                 if request.latency_ms else ''), query.slo_iops,
                scoring.request_io_vcpus(request),
                scoring.request_io_strength(request)),
             'thresholds [iosched]: %s' % ', '.join(
                 '%s=%s' % kv for kv in thresholds.as_dict().items()),
             'filters: %s; weigher: %s' % (
                 ', '.join('%s (%s)' % (r.plugin, r.name) for r in rules)
                 or 'none enabled', rules_mod.WEIGHER)]
    skipped = [r.plugin for r in rules_mod.RULES if r not in rules]
    if skipped:
        lines.append('not in [filter_scheduler] enabled_filters, not '
                     'evaluated: %s' % ', '.join(skipped))
    return lines


def table(results):
    """One line per host: rank, each rule, (with LsvmFilter) the host's
    LSVM mechanism, the weigher, the verdict.
    """
    names = [rule.name for rule, _ in results[0].verdicts] if results else []
    mechanism = 'lsvm' in names
    head = ['rank', 'host'] + names + (
        ['lsvm mechanism'] if mechanism else []) + [
        'raw weight', 'normalized', 'weighted', 'result']
    rows = []
    for r in results:
        cells = [_rank(r), r.host]
        cells += [_rule_cell(v) for _, v in r.verdicts]
        if mechanism:
            cells.append(rules_mod.lsvm_cell(r.report))
        cells += [_fmt(r.raw, '%.4f'), _fmt(r.normalized), _fmt(r.weighted)]
        if r.candidate:
            cells.append('candidate' + (' (no fresh report)'
                                        if r.report is None else ''))
        else:
            cells.append('filtered out by %s' % ', '.join(r.failed))
        rows.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows)]
    lines = []
    for cells in [head] + rows:
        lines.append('  '.join(str(c).ljust(w) for c, w in
                               zip(cells, widths)).rstrip())
    return lines


def lsvm_words(report):
    """How the host serves LSVMs, in words (mechanism, W, bandwidth,
    self-test).
    """
    host = rules_mod.lsvm_host(report)
    if not host['supported']:
        return 'not served (no vSlicer policy in its agent)'
    text = 'mechanism %s, measured p99 wake-up latency W %s' % (
        host['mechanism'], '%.4gus' % host['wakeup_latency_us']
        if host['wakeup_latency_us'] > 0 else 'not measured')
    if 'dl_bw_reservable' in host:
        text += (', SCHED_DEADLINE bandwidth: limit %.3g - foreign %.3g = '
                 '%.3g CPUs reservable, %.3g reserved by LSVMs, at most '
                 '%.3g CPU per vCPU' % (
                     host['dl_bw_limit'], host['dl_bw_foreign'],
                     host['dl_bw_reservable'], host['dl_bw_reserved'],
                     host['deadline_max_share']))
    if host['probes']:
        text += '; self-test p99: %s' % ', '.join(
            '%s %.4gus' % (p['mechanism'], p['p99_us']) if p['ok']
            else '%s failed (%s)' % (p['mechanism'], p['error'] or '?')
            for p in host['probes'])
    return text


def explain_host(result, count):
    """Why (not) ``result.host``: every rule with its numbers."""
    if result.candidate:
        verdict = 'a candidate, rank %s of %d by the iosched weigher' % (
            _rank(result), count)
    else:
        verdict = 'NOT a candidate: filtered out by %s' % ', '.join(
            result.failed)
    lines = ['host %s: %s' % (result.host, verdict)]
    if result.report is None:
        lines.append('  report: none fresh (the agent did not report, or '
                     'its report is older than the TTL)')
    else:
        rep = result.report
        lines.append('  report: seq %d, %d pCPUs, %d I/O vCPUs, I/O '
                     'strength %.3f, health %s' % (
                         rep.seq, rep.pcpus, rep.io_vcpus,
                         rep.io_strength_total, rep.health.status))
        lines.append('  LSVMs: %s' % lsvm_words(rep))
    for rule, v in result.verdicts:
        lines.append('  %s (%s): %s: %s' % (
            rule.name, rule.plugin, 'pass' if v.passed else 'FAIL',
            v.reason))
    lines.append('  %s: raw %s: %s' % (rules_mod.WEIGHER,
                                       _fmt(result.raw, '%.4f'),
                                       result.weigher_reason))
    if result.candidate:
        lines.append('    normalized over the %d candidate(s) %s, weighted '
                     '(x multiplier) %s' % (count, _fmt(result.normalized),
                                            _fmt(result.weighted)))
    return lines
