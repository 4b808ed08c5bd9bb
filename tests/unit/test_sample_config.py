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
"""The committed sample configs are exactly what the generator produces.

Fails when an option is added or changed without ``make genconfig``.
"""

import configparser
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CONFS = sorted(glob.glob(os.path.join(ROOT, 'etc', 'oslo-config-generator',
                                      '*.conf')))


def test_there_is_a_sample_per_package():
    names = {os.path.basename(c) for c in CONFS}
    assert names == {'host-agent.conf', 'nova-plugin.conf',
                     'cinder-qos.conf'}


@pytest.mark.parametrize('gen_conf', CONFS, ids=os.path.basename)
def test_sample_is_up_to_date(gen_conf, tmp_path):
    # strict=False: namespace repeats, one line per namespace
    parser = configparser.ConfigParser(strict=False)
    parser.read(gen_conf)
    committed = os.path.join(ROOT, parser['DEFAULT']['output_file'])
    fresh = tmp_path / 'sample.conf'
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator',
         '--config-file', gen_conf, '--output-file', str(fresh)],
        check=True, cwd=ROOT)
    with open(committed) as fh:
        want = fh.read()
    assert fresh.read_text() == want, (
        '%s is stale: run `make genconfig` and commit the result'
        % os.path.relpath(committed, ROOT))


@pytest.mark.parametrize('gen_conf', CONFS, ids=os.path.basename)
def test_reference_is_up_to_date(gen_conf, tmp_path):
    # strict=False: namespace repeats, one line per namespace
    parser = configparser.ConfigParser(strict=False)
    parser.read(gen_conf)
    name = os.path.splitext(os.path.basename(gen_conf))[0]
    committed = os.path.join(ROOT, 'docs', 'config', name + '.md')
    fresh_json = tmp_path / 'opts.json'
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator',
         '--config-file', gen_conf, '--format', 'json',
         '--output-file', str(fresh_json)],
        check=True, cwd=ROOT)
    fresh = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'tools', 'config_reference.py'),
         str(fresh_json), '%s options' % name,
         parser['DEFAULT']['output_file']],
        check=True, cwd=ROOT, capture_output=True, text=True).stdout
    with open(committed) as fh:
        want = fh.read()
    assert fresh == want, (
        '%s is stale: run `make genconfig` and commit the result'
        % os.path.relpath(committed, ROOT))
    assert '| `tick_interval` |' in want or name != 'host-agent'
