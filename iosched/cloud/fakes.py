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
"""The mixed cloud: ``iosched-cloud up --fake-computes N``.

Beside the real nova-compute (libvirt), N more nova-computes run Nova's
fake driver, each with an ``io-host-agent`` of the simulated driver whose
load differs from host to host, so that the real nova-scheduler chooses
between hosts with iosched's filters and weigher on real agents' reports
(docs/cloud.md#a-mixed-cloud-for-placement). Fake compute ``i`` (1..N):

* Nova host, node and agent host ``<hostname>-fake<i>``
  (``Layout.fake_host``);
* ``nova-compute-fake<i>``: ``etc/nova-fake<i>/nova.conf``
  (``compute_conf``): the sections of the real nova.conf a compute reads
  (bus, Placement, Glance, Cinder, Neutron, service user), with its own
  ``host``, ``state_path`` and ``instances_path``, no database (as
  DevStack's nova-cpu.conf), no ``[libvirt]``, the serial console off.
  The driver is ``fake.FakeDriverWithoutFakeNodes``: ``fake.FakeDriver``
  gives its node a UUID new in every process, so a fake compute that
  started again would fail on its own node record ("No local node identity
  found" or a duplicate node); the subclass keeps ``compute_id`` in its
  ``state_path`` as a real driver does. Inventory: Nova's fake (1000
  vCPUs, 800000 MB, 600000 GB);
* ``iosched-agent-fake<i>``: ``etc/iosched-fake<i>/host-agent.conf``
  (``agent_conf``): the real agent's file as the DevStack plugin wrote
  it, with ``driver = simulated``, ``simulated_profile`` from
  ``PROFILES``, its own journal and state dir, no metrics endpoint (one
  port per machine), no Cinder lookups (its volumes are simulated) and
  the simulated disk's capacity. It reports over the cloud's vhost and
  keeps its trait and ``<host>:iosched`` child provider on the fake
  compute node's provider, as the real agent does.

``PROFILES`` (``iosched.simdriver.profiles``): host 1 ``light``, host 2
``loaded`` (the Nova plugin refuses it any I/O or LSVM request), host 3
``busy`` (takes an I/O request, ranked below ``light``), then again.
"""

import os

from iosched.cloud import configs
from iosched.cloud import devstack_ini
from iosched.cloud import layout as layout_mod
from iosched.cloud import procs
from iosched.cloud import services

DRIVER = 'fake.FakeDriverWithoutFakeNodes'
PROFILES = ('light', 'loaded', 'busy')

# What a nova-compute reads of the real nova.conf (configs.nova).
COMPUTE_SECTIONS = ('DEFAULT', 'keystone_authtoken', 'service_user',
                    'placement', 'cinder', 'glance', 'neutron', 'vnc',
                    'spice', 'oslo_messaging_notifications')
# [DEFAULT] options of the API services only
API_ONLY = ('osapi_compute_workers', 'metadata_workers')


def profile(index):
    """The ``[host_agent] simulated_profile`` of fake compute ``index``."""
    return PROFILES[(index - 1) % len(PROFILES)]


def count(requested, previous):
    """How many fake computes ``up`` runs: ``--fake-computes`` when given,
    else as many as the cloud has (``previous``, the recorded layout's).
    Fewer than run is refused: their servers and node records would stay.
    """
    if requested is None:
        return previous
    if requested < previous:
        raise procs.ServiceFailed(
            '--fake-computes %d: the cloud runs %d fake computes; fewer is '
            'not supported (their servers and compute nodes would stay): '
            '`iosched-cloud down`, then up again' % (requested, previous))
    return requested


def compute_dir(layout, index):
    return layout.path('nova-fake%d' % index)


def compute_conf_path(layout, index):
    return layout.etc('nova-fake%d' % index, 'nova.conf')


def agent_conf_path(layout, index):
    return layout.etc('iosched-fake%d' % index, 'host-agent.conf')


