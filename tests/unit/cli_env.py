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
"""Where test_cli_fuzz runs the commands: input files and fakes.

``Files`` writes one input file of every kind (good configurations,
reports, a journal and a trace; empty, binary, malformed JSON/YAML/INI,
nested 5,000 deep, ...). ``Env`` installs fakes for everything slow or
outside the process (privsep and the libvirt driver, the message bus,
Nova, Cinder, libvirt for the testbed, the simulator and matplotlib for
iosched-iotrace) and ``Env.run(cmd, argv)`` calls the command's ``main``
in a fresh directory, returning (exit code, stdout, stderr); any other
exception escapes to the test. ``Env.written()`` is what a failed command
must not have done.
"""

import contextlib
import functools
import io
import logging
import os
import signal
import sys
import time
import warnings


class Started(Exception):
    """Raised by a fake where the command would start its real work."""


class Hang(Exception):
    """Raised by a fake clock when a command would loop for ever."""


# -- files -------------------------------------------------------------------

# Sentinel secrets in the fake configurations and the base argv: no case
# may print them (test_cli_fuzz.check)
SECRET_KEY = '5ec2e7' + 'ab' * 29          # 64 hex: a report (master) key
SECRET_PASS = 'S3ntinel-pass'
SECRETS = (SECRET_KEY, SECRET_PASS)
SECRET_URL = 'rabbit://u:%s@127.0.0.1:9/' % SECRET_PASS
_KEYSTONE = ''.join('[%s]\npassword = %s\n' % (s, SECRET_PASS)
                    for s in ('keystone_authtoken', 'cinder', 'placement'))
GOOD_AGENT_CONF = ('[DEFAULT]\ntransport_url = %s\n[host_agent]\n'
                   'driver = simulated\n[reporter]\nreport_key = %s\n%s'
                   % (SECRET_URL, SECRET_KEY, _KEYSTONE))
GOOD_NOVA_CONF = ('[DEFAULT]\ntransport_url = %s\n[iosched]\n'
                  'report_master_key = %s\n%s'
                  % (SECRET_URL, SECRET_KEY, _KEYSTONE))
GOOD_CINDER_CONF = '[cinder_qos]\nheadroom = 2.0\n%s' % _KEYSTONE
BAD_FILES = {
    'empty': b'',
    'binary': bytes(range(256)) * 4,
    'latin1': 'caf\u00e9 [x\n'.encode('latin-1'),
    'json_garbage': b'{"a": [1, 2,,}',
    'json_list': b'[]',
    'json_obj': b'{}',
    'json_null': b'null',
    'json_str': b'"x"',
    'json_wrong': b'{"host": 1, "ts": "soon", "version": "9.9"}',
    'json_deep': b'[' * 5000 + b']' * 5000,
    'ini_garbage': b'[host_agent\nfoo',
    'ini_noheader': b'just = text\n',
    'ini_badvalue': (b'[host_agent]\ntick_interval = abc\n'
                     b'[iosched]\nreport_ttl_intervals = abc\n'
                     b'[cinder_qos]\nheadroom = abc\n'),
    'ini_badchoice': (b'[host_agent]\ndriver = nosuch\n'
                      b'[iosched]\nmissing_report_policy = perhaps\n'),
    'yaml_garbage': b'a: [1, 2\n  b: {',
    'yaml_tab': b'a:\n\t- 1\n',
    'yaml_scalar': b'just a string\n',
    'yaml_list': b'- 1\n- two\n- {x: 3}\n',
    'yaml_alias_bomb': (b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
                        b'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
                        b'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n'),
    'gzip_garbage': b'\x1f\x8b\x08\x00garbage',
    'trace_header_only': b'{"format": "iosched-iotrace", "version": 1}\n',
}


