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
"""iosched: I/O-aware scheduling for OpenStack Nova and Cinder on KVM."""

import glob

import setuptools


def _reqs(path):
    with open(path) as fh:
        return [line.split('#')[0].strip() for line in fh
                if line.split('#')[0].strip()]


setuptools.setup(
    name='iosched',
    version='0.1.0',
    description='I/O-aware VM scheduling for OpenStack Nova/Cinder on KVM',
    long_description=open('README.md').read(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    python_requires='>=3.11',
    packages=setuptools.find_packages(
        include=['iosched', 'iosched.*']),
    package_data={'iosched.demo': ['scenarios/*.yaml'],
                  'iosched.testbed': ['guest/*.c']},
    # Generated sample configurations and the agent's systemd unit, in
    # <prefix>/share/iosched/ (a venv's prefix is the venv).
    data_files=[
        ('share/iosched/etc', sorted(glob.glob('etc/iosched/*.sample'))),
        ('share/iosched/systemd', sorted(glob.glob('etc/systemd/*.service'))),
    ],
    install_requires=_reqs('requirements.txt'),
    extras_require={
        # nova-scheduler hosts have Nova already; the demo needs it too.
        'nova': ['nova>=30.0.0'],
        # Cinder API hosts have Cinder already; tests/cinder runs its API.
        'cinder': ['cinder>=27.0.0'],
        # compute nodes: builds against libvirt-dev
        'libvirt': ['libvirt-python>=9.0'],
        # `openstack volume slo ...`: the osc the admin runs the plugin in
        'osc': ['python-openstackclient>=6.0.0'],
    },
    entry_points={
        'console_scripts': [
            'io-host-agent = iosched.host_agent.cmd.agent:main',
            'iosched-explain = iosched.host_agent.cmd.explain:main',
            'iosched-wakeup-probe = iosched.host_agent.cmd.wakeup_probe:main',
            'iosched-placement = iosched.nova_plugin.cmd.placement:main',
            'iosched-status = iosched.nova_plugin.cmd.status:main',
            'iosched-report-key = iosched.nova_plugin.cmd.report_key:main',
            'iosched-demo = iosched.demo.cmd:main',
            'iosched-slo = iosched.cinder_qos.cmd.slo:main',
            'iosched-testbed = iosched.testbed.cli:main',
            'iosched-iotrace = iosched.iotrace.cli:main',
        ],
        'oslo.config.opts': [
            'iosched.host_agent = iosched.host_agent.conf.opts:list_opts',
            'iosched.nova_plugin = iosched.nova_plugin.conf:list_opts',
            'iosched.cinder_qos = iosched.cinder_qos.conf:list_opts',
        ],
        # `openstack volume slo type ...` (python-openstackclient plugin)
        'openstack.cli.extension': [
            'volume_slo = iosched.cinder_qos.osc.plugin',
        ],
        'openstack.volume_slo.v1': [
            'volume_slo_type_create = iosched.cinder_qos.osc.commands:CreateSloType',
            'volume_slo_type_list = iosched.cinder_qos.osc.commands:ListSloType',
            'volume_slo_type_show = iosched.cinder_qos.osc.commands:ShowSloType',
            'volume_slo_type_set = iosched.cinder_qos.osc.commands:SetSloType',
            'volume_slo_type_delete = iosched.cinder_qos.osc.commands:DeleteSloType',
        ],
        # Named like Nova's own entries: one per extra-spec namespace.
        'nova.api.extra_spec_validators': [
            'iosched = iosched.nova_plugin.validators',
        ],
        # Drivers only read; each one's knob set (the writer of that kind
        # of host) is registered under the same name in ...knobs.
        'iosched.host_agent.drivers': [
            'simulated = iosched.simdriver.driver:SimulatedDriver',
            'libvirt = iosched.host_agent.drivers.libvirt.driver:LibvirtDriver',
        ],
        'iosched.host_agent.knobs': [
            'simulated = iosched.simdriver.knobs:SimulatedKnobs',
            'libvirt = iosched.host_agent.actuators.host_knobs:HostKnobs',
        ],
        'iosched.host_agent.policies': [
            'vslicer = iosched.host_agent.policies.vslicer:VSlicerPolicy',
            'isacs = iosched.host_agent.policies.isacs:IsacsPolicy',
            'vturbo = iosched.host_agent.policies.vturbo:VTurboPolicy',
            'slo = iosched.host_agent.policies.slo:SloPolicy',
            'vaio = iosched.host_agent.policies.vaio:VaioPolicy',
            'ibalancer = iosched.host_agent.policies.ibalancer:IBalancerPolicy',
        ],
        'iosched.host_agent.actuators': [
            'driver = iosched.host_agent.actuators.driver:DriverActuator',
            'noop = iosched.host_agent.actuators.noop:NoopActuator',
        ],
    },
    classifiers=[
        'Environment :: OpenStack',
        'License :: OSI Approved :: Apache Software License',
        'Programming Language :: Python :: 3.11',
    ],
)
