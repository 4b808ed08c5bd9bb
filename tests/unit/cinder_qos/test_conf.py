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

"""Tests of iosched.cinder_qos.conf: defaults shared with translate, bounds,
help.
"""

from oslo_config import cfg
import pytest

from iosched.cinder_qos import conf
from iosched.cinder_qos import translate
from iosched.contract import slo


@pytest.fixture
def opts():
    c = cfg.ConfigOpts()
    conf.register_opts(c)
    c([])
    return c


def test_list_opts():
    [(group, options)] = conf.list_opts()
    assert group == 'cinder_qos'
    assert options is conf.OPTS
    names = {o.name for o in options}
    assert {'headroom', 'default_ref_io_bytes', 'default_expected_qd',
            'latency_class_threshold'} <= names


def test_defaults_are_the_translate_constants(opts):
    g = opts.cinder_qos
    assert g.headroom == translate.DEFAULT_HEADROOM == 1.5
    assert g.default_ref_io_bytes == slo.DEFAULT_REF_IO_BYTES == 16384
    assert g.default_expected_qd == translate.DEFAULT_EXPECTED_QD == 16
    assert (g.latency_class_threshold
            == translate.DEFAULT_LATENCY_CLASS_THRESHOLD == 16)


def test_translate_with_conf_values_equals_bare_translate(opts):
    g = opts.cinder_qos
    s = slo.parse('120iops,60ms', default_ref_io_bytes=g.default_ref_io_bytes)
    assert translate.translate(
        s, headroom=g.headroom, default_expected_qd=g.default_expected_qd,
        latency_class_threshold=g.latency_class_threshold,
    ) == translate.translate(slo.parse('120iops,60ms'))


@pytest.mark.parametrize('name,bad', [
    ('headroom', 0.99), ('headroom', 11), ('default_ref_io_bytes', 511),
    ('default_expected_qd', 0), ('latency_class_threshold', 0),
])
def test_bounds(opts, name, bad):
    with pytest.raises(ValueError):
        opts.set_override(name, bad, group='cinder_qos')


@pytest.mark.parametrize('opt', conf.OPTS, ids=[o.name for o in conf.OPTS])
def test_help_is_nova_style(opt):
    text = opt.help.strip()
    assert text.splitlines()[0].endswith('.')        # summary sentence
    assert 'Possible values:' in text
    assert 'Related options:' in text
    assert opt.type.min is not None                  # bounds on the option