class Files(object):
    """Input files of every kind under ``root`` (one per session)."""

    def __init__(self, root, tiny_trace):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.paths = {}
        for name, data in BAD_FILES.items():
            self.paths[name] = self._write(name, data)
        self.paths['dir'] = self.dir = os.path.join(root, 'adir')
        os.makedirs(self.dir, exist_ok=True)
        self.paths['missing'] = os.path.join(root, 'no', 'such', 'file')
        self.paths['long'] = os.path.join(root, 'l' * 5000)
        self.paths['ctrl'] = os.path.join(root, 'a\x01b\nc')
        self.paths['dev_null'] = '/dev/null'
        # a regular file the fake hostmap.devno takes for a block device
        self.paths['blockdev'] = self._write('blockdev', b'')
        from iosched.demo import scenario
        with open(scenario.DEFAULT_SCENARIO, 'rb') as fh:
            self.paths['good_scenario'] = self._write('scenario.yaml',
                                                      fh.read())
        # the agent's journal (and its one-agent lock) in this tree, not
        # the host's /var/lib/iosched, which a live agent may hold
        self.paths['good_agent_conf'] = self._write(
            'agent.conf', GOOD_AGENT_CONF.replace(
                '[host_agent]\n', '[host_agent]\njournal_path = %s\n' %
                os.path.join(root, 'agent-journal.jsonl'), 1).encode())
        self.paths['good_nova_conf'] = self._write(
            'nova.conf', GOOD_NOVA_CONF.encode())
        self.paths['good_cinder_conf'] = self._write(
            'cinder.conf', GOOD_CINDER_CONF.encode())
        self.paths['good_trace'] = tiny_trace
        self.paths['good_guests'] = self._write(
            'guests.yaml', b'- {name: g2, mode: rr}\n')

    def _write(self, name, data):
        path = os.path.join(self.root, name)
        with open(path, 'wb') as fh:
            fh.write(data)
        return path

    def __getitem__(self, name):
        return self.paths[name]

    def written(self, data):
        """A fresh file holding ``data`` (generated content)."""
        self._n = getattr(self, '_n', 0) + 1
        return self._write('gen-%d' % self._n, data)


# -- the environment: fakes for everything slow or outside ------------------

