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

"""The python-openstackclient plugin: ``openstack volume slo type ...``.

Registered in setup.cfg under ``openstack.cli.extension`` as
``volume_slo``; the commands (``openstack.volume_slo.v1``) are the same
classes as ``iosched-slo type ...`` (iosched.cinder_qos.osc.commands). The
client is an SloAdmin over osc's own openstacksdk connection, so auth, region
and endpoint options are osc's.
"""

from iosched.cinder_qos import client
from iosched.cinder_qos import rest

API_NAME = 'volume_slo'
API_VERSION_OPTION = 'os_volume_slo_api_version'
API_VERSIONS = {'1': 'iosched.cinder_qos.client.SloAdmin'}
DEFAULT_API_VERSION = '1'


def make_client(instance):
    """An SloAdmin over osc's block-storage (v3) proxy."""
    return client.SloAdmin(rest.RestApi(
        instance.sdk_connection.block_storage))


def build_option_parser(parser):
    """No options of its own: osc's auth and endpoint options apply."""
    return parser
