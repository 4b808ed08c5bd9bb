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
"""``io-host-agent`` as a service: signals, reload, Guru Meditation, exit.

The semantics of an oslo.service ``ServiceLauncher`` with
``restart_method='mutate'``, in the agent's own single process:

* SIGHUP: the configuration files are read again between two ticks
  (``CONF.mutate_config_files()``). Mutable options apply from the next
  tick on; a changed immutable option is named in a warning and keeps
  its value. Nothing is restored: the knobs stay held.
* SIGUSR2: a Guru Meditation Report (oslo.reports): a file in
  ``[oslo_reports] log_dir`` when set, else on stderr. The agent goes on.
* SIGTERM, SIGINT, SIGQUIT, SIGUSR1, SIGALRM: the current tick ends, every
  knob the journal holds is written back, then the agent exits. Exit
  status 0 after SIGTERM or SIGINT (a stop, clean for systemd), 128 + the
  signal number after the others (a failure: ``Restart=`` applies).

Why not oslo.service itself (4.8, measured): its threading backend runs
the service in a worker process forked by cotyledon, and SIGHUP with
``restart_method='mutate'`` stops that worker and starts a new one (a full
restore and re-application of every knob, and a new privsep daemon); its
eventlet backend needs monkey-patching that libvirt-python's blocking
calls, the privsep client and the reporter's threads do not support.
"""

import signal
import threading
import time

from oslo_log import log as logging
from oslo_reports import guru_meditation_report as gmr
from oslo_reports.models import with_default_views

LOG = logging.getLogger(__name__)

STOP_SIGNALS = ('SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGUSR1', 'SIGALRM')
CLEAN_STOPS = ('SIGTERM', 'SIGINT')    # systemd's clean deaths, too


def register_agent_section(agent):
    """An ``iosched agent`` section in every Guru Meditation Report: what
    the agent holds and where its loop is.
    """
    def section():
        journal = getattr(agent.actuator, 'journal', None)
        held = (sorted('%s %s %s' % k for k in journal.pending())
                if journal is not None else [])
        outage = agent.outage
        return with_default_views.ModelWithDefaultViews({
            'host': agent.host,
            'ticks': agent.ticks,
            'reports built': agent.seq,
            'tick_interval': agent.conf.host_agent.tick_interval,
            'policies': ', '.join(p.name for p in agent.policies),
            'driver': ('cannot be read since tick %d: %s'
                       % (outage[0], outage[2]) if outage else 'answers'),
            'knobs held (journal)': len(held),
            'held': held,
        })
    gmr.TextGuruMeditation.register_section('iosched agent', section)


def version():
    from importlib import metadata
    try:
        return metadata.version('iosched')
    except metadata.PackageNotFoundError:
        return 'unknown'


class Launcher(object):
    """The process's signal handlers, around one agent.

    Until ``attach(agent)`` (waiting for the hypervisor), a stop ends
    ``sleep()`` and a SIGHUP reloads during it; afterwards both go to the
    agent's control loop.
    """

    def __init__(self, conf):
        self.conf = conf
        self.signum = None          # the signal that stops us, if any
        self.agent = None
        self._wake = threading.Event()
        self._reload_asked = False

    # -- set up ----------------------------------------------------------
    def install(self):
        for name in STOP_SIGNALS:
            signal.signal(getattr(signal, name), self._on_stop)
        signal.signal(signal.SIGHUP, self._on_hup)

    def setup_reports(self):
        """SIGUSR2 -> a Guru Meditation Report (``[oslo_reports]``)."""
        gmr.TextGuruMeditation.setup_autorun(version(),
                                             service_name='io-host-agent',
                                             conf=self.conf)

    def attach(self, agent):
        """From now on signals go to ``agent``'s control loop."""
        self.agent = agent
        if self.signum is not None:
            agent.stop()
        if self._reload_asked:
            self._reload_asked = False
            agent.call_between_ticks(self.reload)

    # -- state -------------------------------------------------------------
    @property
    def stopping(self):
        return self.signum is not None

    def exit_status(self):
        """0 without a signal or after a clean stop, else 128 + signum."""
        if self.signum is None or (signal.Signals(self.signum).name
                                   in CLEAN_STOPS):
            return 0
        return 128 + self.signum

    def sleep(self, seconds):
        """Wait ``seconds`` unless stopped (True when stopped); a SIGHUP
        meanwhile reloads the configuration.
        """
        deadline = time.monotonic() + seconds
        while not self.stopping:
            if self._reload_asked:
                self._reload_asked = False
                self.reload()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(left)
            self._wake.clear()
        return self.stopping

    # -- handlers (run in the main thread, between two bytecodes) ---------
    def _on_stop(self, signum, frame):
        if self.signum is None:
            self.signum = signum
            LOG.info('%s: restoring every knob held, then exiting',
                     signal.Signals(signum).name)
        self._wake.set()
        if self.agent is not None:
            self.agent.stop()

    def _on_hup(self, signum, frame):
        if self.agent is not None:
            self.agent.call_between_ticks(self.reload)
        else:
            self._reload_asked = True
            self._wake.set()

    # -- reload ------------------------------------------------------------
    def reload(self):
        """Read the configuration files again (SIGHUP); never raises."""
        try:
            fresh = self.conf.mutate_config_files()
        except Exception as e:
            LOG.error('SIGHUP: configuration not reloaded (%s); every '
                      'option keeps its value', e)
            return
        try:
            # every option once: a bad new value is said now, by name
            self.conf.log_opt_values(LOG, logging.DEBUG)
        except Exception as e:
            LOG.error('SIGHUP: a reloaded option is invalid: %s', e)
        LOG.info('SIGHUP: configuration reloaded, %d mutable options '
                 'changed%s', len(fresh), (': ' + ', '.join(sorted(
                     '%s.%s' % (g or 'DEFAULT', o) for g, o in fresh))
                     if fresh else ''))