@contextlib.contextmanager
def saved_process_state():
    """Logging handlers/levels, sys.excepthook, warnings filters and
    signal handlers are put back after a command set them up (oslo.log,
    cliff, the demo, io-host-agent's service signals).
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {name: (lg.level, list(lg.handlers), lg.propagate)
               for name, lg in logging.Logger.manager.loggerDict.items()
               if isinstance(lg, logging.Logger)}
    hook = sys.excepthook
    filters = list(warnings.filters)
    disabled = logging.root.manager.disable
    signals = {s: signal.getsignal(s) for s in signal.valid_signals()
               if signal.getsignal(s) is not None}
    try:
        yield
    finally:
        for signum, handler in signals.items():
            if signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
        for h in root.handlers:
            if h not in handlers:
                with contextlib.suppress(Exception):
                    h.close()
        root.handlers[:] = handlers
        if root.level != level:
            root.setLevel(level)
        for name, lg in logging.Logger.manager.loggerDict.items():
            if isinstance(lg, logging.Logger):
                lv, hs, prop = loggers.get(name, (logging.NOTSET, [], True))
                if lg.level != lv:     # (setLevel clears every cache)
                    lg.setLevel(lv)
                if lg.handlers != hs:
                    lg.handlers[:] = hs
                lg.propagate = prop
        logging.disable(disabled)
        sys.excepthook = hook
        warnings.filters[:] = filters
        logging.captureWarnings(False)


def tiny_trace(path):
    """A real (small) simulator trace at ``path``; returns the Trace."""
    from iosched.iotrace import fmt
    from iosched.iotrace import simconv
    t = simconv.simulate(simconv.scenario('cfq', 2, 0.001, 1, None))
    fmt.write(t, path)
    return t


class FakeTestbed(object):
    calls = []

    def __init__(self, workdir, prefix, log=None):
        self.prefix = prefix

    def build(self, force=False):
        FakeTestbed.calls.append('build')

    def up(self, specs, pin=None, timeout=180.0):
        FakeTestbed.calls.append('up')
        return []

    def down(self):
        FakeTestbed.calls.append('down')
        return True

    def status(self):
        return []

    def close(self):
        pass


class FakeCloud(object):
    """iosched-cloud up/down: recorded, nothing started or removed."""

    calls = []

    @classmethod
    def up(cls, args):
        cls.calls.append('up')
        return 0

    @classmethod
    def down(cls, args):
        cls.calls.append('down')
        return 0


class FakeServer(object):
    transport = None

    def stop(self):
        pass

    def wait(self):
        pass


class Env(object):
    """Fakes installed for a whole module (a pytest MonkeyPatch)."""

    def __init__(self, mp, root):
        self.mp, self.root = mp, root
        trace_path = os.path.join(root, 'tiny.jsonl.gz')
        self.trace = tiny_trace(trace_path)
        self.files = Files(os.path.join(root, 'in'), trace_path)
        self._report_files()
        self._journal()
        self.case_dir = None
        self.api = None
        self._install()

    # input files that need the project's writers
    def _report_files(self):
        import json

        from tests.unit.nova_plugin import reports
        for key, host in (('good_report', 'compute-1'),
                          ('good_report2', 'compute-2')):
            self.files.paths[key] = self.files._write(
                '%s.json' % host, json.dumps(
                    reports.report(host=host).to_dict()).encode())

    def _journal(self):
        from iosched.host_agent.actuators import journal as journal_mod
        from iosched.host_agent import model
        path = os.path.join(self.files.root, 'journal.jsonl')
        j = journal_mod.Journal(path, clock=lambda: 1.7e9)
        j.record(model.Change(kind='vcpu_slice', instance_uuid='u1',
                              target='0', before=3000, after=1000,
                              rule='vslicer.lsvm_microslice', ts=5.0,
                              reason='L=2ms'))
        j.close()
        self.files.paths['good_journal'] = path

    def _install(self):
        mp = self.mp
        from oslo_config import cfg
        mp.setattr(cfg, 'find_config_files', lambda *a, **k: [])
        mp.setattr(cfg, 'find_config_dirs', lambda *a, **k: [])
        absent = os.path.join(self.root, 'absent.conf')
        from iosched.host_agent.cmd import explain
        from iosched.nova_plugin.cmd import placement
        from iosched.nova_plugin.cmd import placement_sources as sources
        from iosched.nova_plugin.cmd import status
        mp.setattr(explain, 'DEFAULT_CONFIG', absent)
        mp.setattr(placement, 'DEFAULT_CONFIG', absent)
        mp.setattr(status, 'DEFAULT_CONFIGS', (absent,))
        # io-host-agent: the driver is where the real start begins
        from iosched.host_agent import plugins

        real_load = plugins.load_class

        class FakeDriver(object):
            # also what load_class returns for its knob set
            name = 'simulated'

            @classmethod
            def prepare(cls, conf):
                pass

            @classmethod
            def from_conf(cls, conf):
                raise Started()

        def load_class(namespace, name):
            real_load(namespace, name)      # unknown names still refused
            return FakeDriver
        mp.setattr(plugins, 'load_class', load_class)
        # the bus: a broker that answers, agents that report at once
        from tests.unit.nova_plugin import reports

        def listen(conf, transport_url=None, store=None, host=None):
            for h in sorted(getattr(store, 'watch', ()) or ['compute-1']):
                store.admit(reports.report(host=h, ts=time.time(), seq=1))
            return FakeServer()

        clock = FakeClock()
        mp.setattr(sources, 'reports_from_bus', functools.partial(
            sources.reports_from_bus, probe=lambda url: None,
            listen=listen,
            resync=lambda *a: None, clock=clock, sleep=clock.sleep))

        def no_cloud(cloud=None):
            raise RuntimeError('no cloud configured (test fake)')
        real_flavor = sources.flavor_from_nova
        mp.setattr(sources, 'flavor_from_nova', lambda name, cloud=None:
                   real_flavor(name, cloud, connect=no_cloud))
        mp.setattr(status, 'collect', functools.partial(
            status.collect, listen=listen, request_resync=lambda *a: None,
            probe=lambda url: None))
        # iosched-demo: the two simulated runs
        from iosched.demo import cloud as demo_cloud
        mp.setattr(demo_cloud, 'set_defaults', lambda: None)
        from iosched.demo import cmd as demo_cmd
        # a broker answers (the unreachable one: test_demo_broker)
        mp.setattr(demo_cmd, 'broker_problem', lambda url, timeout=0: None)

        def run_variant(*a, **k):
            raise Started()
        mp.setattr(demo_cloud, 'run_variant', run_variant)
        # iosched-testbed: libvirt
        from iosched.testbed import daemons
        from iosched.testbed import testbed
        mp.setattr(testbed, 'Testbed', FakeTestbed)
        mp.setattr(daemons, 'ensure_libvirtd', lambda: False)
        mp.setattr(daemons, 'kvm_caps_thrash', lambda: False)
        mp.setattr(daemons, 'set_kvm_perms', lambda: None)
        # iosched-iotrace: the simulation, libvirt, tracefs, matplotlib
        from iosched.iotrace import hostmap
        from iosched.iotrace import record
        from iosched.iotrace import render
        from iosched.iotrace import simconv
        trace = self.trace
        mp.setattr(simconv, 'simulate', lambda scn: trace)

        def discover(hm):
            hm.vms = {'vm1': {'pid': 1, 'ranges': []}}
        mp.setattr(hostmap.HostMap, 'discover', discover)
        real_devno = hostmap.devno
        blockdev = self.files['blockdev']
        mp.setattr(hostmap, 'devno', lambda path: (
            (7, 0) if path == blockdev else real_devno(path)))

        class FakeRecorder(object):
            def __init__(self, *a, **k):
                pass

            def run(self, duration, progress):
                return trace
        mp.setattr(record, 'Recorder', FakeRecorder)

        def fake_render(t, outdir, *a):
            os.makedirs(outdir, exist_ok=True)
            path = os.path.join(outdir, 'report.html')
            with open(path, 'w') as fh:
                fh.write('<html></html>')
            return [path]
        mp.setattr(render, 'render', fake_render)
        # Cinder for iosched-slo type and openstack volume slo type
        from openstackclient.common import clientmanager

        from iosched.cinder_qos import client
        env = self
        # (not mp.setattr: its getattr would run osc's ClientCache)
        cls = clientmanager.ClientManager
        self._osc_saved = cls.__dict__.get('volume_slo')
        cls.volume_slo = property(lambda cm: client.SloAdmin(env.api))

    def close(self):
        from openstackclient.common import clientmanager
        if self._osc_saved is None:
            del clientmanager.ClientManager.volume_slo
        else:
            clientmanager.ClientManager.volume_slo = self._osc_saved

    # -- per case --------------------------------------------------------
    def start_case(self, case_dir):
        from iosched.cinder_qos import client
        from tests.unit.cinder_qos.test_client import FakeApi
        self.case_dir = case_dir
        os.makedirs(case_dir)
        self.api = FakeApi()
        client.SloAdmin(self.api).create(client.plan('gold', '100iops,20ms'))
        self.before = self._cinder_state()
        FakeTestbed.calls = []
        FakeCloud.calls = []

    def _cinder_state(self):
        import copy
        return copy.deepcopy((self.api._specs, self.api._types,
                              self.api.assoc))

    def written(self):
        """What a failed command must not have done."""
        done = []
        if self._cinder_state() != self.before:
            done.append('changed Cinder')
        if FakeTestbed.calls:
            done.append('testbed %s' % FakeTestbed.calls)
        if FakeCloud.calls:
            done.append('cloud %s' % FakeCloud.calls)
        if os.listdir(self.case_dir):
            done.append('wrote %s' % os.listdir(self.case_dir))
        return done

    # -- runners: each returns (code, stdout, stderr) -------------------
    def run(self, cmd, argv):
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.case_dir)
        try:
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err), saved_process_state():
                try:
                    code = getattr(self, 'run_' + cmd.runner)(list(argv))
                except SystemExit as e:
                    code = e.code
                    if isinstance(code, str):
                        err.write(code)
                        code = 1
                    code = code or 0
                except Started:
                    code = 0
        finally:
            os.chdir(cwd)
        return code, out.getvalue(), err.getvalue()

    def run_agent(self, argv):
        from iosched.host_agent.cmd import agent
        agent.CONF.clear()      # a fresh process parses once
        return agent.main(argv)

    def run_explain(self, argv):
        from iosched.host_agent.cmd import explain
        return explain.main(argv)

    def run_wakeup(self, argv):
        from iosched.host_agent.cmd import wakeup_probe
        from iosched.host_agent import model

        def probe(conf, cases, cpus, wakes, hogs_per_cpu, lsvm_weight):
            return tuple(model.WakeupProbe(c, True, 15.0, 40.0, wakes)
                         for c in cases)
        wakeup_probe.CONF.clear()
        return wakeup_probe.main(argv, probe=probe)

    def run_placement(self, argv):
        from iosched.nova_plugin.cmd import placement
        return placement.main(argv)

    def run_status(self, argv):
        from iosched.nova_plugin.cmd import status
        return status.main(argv)

    def run_report_key(self, argv):
        from iosched.nova_plugin.cmd import report_key
        return report_key.main(argv)

    def run_demo(self, argv):
        from iosched.demo import cmd
        return cmd.main(argv)

    def run_slo(self, argv):
        from iosched.cinder_qos import client
        from iosched.cinder_qos.cmd import slo
        api = self.api
        return slo.main(argv, admin_factory=lambda a: client.SloAdmin(api))

    def run_osc(self, argv):
        from openstackclient import shell
        return shell.main(['--os-auth-type', 'admin_token', '--os-endpoint',
                           'http://127.0.0.1:9/v3', '--os-token', 'x']
                          + argv)

    def run_testbed(self, argv):
        from iosched.testbed import cli
        return cli.main(argv)

    def run_cloud(self, argv):
        # up/down build or remove a real cloud as root: faked here (and
        # run as if root, so that the fakes are reached)
        from unittest import mock

        from iosched.cloud import cli
        from iosched.cloud import procs
        with mock.patch.object(cli, 'up', FakeCloud.up), \
                mock.patch.object(cli, 'down', FakeCloud.down), \
                mock.patch.object(cli.os, 'geteuid', lambda: 0), \
                mock.patch.object(procs, 'running', lambda layout: {
                    n: 1 for n in layout.processes()}):
            return cli.main(argv)

    def run_iotrace(self, argv):
        from iosched.iotrace import cli
        return cli.main(argv)


class FakeClock(object):
    """time for reports_from_bus: 50 ms a sleep; a listen of more than
    a simulated day is a hang.
    """

    def __init__(self):
        self.t = 0.0
        self.sleeps = 0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s
        self.sleeps += 1
        if self.sleeps > 100000:
            raise Hang('listened for more than a simulated day')
