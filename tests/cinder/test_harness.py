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
"""The ``cinder_api`` fixture itself: Cinder's API answers over HTTP, with
its scheduler and volume services up, through each client it offers.
"""


def test_api_answers_with_its_default_type(cinder_api):
    assert cinder_api.endpoint.startswith('http://127.0.0.1:')
    assert cinder_api.endpoint.endswith('/v3/' + cinder_api.project_id)
    resp = cinder_api.adapter().get('/types')
    assert resp.status_code == 200
    names = [t['name'] for t in resp.json()['volume_types']]
    assert '__DEFAULT__' in names


def test_scheduler_and_volume_services_are_up(cinder_api):
    resp = cinder_api.adapter().get('/os-services')
    assert resp.status_code == 200
    up = {s['binary'] for s in resp.json()['services']
          if s['state'] == 'up' and s['status'] == 'enabled'}
    assert {'cinder-scheduler', 'cinder-volume'} <= up


def test_cinderclient_on_the_same_session(cinder_api):
    client = cinder_api.cinderclient()
    assert any(t.name == '__DEFAULT__' for t in client.volume_types.list())


def test_openstacksdk_connection(cinder_api):
    conn = cinder_api.connection()
    assert '__DEFAULT__' in [t.name for t in conn.block_storage.types()]
    assert conn.block_storage.get_endpoint().startswith(cinder_api.base_url)


def test_session_project_has_no_volume_quota(cinder_api):
    resp = cinder_api.adapter().get(
        '/os-quota-sets/%s' % cinder_api.project_id)
    assert resp.status_code == 200, resp.text
    quota = resp.json()['quota_set']
    assert (quota['volumes'], quota['gigabytes']) == (-1, -1)
