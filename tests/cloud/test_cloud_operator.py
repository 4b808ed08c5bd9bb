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
"""docs/operator.md's tenant and admin sections followed as written.

The fenced blocks of sections 5 (LSVM flavors) and 6 (SLO volume types)
are read from the document, so a command that drifts from the code fails
here, and run in order against the cloud, with only what names this
cloud substituted (``SUBST``): flavor, type, server and volume names get
an ``op-`` prefix (the DevStack plugin's examples already hold the
document's names), the example boot's image and network become the
cloud's guest image and ``--nic none``, ``compute-3`` this host, the
agent's configuration path the cloud's, ``<uuid>`` the server the block
created, and ``iosched-placement`` (which reads /etc/nova/nova.conf by
default) gets the cloud's nova.conf. ``openstack`` runs as the cloud's
admin, but ``server create`` and ``volume create``, which run as the
tenant. A boot is waited for (ACTIVE) and ``iosched-explain`` is asked
again until the agent has acted, as an operator would.
"""

import re
import shlex

import pytest

from tests.cloud import client
from tests.cloud.client import LAYOUT
from tests.cloud.client import openstack

DOC = 'docs/operator.md'
NAMES = ('lsvm.small', 'io.medium', 'slo-gold', 'lsvm-1', 'db-1')
TENANT = (('server', 'create'), ('volume', 'create'))


def section_commands(text, number):
    """The commands of the fenced blocks of section ``number``: lines
    joined at trailing backslashes, comments dropped (shlex).
    """
    m = re.search(r'^## %d\. .*?(?=^## )' % number, text, re.M | re.S)
    assert m, 'no section %d in %s' % (number, DOC)
    out = []
    for block in re.findall(r'^```[a-z]*\n(.*?)^```', m.group(0),
                            re.M | re.S):
        for line in block.replace('\\\n', ' ').splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                out.append(argv)
    return out


def subst(argv, server_id=None):
    """The document's command for this cloud (see the module docstring)."""
    out = []
    it = iter(argv)
    for a in it:
        if a in NAMES:
            a = 'op-' + a
        elif a == '--image':
            out += [a, 'iosched-guest-idle']
            next(it)
            continue
        elif a == '--network':
            out += ['--nic', 'none']
            next(it)
            continue
        elif a == 'compute-3':
            a = LAYOUT.hostname
        elif a == '/etc/iosched/host-agent.conf':
            a = client.AGENT_CONF
        elif a == '<uuid>':
            a = server_id
        out.append(a)
    if out[0] == 'iosched-placement':
        out[0:1] = [LAYOUT.bin('iosched-placement'), '--config-file',
                    LAYOUT.etc('nova', 'nova.conf')]
    elif out[0] == 'iosched-explain':
        out[0] = LAYOUT.bin('iosched-explain')
    elif out[0] == 'openstack' and tuple(out[1:3]) not in TENANT:
        out[1:1] = ['--os-cloud', 'devstack-admin']
    return out


@pytest.mark.parametrize('line, want', [
    ('openstack server create --flavor lsvm.small --image cirros '
     '--network private lsvm-1',
     'openstack server create --flavor op-lsvm.small --image '
     'iosched-guest-idle --nic none op-lsvm-1'),
    ('openstack volume slo type list',
     'openstack --os-cloud devstack-admin volume slo type list'),
])
def test_subst(line, want):
    assert subst(shlex.split(line)) == want.split()


def _cleanup():
    for sid in [s['ID'] for s in openstack('server', 'list')
                if s['Name'] == 'op-lsvm-1']:
        openstack('server', 'delete', '--wait', sid, parse=False,
                  check=False)
    for v in openstack('volume', 'list'):
        if v['Name'] == 'op-db-1':
            client.wait_volume(v['ID'], 'available')
            openstack('volume', 'delete', v['ID'], parse=False)
    openstack('volume', 'slo', 'type', 'delete', 'op-slo-gold', admin=True,
              parse=False, check=False)
    for f in ('op-lsvm.small', 'op-io.medium'):
        openstack('flavor', 'delete', f, admin=True, parse=False,
                  check=False)


def test_operator_guide_sections_5_and_6(cloud):
    with open(DOC) as f:
        text = f.read()
    cmds = section_commands(text, 5) + section_commands(text, 6)
    assert len(cmds) >= 9, cmds
    server_id, seen = None, []
    try:
        for argv in cmds:
            cmd = subst(argv, server_id)
            if cmd[0].endswith('iosched-explain'):
                res = client.wait(lambda: (lambda r: r if 'vslicer.lsvm'
                                           in r.stdout else None)(
                    client.run(cmd)), 'iosched-explain shows the LSVM', 180,
                    5)
            else:
                if cmd[1:3] == ['server', 'create']:
                    # the guide's step before: the host admits the LSVM
                    # (on the busy one-machine cloud the agent's W can sit
                    # above the flavor's bound for a while)
                    client.admits_lsvms(cmd[cmd.index('--flavor') + 1])
                res = client.run(cmd)
            seen.append((argv[:3], res.stdout if argv[0] ==
                         'iosched-placement' else res.stdout[-400:]))
            if cmd[1:3] == ['server', 'create']:
                server_id = re.search(r'\|\s+id\s+\|\s+(\S+)',
                                      res.stdout).group(1)
                srv = client.wait_built(server_id, 'the boot ends', 300)
                assert srv['status'] == 'ACTIVE', client.text(dict(
                    srv, scheduler=client.scheduler_says(),
                    placement=client.lsvm_placement()))
            if argv[0] == 'iosched-placement':
                assert LAYOUT.hostname in res.stdout, res.stdout
    finally:
        print('\n'.join('%s: %s' % (' '.join(a), o) for a, o in seen))
        _cleanup()
