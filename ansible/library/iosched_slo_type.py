#!/usr/bin/python
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

"""Ansible module ``iosched_slo_type``: an SLO volume type, idempotently.

A thin shell over ``iosched.cinder_qos.client`` (what ``iosched-slo type
create``
and ``delete`` run): ``plan()`` checks the SLO text, ``SloAdmin`` creates
or deletes the QoS spec, volume type and association. Check mode reads
Cinder only and predicts what a real run would do, refusing the same
conflicts. The connection is built from openstack.cloud-style parameters
(``cloud``, ``auth``, ``auth_type``, ``region_name``, ``interface``).
"""

DOCUMENTATION = r'''
---
module: iosched_slo_type
short_description: Create or delete an iosched SLO volume type in Cinder
description:
  - An SLO type is a Cinder volume type and a QoS spec of the same name
    (consumer C(front-end)) carrying the C(iosched:*) keys of an SLO
    C(<throughput, latency>) and its QEMU ceiling, associated with each
    other (docs/slo.md in the iosched project).
  - The module runs C(iosched.cinder_qos.client) of iosched, the code behind
    C(iosched-slo type create) and C(iosched-slo type delete).
  - Idempotent. C(changed) is true only when a QoS spec, volume type or
    association was created, updated or deleted.
  - Supports check mode, which reads Cinder but changes nothing and
    reports what a real run would do (including the conflicts it would
    refuse).
  - The C(openstack.cloud) collection has no QoS spec module; this module
    takes the same connection parameters as its modules.
version_added: "0.1.0"
author: iosched project
requirements:
  - python >= 3.11
  - openstacksdk >= 1.0.0
  - "the iosched package (C(cinder_qos)) installed for the Python
    interpreter that runs the module, on the host the task targets
    (usually C(localhost) with C(connection=local), or a controller
    where iosched is installed)"
options:
  name:
    description: Name of the volume type and of its QoS spec.
    type: str
    required: true
  slo:
    description:
      - The SLO text, e.g. C(500iops,10ms,p99) or C(8MB/s,10ms);
        syntax in docs/slo.md (C(iosched-slo translate --help)).
      - Required when I(state=present).
    type: str
  min_latency_ms:
    description:
      - The latency the back end measured, in ms. An SLO latency below
        it is refused (no ceiling can meet it).
    type: float
  force:
    description:
      - When a QoS spec of this name exists with other keys, update its
        keys to this SLO instead of failing. Volumes already attached keep
        Nova's ceiling until re-attach; the iosched agent reads the new SLO.
    type: bool
    default: false
  state:
    description:
      - C(present) creates the QoS spec, the type and the association
        (what exists and is equal is left alone).
      - C(absent) deletes the type, then its QoS spec unless other types
        use it; refused while volumes use the type.
    type: str
    choices: [present, absent]
    default: present
  cloud:
    description:
      - Named cloud in clouds.yaml (or a dict of its settings), as for
        the C(openstack.cloud) modules. Without I(cloud) nor I(auth), the
        C(OS_*) environment is used.
    type: raw
  auth:
    description:
      - Auth settings (auth_url, username, password, project_name and so
        on), or endpoint and token for I(auth_type=admin_token).
    type: dict
  auth_type:
    description:
      - keystoneauth plugin name, e.g. C(password), C(token),
        C(admin_token), C(v3applicationcredential).
    type: str
  region_name:
    description: Region of the cloud.
    type: str
  interface:
    description: Endpoint interface of the catalog.
    type: str
    choices: [admin, internal, public]
    default: public
    aliases: [endpoint_type]
  validate_certs:
    description: Verify TLS certificates (None uses the cloud's setting).
    type: bool
    aliases: [verify]
  ca_cert:
    description: CA bundle to verify the endpoints with.
    type: str
    aliases: [cacert]
  api_timeout:
    description: Timeout of each API call, in seconds.
    type: int
notes:
  - Needs Cinder admin credentials (QoS specs and volume types are admin
    APIs).
  - The CLI's refusals are failures here, with the client's message in
    C(msg), C(error) (bad input, conflict, not found, cinder) and the
    CLI's C(exit_code) (2, 3, 4, 1) - a bad SLO text, a conflicting
    existing spec or association, a type in use by volumes.
'''

