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
"""Options of the iosched Nova plugin: ``[iosched]`` and ``[iosched_metrics]``.

The plugin runs inside nova-scheduler, so its options live in nova.conf::

    [iosched]
    listen_for_reports = true
    report_topic = iosched-reports
    report_ttl_intervals = 3.0
    missing_report_policy = pass
    missing_report_weight = lowest
    max_io_vcpus_per_pcpu = 1.0
    io_strength_weight_multiplier = 1.0

Each module of this package holds the options of one concern and has
``register_opts(conf)`` and ``list_opts()`` (the nova/conf shape):
``listener`` (topics, start, retries, resync), ``rules`` (the filters' and
the weigher's rules and the report store), ``senders`` (signed reports,
clock skew), ``slo`` (``SloCapacityFilter``), all in ``[iosched]``, and
``metrics`` (``[iosched_metrics]``). ``register_opts`` and ``list_opts``
here find them with pkgutil, so no option can go missing from the
generated sample; ``list_opts`` merges the modules of one group in the
order of their names, which is the order of the options in
``etc/iosched/nova-plugin.conf.sample`` (tests/unit/test_sample_config.py
fails when it changes). Each module passes its options through
``iosched.contract.opt_types.harden`` (no NaN, infinite or silently empty
numbers; the value and the accepted range in every refusal) when it is
imported, before anything can register them.

``list_opts()`` feeds oslo-config-generator (entry point
``oslo.config.opts: iosched.nova_plugin =
iosched.nova_plugin.conf:list_opts``). This package imports oslo.config (and
``iosched.contract.opt_types``, which imports only oslo.config), never nova.
"""

import importlib
import pkgutil

from oslo_config import cfg

GROUP = 'iosched'

iosched_group = cfg.OptGroup(
    GROUP,
    title='iosched Nova plugin options',
    help="""
Options of the iosched filter (``IoDensityFilter``), weigher
(``IoStrengthWeigher``) and the report listener that feeds them with the
``HostReport`` of every compute host.
""")


def _modules():
    """The option modules of this package, in the order of their names."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        yield importlib.import_module(__name__ + '.' + info.name)


def register_opts(conf):
    """Register ``[iosched]`` and ``[iosched_metrics]`` on ``conf``
    (idempotent).
    """
    for module in _modules():
        module.register_opts(conf)


def list_opts():
    """oslo-config-generator hook: ``[(group name, [options])]``, one entry
    per group (``[iosched]`` first), its modules' options in order.
    """
    merged = {}
    for module in _modules():
        for group, opts in module.list_opts():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items(), key=lambda item: item[0] != GROUP)
