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
"""``iosched-placement`` on saved reports (no nova, no broker): the rule
table per host, the weigher's rank, ``--host``, ``--json``, thresholds
from a config file, the flavor from Nova (fake connection), listening
stop rules (fake clock), and bad input exits 2 with one line.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.nova_plugin.cmd import placement
from iosched.nova_plugin.cmd import placement_rules as rules_mod
from iosched.nova_plugin.cmd import placement_sources as sources
from iosched.nova_plugin import scoring
from tests.unit.nova_plugin import reports

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
IO = ['--property', 'iosched:io_profile=io']
LSVM = ['--property', 'iosched:latency_sensitive=true',
        '--property', 'iosched:latency_ms=2']


def _save(tmp_path, report):
    path = str(tmp_path / ('%s.json' % report.host))
    with open(path, 'w') as fh:
        json.dump(report.to_dict(), fh)
    return path


def _report(host, io_vcpus=0, strength=0.0, pcpus=4, disk=None, lsvm=None,
            seq=1, ts=100.0):
    r = reports.report(host=host, io_vcpus=io_vcpus, pcpus=pcpus,
                       io_strength_total=strength, lsvm=lsvm, seq=seq, ts=ts)
    if disk is not None:
        r = payload.HostReport(**dict(vars(r), disk=disk))
    return r


@pytest.fixture
def three(tmp_path):
    """compute-1 busy (3 I/O vCPUs), compute-2 middle, compute-3 light."""
    return [_save(tmp_path, _report('compute-1', 3, 3.0)),
            _save(tmp_path, _report('compute-2', 1, 1.0)),
            _save(tmp_path, _report('compute-3', 0, 0.2))]


def _files(paths):
    argv = []
    for p in paths:
        argv += ['--report', p]
    return argv


@pytest.fixture
def no_default_config(monkeypatch, tmp_path):
    monkeypatch.setattr(placement, 'DEFAULT_CONFIG',
                        str(tmp_path / 'absent-nova.conf'))


def run(argv, capsys):
    code = placement.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv, capsys):
    code, out, err = run(argv + ['--json'], capsys)
    assert code == 0, err
    return json.loads(out)


def _hosts(doc):
    return {h['host']: h for h in doc['hosts']}


# -- the rule table, evaluated (pure) ---------------------------------------

def _query(vcpus=2, slo_iops=0.0, **specs):
    return rules_mod.Query(scoring.Request.from_extra_specs(vcpus, specs),
                           slo_iops=slo_iops)


DEFAULT = rules_mod.Thresholds()
EVALUATE_CASES = [
    # (name, reports, query, thresholds, expected [(host, rank, failed)])
    ('io request: density and I/O strength decide',
     [_report('c1', 3, 3.0), _report('c2', 1, 1.0), _report('c3', 0, 0.2)],
     _query(**{'iosched:io_profile': 'io'}), DEFAULT,
     [('c3', 1, []), ('c2', 2, []), ('c1', None, ['io_density'])]),
    ('a tighter bound filters more',
     [_report('c1', 3, 3.0), _report('c2', 1, 1.0), _report('c3', 0, 0.2)],
     _query(**{'iosched:io_profile': 'io'}),
     rules_mod.Thresholds(max_io_vcpus_per_pcpu=0.5),
     [('c3', 1, []), ('c1', None, ['io_density']),
      ('c2', None, ['io_density'])]),
    ('cpu request: every host, all tied',
     [_report('c1', 3, 3.0), _report('c2', 1, 1.0)],
     _query(**{'iosched:io_profile': 'cpu'}), DEFAULT,
     [('c1', 1, []), ('c2', 2, [])]),
    ('negative multiplier packs',
     [_report('c1', 0, 0.0), _report('c2', 0, 2.0)],
     _query(**{'iosched:io_profile': 'mixed'}),
     rules_mod.Thresholds(io_strength_weight_multiplier=-1.0),
     [('c2', 1, []), ('c1', 2, [])]),
    ('LSVM request on a host without vSlicer',
     [_report('c1', lsvm=reports.lsvm(supported=False)), _report('c2')],
     _query(**{'iosched:latency_sensitive': 'true',
               'iosched:latency_ms': '2'}), DEFAULT,
     [('c2', 1, []), ('c1', None, ['lsvm'])]),
    ('SLO floors over the disk capacity',
     [_report('c1', disk=payload_sections.DiskState(1000.0, 800.0, 1.0, 2.0)),
      _report('c2', disk=payload_sections.DiskState(1000.0, 100.0, 1.0, 2.0))],
     _query(slo_iops=500.0), DEFAULT,
     [('c2', 1, []), ('c1', None, ['slo_capacity'])]),
    ('SLO floors, capacity unknown, reject policy',
     [_report('c1'),
      _report('c2', disk=payload_sections.DiskState(1000.0, 0.0, 1.0, 2.0))],
     _query(slo_iops=500.0),
     rules_mod.Thresholds(missing_report_policy='reject'),
     [('c2', 1, []), ('c1', None, ['slo_capacity'])]),
]


@pytest.mark.parametrize('name,reps,query,thresholds,expected',
                         EVALUATE_CASES, ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate(name, reps, query, thresholds, expected):
    results = rules_mod.evaluate({r.host: r for r in reps}, query,
                                 thresholds)
    assert [(r.host, r.rank, r.failed) for r in results] == expected


MISSING_CASES = [
    # (policy, weight mode, profile, passes, raw value of the missing host)
    ('pass', 'lowest', 'io', True, -1.025),     # 10 % below -0.75..-1.0
    ('pass', 'neutral', 'io', True, -0.875),
    ('reject', 'lowest', 'io', False, -1.025),
    ('reject', 'lowest', 'cpu', True, -1.0),    # all 0: gap 1.0 below
]


@pytest.mark.parametrize('policy,mode,profile,passes,raw', MISSING_CASES)
def test_missing_host(policy, mode, profile, passes, raw):
    reps = {'c2': _report('c2', strength=1.0), 'c3': _report('c3',
                                                             strength=2.0)}
    thresholds = rules_mod.Thresholds(missing_report_policy=policy,
                                      missing_report_weight=mode)
    results = {r.host: r for r in rules_mod.evaluate(
        reps, _query(**{'iosched:io_profile': profile}), thresholds,
        missing=('gone',))}
    gone = results['gone']
    assert gone.candidate is passes
    assert gone.raw == pytest.approx(raw)
    assert 'missing_report_policy=%s' % policy in gone.verdicts[0][1].reason
    if passes and profile == 'io':
        assert gone.rank == 3 if mode == 'lowest' else 2


def test_enabled_filters_select_rules():
    assert [r.name for r in rules_mod.enabled(None)] == [
        'io_density', 'lsvm', 'slo_capacity']
    assert [r.name for r in rules_mod.enabled(
        ['ComputeFilter', 'LsvmFilter'])] == ['lsvm']


def test_normalize_is_novas():
    assert rules_mod.normalize([-0.55, -0.75, -1.25]) == pytest.approx(
        [1.0, 0.7142857, 0.0])
    assert rules_mod.normalize([0.0, 0.0]) == [0.0, 0.0]
    assert rules_mod.normalize([]) == []


# -- the command on report files ---------------------------------------------

def test_table_ranks_and_explains(three, capsys, no_default_config):
    code, out, err = run(_files(three) + ['--vcpus', '2'] + IO, capsys)
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert lines[0] == 'reports: 3 host(s) from 3 file(s)'
    assert ('request: --vcpus 2: 2 vCPU(s), io_profile=io, '
            'latency_sensitive=false, SLO floors 0 IOPS -> 2 I/O vCPU(s), '
            'I/O strength +2.000') in lines
    assert _cells(lines, 'rank') == [
        'rank', 'host', 'io_density', 'lsvm', 'slo_capacity',
        'lsvm mechanism', 'raw weight', 'normalized', 'weighted', 'result']
    rows = [_cells(lines, p) for p in ('1 ', '2 ', '- ')]
    assert rows == [
        ['1', 'compute-3', 'pass', 'pass', 'pass', 'slice W unmeasured',
         '-0.5500', '1.000', '1.000', 'candidate'],
        ['2', 'compute-2', 'pass', 'pass', 'pass', 'slice W unmeasured',
         '-0.7500', '0.000', '0.000', 'candidate'],
        ['-', 'compute-1', 'FAIL', 'pass', 'pass', 'slice W unmeasured',
         '-1.2500', '-', '-', 'filtered out by io_density']]
    assert "Nova's own filters" in out


def _cells(lines, prefix):
    """The cells of the table row starting with ``prefix`` (columns are
    two or more spaces apart).
    """
    line = next(l for l in lines if l.startswith(prefix))
    return re.split(r'\s{2,}', line.strip())


def _mechanisms(tmp_path):
    """Three 2-pCPU hosts serving LSVMs differently (issue 10's table):
    deadline (p99 13 us, 1.9 CPUs limit, 0.05 foreign, one LSVM reserving
    0.5), weight (63 us), slice (one tick, 4 ms).
    """
    def lsvm(**kw):
        return reports.lsvm(pcpus=2, **kw)
    probes = (payload_sections.ProbeEntry('stock', True, 55.0, 3900.0),
              payload_sections.ProbeEntry('deadline', True, 5.0, 13.0),
              payload_sections.ProbeEntry('weight', True, 56.0, 63.0),
              payload_sections.ProbeEntry('slice', True, 55.0, 4000.0))
    return [
        _save(tmp_path, _report('dl', pcpus=2, lsvm=lsvm(
            count=1, min_latency_ms=2, mechanism='deadline',
            wakeup_latency_us=13.0, dl_bw_limit=1.9, dl_bw_foreign=0.05,
            dl_bw_reserved=0.5, probes=probes))),
        _save(tmp_path, _report('wt', pcpus=2, lsvm=lsvm(
            mechanism='weight', wakeup_latency_us=63.0))),
        _save(tmp_path, _report('sl', pcpus=2, lsvm=lsvm(
            mechanism='slice', wakeup_latency_us=4000.0)))]


def test_table_shows_each_hosts_mechanism(tmp_path, capsys,
                                          no_default_config):
    code, out, _ = run(_files(_mechanisms(tmp_path)) + ['--vcpus', '1']
                       + LSVM, capsys)
    lines = out.splitlines()
    assert code == 0
    rows = [re.split(r'\s{2,}', l.strip()) for l in lines
            if l.startswith(('1', '2', '-'))]
    assert [(c[1], c[3], c[5], c[-1]) for c in rows] == [
        ('dl', 'pass', 'deadline W=13us, 0.5 of 1.85 CPUs reserved',
         'candidate'),
        ('wt', 'pass', 'weight W=63us', 'candidate'),
        ('sl', 'FAIL', 'slice W=4000us', 'filtered out by lsvm')]


def test_why_not_the_slice_host_and_the_deadline_hosts_figures(
        tmp_path, capsys, no_default_config):
    files = _files(_mechanisms(tmp_path))
    _, out, _ = run(files + ['--vcpus', '1', '--host', 'sl'] + LSVM, capsys)
    assert ('LSVMs: mechanism slice, measured p99 wake-up latency W 4000us'
            in out)
    assert ('lsvm (LsvmFilter): FAIL: worst-case latency 4ms > L 2ms '
            '(mechanism slice)') in out
    _, out, _ = run(files + ['--vcpus', '1', '--host', 'dl'] + LSVM, capsys)
    assert ('LSVMs: mechanism deadline, measured p99 wake-up latency W 13us, '
            'SCHED_DEADLINE bandwidth: limit 1.9 - foreign 0.05 = 1.85 CPUs '
            'reservable, 0.5 reserved by LSVMs, at most 0.5 CPU per vCPU; '
            'self-test p99: stock 3900us, deadline 13us, weight 63us, slice '
            '4000us') in out
    # m = 2 LSVM vCPUs of N' = 2 on 2 pCPUs: s' = 0.5, need 1 <= 1.85
    assert "need m*s'=2*0.5=1 CPUs vs limit 1.9 - foreign 0.05" in out
    doc = run_json(files + ['--vcpus', '1'] + LSVM, capsys)
    dl = _hosts(doc)['dl']
    assert dl['report']['lsvm']['dl_bw_reservable'] == pytest.approx(1.85)
    assert dl['report']['lsvm']['probes'][1] == {
        'mechanism': 'deadline', 'ok': True, 'p50_us': 5.0, 'p99_us': 13.0,
        'error': ''}
    numbers = dl['rules'][1]['numbers']
    assert (numbers['mechanism'], numbers['wakeup_measured_us'],
            numbers['dl_need'], numbers['worst_us']) == (
        'deadline', 13.0, 1.0, 13.0)
    assert 'dl_bw_limit' not in _hosts(doc)['wt']['report']['lsvm']


def test_why_not_host(three, capsys, no_default_config):
    code, out, _ = run(_files(three) + ['--vcpus', '2', '--host',
                                        'compute-1'] + IO, capsys)
    assert code == 0
    assert 'host compute-1: NOT a candidate: filtered out by io_density' in out
    assert ('io_density (IoDensityFilter): FAIL: I/O vCPUs per pCPU after '
            'placement 1.250 > 1.000 (reported 3 + pending 0 + request 2 on '
            '4 pCPUs)') in out
    assert 'IoStrengthWeigher: raw -1.2500' in out


def test_why_host_is_second(three, capsys, no_default_config):
    _, out, _ = run(_files(three) + ['--vcpus', '2', '--host',
                                     'compute-2'] + IO + LSVM, capsys)
    assert 'host compute-2: a candidate, rank 2 of 2' in out
    assert 'lsvm (LsvmFilter): pass: LSVM fits' in out
    assert 'normalized over the 2 candidate(s) 0.000' in out


def test_json(three, capsys, no_default_config):
    doc = run_json(_files(three) + ['--vcpus', '4', '--property',
                                    'iosched:io_profile=mixed'], capsys)
    assert doc['source'] == 'files'
    assert doc['request']['io_vcpus'] == 4
    assert doc['request']['io_strength'] == 2.0
    assert doc['candidates'] == 1
    hosts = _hosts(doc)
    assert hosts['compute-3']['rank'] == 1
    density = hosts['compute-2']['rules'][0]
    assert density['rule'] == 'io_density' and density['passed'] is False
    assert density['numbers']['io_vcpus_per_pcpu_after'] == 1.25
    assert density['numbers']['max_io_vcpus_per_pcpu'] == 1.0
    assert hosts['compute-3']['weigher']['raw'] == pytest.approx(-0.55)
    assert doc['thresholds']['max_io_vcpus_per_pcpu'] == 1.0


def test_no_host_fits_says_novalidhost(three, capsys, no_default_config):
    _, out, _ = run(_files(three) + ['--vcpus', '8'] + IO, capsys)
    assert 'Nova would answer NoValidHost' in out


def test_newest_report_of_a_host_wins(tmp_path, capsys, no_default_config):
    old = _save(tmp_path, _report('c1', 3, 3.0, seq=1))
    newer = str(tmp_path / 'newer.json')
    with open(newer, 'w') as fh:
        json.dump(_report('c1', 0, 0.0, seq=2).to_dict(), fh)
    doc = run_json(['--report', newer, '--report', old, '--vcpus', '2']
                   + IO, capsys)
    assert _hosts(doc)['c1']['report']['seq'] == 2


def test_thresholds_and_filters_from_nova_conf(three, tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[filter_scheduler]\n'
                    'enabled_filters = ComputeFilter,IoDensityFilter\n'
                    '[iosched]\nmax_io_vcpus_per_pcpu = 1.5\n'
                    'io_strength_weight_multiplier = 2.0\n')
    doc = run_json(_files(three) + ['--config-file', str(conf), '--vcpus',
                                    '2'] + IO, capsys)
    assert [r['rule'] for r in doc['rules']] == ['io_density']
    assert doc['rules_not_enabled'] == ['LsvmFilter', 'SloCapacityFilter']
    assert doc['candidates'] == 3
    assert _hosts(doc)['compute-3']['weigher']['weighted'] == 2.0
    _, out, _ = run(_files(three) + ['--config-file', str(conf), '--vcpus',
                                     '2'] + IO, capsys)
    assert ('not in [filter_scheduler] enabled_filters, not evaluated: '
            'LsvmFilter, SloCapacityFilter') in out


def test_default_config_is_read_when_present(three, tmp_path, capsys,
                                             monkeypatch):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[iosched]\nmax_io_vcpus_per_pcpu = 0.25\n')
    monkeypatch.setattr(placement, 'DEFAULT_CONFIG', str(conf))
    doc = run_json(_files(three) + ['--vcpus', '1'] + IO, capsys)
    assert doc['config_files'] == [str(conf)]
    assert doc['candidates'] == 1


BAD_INPUT = [
    # (argv after the report files, stderr must contain)
    ([], 'no flavor: give --vcpus N'),
    (['--vcpus', '0'], '--vcpus 0: accepted: an integer >= 1'),
    (['--vcpus', '2', '--property', 'iosched:io_profile'],
     "--property 'iosched:io_profile': accepted: KEY=VALUE"),
    (['--vcpus', '2', '--property', 'iosched:io_profile=disk'],
     "invalid value 'disk' for flavor extra spec 'iosched:io_profile': "
     'accepted: one of io, cpu, mixed'),
    (['--vcpus', '2', '--flavor', 'io.medium'],
     'give either --flavor NAME or --vcpus N'),
    (['--vcpus', '2', '--slo-iops', '-5'],
     '--slo-iops -5.0: accepted: a finite number of IOPS >= 0'),
    (['--vcpus', '2', '--host', 'compute-9'],
     '--host compute-9: no report for it in the files (hosts: compute-1, '
     'compute-2, compute-3)'),
    (['--vcpus', '2', '--config-file', '/nonexistent/nova.conf'],
     'no configuration file at /nonexistent/nova.conf'),
]


@pytest.mark.parametrize('argv,message', BAD_INPUT,
                         ids=[' '.join(c[0]) or 'none' for c in BAD_INPUT])
def test_bad_input(three, argv, message, capsys, no_default_config):
    code, out, err = run(_files(three) + argv, capsys)
    assert code == placement.EXIT_BAD_INPUT
    assert out == ''
    assert len(err.splitlines()) == 1 and message in err, err


BAD_FILES = [
    ('not json', '{', 'is not JSON'),
    ('not a report', '{"version": "1.1"}',
     "is not a HostReport (a saved HostReport.to_dict() is accepted): "
     "invalid HostReport field 'vcpus': missing"),
    ('bad field', None, "invalid HostReport field 'pcpus': got 0"),
]


@pytest.mark.parametrize('name,text,message', BAD_FILES,
                         ids=[c[0] for c in BAD_FILES])
def test_bad_report_file(tmp_path, name, text, message, capsys,
                         no_default_config):
    path = tmp_path / 'r.json'
    if text is None:
        data = _report('c1').to_dict()
        data['pcpus'] = 0
        text = json.dumps(data)
    path.write_text(text)
    code, _, err = run(['--report', str(path), '--vcpus', '2'], capsys)
    assert code == 2 and message in err, err


def test_missing_report_file(capsys, no_default_config):
    code, _, err = run(['--report', '/nonexistent.json', '--vcpus', '1'],
                       capsys)
    assert code == 2
    assert 'cannot read the report /nonexistent.json' in err


def test_bad_config_value(three, tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[iosched]\nmax_io_vcpus_per_pcpu = lots\n')
    code, _, err = run(_files(three) + ['--config-file', str(conf),
                                        '--vcpus', '1'], capsys)
    assert code == 2
    assert 'cannot read the configuration' in err
    assert 'max_io_vcpus_per_pcpu' in err


# -- the flavor from Nova -----------------------------------------------------

class _Flavor(object):
    def __init__(self, name, vcpus, extra_specs):
        self.name, self.vcpus, self.extra_specs = name, vcpus, extra_specs


class _Compute(object):
    def __init__(self, flavors):
        self.flavors = flavors

    def find_flavor(self, name, ignore_missing=True, get_extra_specs=False):
        assert ignore_missing and get_extra_specs
        return self.flavors.get(name)


class _Conn(object):
    def __init__(self, flavors):
        self.compute = _Compute(flavors)


FLAVOR_CASES = [
    # (flavors in Nova, name, expected (vcpus, specs) or error text)
    ({'io.medium': _Flavor('io.medium', 2, {'iosched:io_profile': 'io'})},
     'io.medium', (2, {'iosched:io_profile': 'io'})),
    ({'plain': _Flavor('plain', 4, None)}, 'plain', (4, {})),
    ({}, 'nope', "no flavor named or with the id 'nope' in Nova"),
]


@pytest.mark.parametrize('flavors,name,expected', FLAVOR_CASES,
                         ids=[c[1] for c in FLAVOR_CASES])
def test_flavor_from_nova(flavors, name, expected):
    connect = lambda **kw: _Conn(flavors)     # noqa: E731
    if isinstance(expected, str):
        with pytest.raises(sources.BadInput, match=expected):
            sources.flavor_from_nova(name, connect=connect)
    else:
        vcpus, specs, _ = sources.flavor_from_nova(name, connect=connect)
        assert (vcpus, specs) == expected


def test_flavor_without_a_cloud_says_so(three, tmp_path, capsys,
                                        monkeypatch, no_default_config):
    for key in list(os.environ):
        if key.startswith('OS_'):
            monkeypatch.delenv(key)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(tmp_path / 'none.yaml'))
    monkeypatch.chdir(tmp_path)
    code, _, err = run(_files(three) + ['--flavor', 'io.medium'], capsys)
    assert code == 2
    assert "cannot read flavor 'io.medium' from Nova" in err
    assert 'clouds.yaml' in err and '--vcpus N and --property' in err


# -- listening: when to stop (fake clock, fake server) ------------------------

class _Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class _Server(object):
    transport = 'transport'

    def __init__(self):
        self.stopped = False

    def stop(self):
        self.stopped = True

    def wait(self):
        pass


class _Conf(object):
    class iosched(object):
        report_topic = 'iosched-reports'
        report_ttl_intervals = 3.0


LISTEN_CASES = [
    # (name, arrivals [(time, host, report_interval)], resync works,
    #  wait, expected hosts, expected stop time, why)
    ('resync answered: settle 2 s after the last new host',
     [(0.3, 'c1', 60.0), (0.6, 'c2', 60.0)], True, 30.0, ['c1', 'c2'], 2.6,
     'settled'),
    ('no resync: one report interval',
     [(0.5, 'c1', 1.0), (0.9, 'c2', 1.0)], False, 30.0, ['c1', 'c2'], 1.4,
     'interval'),
    ('long interval, no resync: stop at --wait',
     [(0.5, 'c1', 60.0)], False, 5.0, ['c1'], 5.0, 'wait'),
    ('nothing heard: stop at --wait',
     [], True, 3.0, [], 3.0, 'wait'),
]


@pytest.mark.parametrize('name,arrivals,resync_ok,wait,hosts,stop,why',
                         LISTEN_CASES, ids=[c[0] for c in LISTEN_CASES])
def test_listen_stop_rules(name, arrivals, resync_ok, wait, hosts, stop,
                           why):
    clock = _Clock()
    server = _Server()
    held = {}
    lines = []

    def listen(conf, transport_url, store, host):
        assert host.startswith('iosched-placement-')
        held['store'] = store
        return server

    def resync(conf, transport, requester):
        if not resync_ok:
            raise RuntimeError('no agents topic')

    def sleep(seconds):
        clock.sleep(seconds)
        for at, host, interval in arrivals:
            if at <= clock.now and host not in held['store'].hosts():
                held['store'].update(reports.report(
                    host=host, report_interval=interval))

    got, listened, stopped = sources.reports_from_bus(
        _Conf, 'rabbit://u:secret@broker:5672/', wait, lines.append,
        clock=clock, sleep=sleep, listen=listen, resync=resync,
        probe=lambda url: None)
    assert sorted(got) == hosts
    assert listened == pytest.approx(stop, abs=0.06)
    assert stopped == why
    assert server.stopped
    assert any(l.startswith('listening on topic iosched-reports: ')
               for l in lines), lines
    assert any('resync asked' in l for l in lines) is resync_ok


LISTEN_ERRORS = [
    # (url, probe result, error)
    (None, None, 'no transport URL to listen for reports'),
    ('rabbit://u:secret@broker:5672/', 'broker:5672: refused',
     'no message broker answers at rabbit://u:***@broker:5672/: '
     'broker:5672: refused'),
]


@pytest.mark.parametrize('url,down,message', LISTEN_ERRORS)
def test_listen_errors(url, down, message):
    with pytest.raises(sources.BadInput) as e:
        sources.reports_from_bus(_Conf, url, 1.0, print,
                                 probe=lambda u: down)
    assert message in str(e.value)
    assert 'secret' not in str(e.value)


def test_no_transport_url_is_bad_input(three, capsys, no_default_config):
    code, _, err = run(['--vcpus', '2'], capsys)
    assert code == 2
    assert '--transport-url rabbit://USER:PASS@HOST:5672/' in err


# -- the console script -------------------------------------------------------

def test_help_explains_with_examples(monkeypatch):
    monkeypatch.setenv('COLUMNS', '80')        # argparse's wrap width
    help_text = placement.parser().format_help()
    for needle in ('examples:', 'iosched-placement --flavor io.medium '
                   '--host compute-3', '--report FILE', 'exit status:',
                   'IoDensityFilter', 'LsvmFilter', 'SloCapacityFilter',
                   'IoStrengthWeigher'):
        assert needle in help_text
    assert [l for l in help_text.splitlines() if len(l) > 79] == []


def test_module_runs_and_imports_no_nova(three):
    code = ('import sys, runpy; sys.argv = ["iosched-placement"] + '
            'sys.argv[1:]; '
            'import iosched.nova_plugin.cmd.placement as p; rc = p.main(); '
            'assert "nova" not in sys.modules, "nova imported"; '
            'sys.exit(rc)')
    proc = subprocess.run(
        [sys.executable, '-c', code] + _files(three) + ['--vcpus', '2']
        + IO, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'compute-3' in proc.stdout


def test_host_not_heard_on_the_bus_counts_as_missing(three, capsys,
                                                     monkeypatch,
                                                     no_default_config):
    heard = sources.reports_from_files(three)
    monkeypatch.setattr(sources, 'reports_from_bus',
                        lambda *a, **kw: (heard, 1.4, 'interval'))
    argv = ['--transport-url', 'rabbit://u:p@broker:5672/', '--vcpus', '2',
            '--host', 'compute-9'] + IO
    _, out, _ = run(argv, capsys)
    assert 'host compute-9: a candidate, rank 3 of 3' in out
    assert 'report: none fresh' in out
    assert 'no fresh report (missing_report_policy=pass)' in out
    doc = run_json(argv, capsys)
    assert doc['stopped'] == 'interval'
    assert _hosts(doc)['compute-9']['report'] is None