EXAMPLES = r'''
- name: An SLO type for latency-critical databases
  iosched_slo_type:
    cloud: mycloud
    name: gold
    slo: 500iops,10ms,p99
    min_latency_ms: 2

- name: Change its SLO (updates the QoS spec keys in place)
  iosched_slo_type:
    cloud: mycloud
    name: gold
    slo: 800iops,10ms,p99
    force: true

- name: Remove it (refused while volumes use it)
  iosched_slo_type:
    cloud: mycloud
    name: gold
    state: absent
'''

RETURN = r'''
slo_type:
  description: The SLO type after the run (before it, for state=absent).
  returned: when the type exists or was planned
  type: dict
  contains:
    name: {description: volume type name, type: str}
    id: {description: volume type ID (empty in check mode before
         creation), type: str}
    qos_spec: {description: QoS spec name, type: str}
    qos_spec_id: {description: QoS spec ID, type: str}
    consumer: {description: QoS spec consumer (front-end), type: str}
    specs: {description: QoS spec keys, type: dict}
    slo: {description: the SLO the keys carry (normalised), type: str}
actions:
  description: What was done (or would be, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["created QoS spec gold", "created volume type gold",
           "associated gold with gold"]
'''

from ansible.module_utils.basic import AnsibleModule

try:
    from iosched.cinder_qos import client
    from iosched.cinder_qos import rest
    HAS_IOSCHED, IMPORT_ERROR = True, ''
except ImportError as e:    # reported by fail_json in main()
    HAS_IOSCHED, IMPORT_ERROR = False, str(e)

ARGS = dict(
    name=dict(type='str', required=True),
    slo=dict(type='str'),
    min_latency_ms=dict(type='float'),
    force=dict(type='bool', default=False),
    state=dict(type='str', default='present', choices=['present', 'absent']),
    cloud=dict(type='raw'),
    auth=dict(type='dict', no_log=True),
    auth_type=dict(type='str'),
    region_name=dict(type='str'),
    interface=dict(type='str', default='public',
                   choices=['admin', 'internal', 'public'],
                   aliases=['endpoint_type']),
    validate_certs=dict(type='bool', aliases=['verify']),
    ca_cert=dict(type='str', aliases=['cacert']),
    api_timeout=dict(type='int'),
)


def connect(params):
    """An openstacksdk Connection from openstack.cloud-style params."""
    import openstack
    kw = {k: params[k] for k in ('auth', 'auth_type', 'region_name',
                                 'interface', 'api_timeout')
          if params.get(k) is not None}
    if params.get('validate_certs') is not None:
        kw['verify'] = params['validate_certs']
    if params.get('ca_cert'):
        kw['cacert'] = params['ca_cert']
    cloud = params.get('cloud')
    if isinstance(cloud, dict):
        kw = dict(cloud, **kw)
        cloud = None
    return openstack.connect(cloud=cloud, **kw)


def _view(r):
    return dict(name=r.type_name, id=r.type_id, qos_spec=r.qos_name,
                qos_spec_id=r.qos_id, consumer=r.consumer,
                specs=dict(r.specs), slo=r.slo_text)


