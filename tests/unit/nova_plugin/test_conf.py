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
"""Tests of iosched.nova_plugin.conf and of the plugin's import rules (no
nova).
"""

import ast
import os

from oslo_config import cfg
import pytest

from iosched.nova_plugin import conf as iosched_conf

PLUGIN = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                      'iosched', 'nova_plugin')


def _conf():
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    iosched_conf.register_opts(conf)        # idempotent
    conf([], default_config_files=[])
    return conf


def test_defaults():
    g = _conf().iosched
    assert (g.listen_for_reports, g.report_topic, g.report_ttl_intervals,
            g.missing_report_policy, g.missing_report_weight,
            g.max_io_vcpus_per_pcpu, g.io_strength_weight_multiplier,
            g.store_max_hosts) == (
        False, 'iosched-reports', 3.0, 'pass', 'lowest', 1.0, 1.0, 100000)


@pytest.mark.parametrize('name, bad', [
    ('report_ttl_intervals', 0.5),
    ('missing_report_policy', 'drop'),
    ('missing_report_weight', 'highest'),
    ('max_io_vcpus_per_pcpu', -1.0),
    ('store_max_hosts', 0),
])
def test_bounds_and_choices(name, bad):
    with pytest.raises(ValueError):
        _conf().set_override(name, bad, group='iosched')


def test_list_opts_and_help_style():
    (group, opts) = iosched_conf.list_opts()[0]
    assert group == 'iosched'
    assert {o.name for o in opts} == {
        'listen_for_reports', 'report_topic', 'report_ttl_intervals',
        'missing_report_policy', 'missing_report_weight',
        'max_io_vcpus_per_pcpu', 'inflight_vcpu_profile',
        'io_strength_weight_multiplier', 'store_max_hosts',
        'agents_topic', 'resync_on_start', 'listener_retry_interval_max',
        'slo_capacity_fraction', 'slo_lookup_failure_policy',
        'slo_unknown_source_policy', 'slo_cache_seconds',
        'slo_cache_max_entries', 'report_auth', 'report_master_key',
        'report_max_clock_skew', 'report_max_age'}
    for opt in opts:
        assert 'Possible values:' in opt.help, opt.name
        assert 'Related options:' in opt.help, opt.name


def test_list_opts_merges_the_package_modules_by_group():
    """One entry per group (oslo-config-generator writes a "From" header
    per entry), [iosched] first, each option once; every module of the
    package has both hooks and registers what it lists.
    """
    listed = iosched_conf.list_opts()
    assert [group for group, _ in listed] == ['iosched', 'iosched_metrics']
    names = [o.name for _, opts in listed for o in opts]
    assert len(names) == len(set(names))
    modules = list(iosched_conf._modules())
    assert [m.__name__.rsplit('.', 1)[1] for m in modules] == [
        'listener', 'metrics', 'rules', 'senders', 'slo']
    for module in modules:
        conf = cfg.ConfigOpts()
        module.register_opts(conf)
        conf([], default_config_files=[])
        for group, opts in module.list_opts():
            for opt in opts:
                getattr(getattr(conf, group), opt.dest)    # registered


def _imports(path):
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)


def _plugin_files():
    for dirpath, _, files in os.walk(PLUGIN):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, PLUGIN), path


def test_import_rules():
    """Only filters/, weighers/ and validators import nova; nothing imports
    the host agent (what both need is in iosched.contract).
    """
    files = dict(_plugin_files())
    assert 'scoring.py' in files and 'store.py' in files
    for rel, path in files.items():
        for module in _imports(path):
            top = module.split('.')[0]
            if top == 'nova':
                assert (rel.split(os.sep)[0] in ('filters', 'weighers') or
                        rel == 'validators.py'), (rel, module)
            assert not module.startswith('iosched.host_agent'), (rel, module)