def agent_data_dir(layout, index):
    return layout.path('data', 'iosched-fake%d' % index)


def real_agent_conf_path(layout):
    """host-agent.conf as the DevStack plugin writes it
    (``IOSCHED_AGENT_CONF`` under the cloud's ``IOSCHED_CONF_DIR``).
    """
    return layout.etc('iosched', 'host-agent.conf')


def compute_conf(layout, index):
    """nova.conf of fake compute ``index``: ``{section: {option: value}}``.
    """
    base = configs.nova(layout)
    out = {s: dict(base[s]) for s in COMPUTE_SECTIONS}
    state = compute_dir(layout, index)
    for option in API_ONLY:
        out['DEFAULT'].pop(option, None)
    out['DEFAULT'].update(host=layout.fake_host(index), state_path=state,
                          instances_path=os.path.join(state, 'instances'),
                          compute_driver=DRIVER)
    out['serial_console'] = {'enabled': 'False'}
    out['oslo_concurrency'] = {'lock_path': os.path.join(state, 'locks')}
    return out


# Options of the real agent's file a simulated host must not share: the
# libvirt driver's, Cinder's (volumes of a simulated host are simulated),
# the privileged helper (no host knob is written), the metrics port.
AGENT_DROPPED = ('libvirt', 'cinder', 'host_agent_privsep')


def agent_conf(base, layout, index):
    """host-agent.conf of fake compute ``index`` from the real agent's
    ``base`` (``devstack_ini.parse`` of it: ``{section: {option:
    [values]}}``; the last value of an option is the one oslo.config
    reads).
    """
    out = {section: {option: values[-1] for option, values in opts.items()}
           for section, opts in base.items() if section not in AGENT_DROPPED}
    data = agent_data_dir(layout, index)
    agent = out.setdefault('host_agent', {})
    agent.pop('disk_capacity_iops', None)     # the simulated disk's own
    agent.update(driver='simulated', host=layout.fake_host(index),
                 simulated_profile=profile(index),
                 journal_path=os.path.join(data, 'journal.jsonl'))
    out.setdefault('host_paths', {})['state_dir'] = data
    out['volume_slo'] = {'from_cinder': 'False'}
    out['metrics'] = {'enabled': 'False'}
    return out


def start_computes(layout, conn, timeout=180.0):
    """Write each fake compute's nova.conf, start the ones not running,
    wait until each is up and mapped into the cell as a hypervisor.
    """
    for i in layout.fake_indexes:
        for d in ('instances', 'locks'):
            os.makedirs(os.path.join(compute_dir(layout, i), d),
                        exist_ok=True)
        conf = configs.write(compute_conf_path(layout, i),
                             compute_conf(layout, i))
        procs.start(layout, layout_mod.fake_compute_service(i),
                    [layout.bin('nova-compute'), '--config-file', conf])
    for i in layout.fake_indexes:
        services.discover_compute(layout, conn, timeout=timeout,
                                  host=layout.fake_host(i),
                                  name=layout_mod.fake_compute_service(i))


def start_agents(layout, conn, timeout=120.0):
    """Write each simulated agent's config from the real agent's, start
    the ones not running, wait for each one's trait and child provider.
    """
    base = devstack_ini.parse(real_agent_conf_path(layout))
    if not base.get('host_agent'):
        raise procs.ServiceFailed(
            'no agent configuration at %s: the DevStack plugin writes it '
            '(stack post-config)' % real_agent_conf_path(layout))
    for i in layout.fake_indexes:
        os.makedirs(agent_data_dir(layout, i), exist_ok=True)
        conf = configs.write(agent_conf_path(layout, i),
                             agent_conf(base, layout, i))
        procs.start(layout, layout_mod.fake_agent_service(i),
                    [layout.bin('io-host-agent'), '--config-file', conf])
    for i in layout.fake_indexes:
        services.wait_iosched_provider(layout, conn, timeout=timeout,
                                       host=layout.fake_host(i),
                                       name=layout_mod.fake_agent_service(i))