def predict_present(admin, p, force):
    """The actions ``admin.create(p, force)`` would take; reads only.

    Raises client.Conflict where create would refuse.
    """
    api, actions = admin.api, []
    spec = next((q for q in api.qos_specs() if q['name'] == p.qos_name),
                None)
    if spec is None:
        actions.append('would create QoS spec %s' % p.qos_name)
    else:
        delta = client.diff(dict(spec.get('specs') or {}), p.specs)
        if spec.get('consumer', p.consumer) != p.consumer:
            delta.insert(0, 'consumer: %s (want %s)'
                         % (spec.get('consumer'), p.consumer))
        if delta and not force:
            raise client.Conflict(
                "QoS spec '%s' exists with other keys: %s; set force: true "
                "to update its keys" % (p.qos_name, '; '.join(delta)))
        actions.append('would update QoS spec %s: %s'
                       % (p.qos_name, '; '.join(delta)) if delta
                       else 'unchanged QoS spec %s' % p.qos_name)
    vtype = next((t for t in api.types() if t['name'] == p.type_name), None)
    if vtype is None:
        actions.append('would create volume type %s' % p.type_name)
        actions.append('would associate %s with %s'
                       % (p.qos_name, p.type_name))
        return actions
    actions.append('unchanged volume type %s' % p.type_name)
    other = next((q for q in api.qos_specs()
                  if any(a.get('id') == vtype['id']
                         for a in api.associations(q['id']))), None)
    if other is not None and (spec is None or other['id'] != spec['id']):
        raise client.Conflict("volume type '%s' is associated with QoS spec "
                              "'%s', not '%s'; disassociate it first"
                              % (p.type_name, other['name'], p.qos_name))
    actions.append('unchanged association' if other is not None
                   else 'would associate %s with %s'
                   % (p.qos_name, p.type_name))
    return actions


def run(module, admin):
    """Apply (or predict) the module's params; returns the result dict."""
    params = module.params
    name = params['name']
    if params['state'] == 'absent':
        try:
            cur = admin.show(name)
        except client.NotFound as e:
            return dict(changed=False, actions=['absent: %s' % e])
        if module.check_mode:
            vols = admin.api.volumes_of_type(cur.type_id, cur.type_name)
            if vols:
                raise client.Conflict(
                    "volume type '%s' is in use by %d volume(s) (%s); "
                    'retype or delete them first'
                    % (name, len(vols), ', '.join(vols[:5])))
            return dict(changed=True, slo_type=_view(cur),
                        actions=['would delete volume type %s' % name,
                                 'would delete QoS spec %s unless other '
                                 'types use it' % cur.qos_name])
        r = admin.delete(name)
        return dict(changed=True, slo_type=_view(r), actions=r.actions)
    p = client.plan(name, params['slo'],
                    min_latency_ms=params['min_latency_ms'])
    if module.check_mode:
        actions = predict_present(admin, p, params['force'])
        planned = client.Result(p.type_name, p.qos_name, p.consumer,
                                dict(p.specs), p.slo_text, actions)
        return dict(changed=any(not a.startswith('unchanged')
                                for a in actions),
                    slo_type=_view(planned), actions=actions)
    r = admin.create(p, force=params['force'])
    return dict(changed=r.changed, slo_type=_view(r), actions=r.actions)


def main():
    """Module entry point."""
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=True,
                           required_if=[('state', 'present', ['slo'])])
    if not HAS_IOSCHED:
        module.fail_json(msg='iosched (cinder_qos) is not importable by %s: '
                             '%s; install iosched on the target host'
                         % (module._name, IMPORT_ERROR))
    from keystoneauth1 import exceptions as ks_exc
    from openstack import exceptions as sdk_exc
    try:
        try:
            conn = connect(module.params)
            admin = client.SloAdmin(rest.RestApi(conn.block_storage))
            result = run(module, admin)
        except (sdk_exc.SDKException, ks_exc.ClientException) as e:
            raise client.AdminError('cannot reach Cinder: %s' % e) from e
    except client.AdminError as e:
        kinds = {client.InputError: 'bad input',
                 client.Conflict: 'conflict',
                 client.NotFound: 'not found'}
        module.fail_json(msg=str(e), error=kinds.get(type(e), 'cinder'),
                         exit_code=e.code, changed=False)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
