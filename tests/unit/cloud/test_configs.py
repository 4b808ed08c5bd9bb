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
"""The cloud's service configs: what each service needs to find the
others, and that every file parses as oslo.config reads it."""

import configparser
import types

import pytest

from iosched.cloud import configs
from iosched.cloud import layout as layout_mod

LAYOUT = layout_mod.Layout(state_dir='/srv/c', cache_dir='/srv/cache',
                           hostname='node1')
CEPH = types.SimpleNamespace(user='cinder', pool='volumes',
                             conf='/srv/c/ceph/ceph.conf',
                             keyring='/srv/c/ceph/client.cinder.keyring',
                             secret_uuid='5b6c5b1e-0000-4000-8000-0000000a')


@pytest.mark.parametrize('name, fn', [
    ('keystone', lambda: configs.keystone(LAYOUT)),
    ('placement', lambda: configs.placement(LAYOUT)),
    ('glance', lambda: configs.glance(LAYOUT)),
    ('nova', lambda: configs.nova(LAYOUT, CEPH)),
    ('cinder', lambda: configs.cinder(LAYOUT, CEPH)),
])
def test_renders_as_ini(name, fn):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(configs.render(fn()))
    assert parser.sections(), name


@pytest.mark.parametrize('section, option, expected', [
    ('DEFAULT', 'transport_url',
     'rabbit://guest:guest@127.0.0.1:5672/iosched-cloud'),
    ('DEFAULT', 'host', 'node1'),
    ('DEFAULT', 'instances_path', '/srv/c/nova/instances'),
    ('libvirt', 'virt_type', 'qemu'),
    ('libvirt', 'rbd_secret_uuid', CEPH.secret_uuid),
    ('serial_console', 'enabled', 'True'),
    ('api_database', 'connection',
     'mysql+pymysql://ioscloud:iosched-cloud@127.0.0.1/ioscloud_nova_api'
     '?charset=utf8'),
    ('placement', 'username', 'nova'),
    ('nova_sys_admin', 'helper_command',
     '/srv/cache/venv/bin/privsep-helper --config-file '
     '/srv/c/etc/nova/nova.conf'),
])
def test_nova_conf(section, option, expected):
    assert configs.nova(LAYOUT, CEPH)[section][option] == expected


def test_nova_conf_has_no_iosched_option():
    # iosched's lines come from the DevStack plugin, never from here
    conf = configs.nova(LAYOUT, CEPH)
    assert 'iosched' not in conf
    assert 'filter_scheduler' not in conf


@pytest.mark.parametrize('option, expected', [
    ('volume_driver', 'cinder.volume.drivers.rbd.RBDDriver'),
    ('rbd_pool', 'volumes'),
    ('rbd_user', 'cinder'),
    ('rbd_secret_uuid', CEPH.secret_uuid),
])
def test_cinder_rbd_backend(option, expected):
    conf = configs.cinder(LAYOUT, CEPH)
    assert conf['DEFAULT']['enabled_backends'] == 'ceph'
    assert conf['ceph'][option] == expected


def test_cinder_without_ceph_has_no_backend():
    assert 'ceph' not in configs.cinder(LAYOUT)


def test_layout_round_trip(tmp_path):
    lay = layout_mod.Layout(state_dir=str(tmp_path), repo_dir='/r')
    layout_mod.save(lay)
    assert layout_mod.load(str(tmp_path)) == lay


def test_load_without_state_gives_defaults(tmp_path):
    assert layout_mod.load(str(tmp_path / 'none')).state_dir == str(
        tmp_path / 'none')
