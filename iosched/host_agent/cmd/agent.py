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
"""``io-host-agent``: the iosched agent daemon of a compute node.

Usage::

    io-host-agent --config-file /etc/iosched/host-agent.conf

It logs its effective configuration, waits for the hypervisor when it
does not answer yet (backoff, ``[host_agent] driver_retry_interval``),
restores whatever a crashed previous run left changed (journal), ticks
until a stop signal, then restores every knob it changed and exits.
SIGHUP reloads the mutable options, SIGUSR2 writes a Guru Meditation
Report (``iosched.host_agent.cmd.service``).

Exit status: 0 after a clean stop (SIGTERM, SIGINT); 1 when the journal
stopped taking entries (it restored what the journal records, then
stopped rather than act unjournaled); 2 when it cannot start (bad
configuration, another agent holds the journal, the journal cannot be
read, the driver does not open); 128 + N after another signal N.
"""

import contextlib
import io
import sys
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_reports import opts as gmr_opts

from iosched.host_agent.actuators import journal_lock
from iosched.host_agent import assembly
from iosched.host_agent.cmd import clip
from iosched.host_agent.cmd import service
from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import metrics
from iosched.host_agent import placement_base
from iosched.host_agent import placement_inventory
from iosched.host_agent import placement_trait
from iosched.host_agent import plugins
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import resync
from iosched.host_agent.reporter import rpcapi
from iosched.host_agent.reporter import sender as report_sender

LOG = logging.getLogger(__name__)
CONF = agent_conf.CONF
# The journal could not take an entry (the agent restored and stopped).
EXIT_FAILURE = 1


def build_reporter(conf):
    if not conf.reporter.enabled:
        return None
    transport = messaging.get_transport(conf, conf.reporter.transport_url)
    # retry=1: a cast tries one reconnection (about a second) and fails
    # while the broker is down, instead of blocking until it is back;
    # main() sends from a thread (sender.BackgroundSender) that retries.
    # (retry=0 never revives a closed pooled connection: every later cast
    # failed with "connection already closed", measured in CI.)
    return rpcapi.ReportAPI(transport, conf.reporter.topic,
                            key=check_report_key(conf.reporter.report_key),
                            retry=1, version_cap=conf.reporter.version_cap)


def check_report_key(key):
    """The ``[reporter] report_key`` as given, or a clear error."""
    if not key:
        return None
    key = key.strip()
    if len(key) != 64 or any(c not in '0123456789abcdef' for c in key):
        raise ValueError(
            '[reporter] report_key must be the 64 lowercase hex characters '
            '`iosched-report-key --host NAME` prints; got %d characters'
            % len(key))
    return key


def _open_host(conf, launcher):
    """The driver ``[host_agent] driver`` names and the knob set
    registered for it, or None when stopped while waiting for the
    hypervisor. The knob set prepares the host first (the libvirt host's
    forks the privileged daemon before the driver opens connections and
    trace files, so that it inherits none of them).
    """
    driver_cls = plugins.load_class(plugins.DRIVERS, conf.host_agent.driver)
    knobs_cls = plugins.knobs_class(driver_cls.name)
    knobs_cls.prepare(conf)
    driver = wait_for_driver(conf, driver_cls, launcher)
    if driver is None:
        return None
    try:
        return driver, knobs_cls.for_driver(conf, driver)
    except Exception:
        driver.close()
        raise


def wait_for_driver(conf, driver_cls, launcher):
    """``driver_cls.from_conf(conf)``, tried again with backoff while the
    hypervisor does not answer (``DriverUnavailable``): one line when the
    wait starts, one when it ends. None when a signal stopped the wait;
    DriverError after ``[host_agent] driver_wait_timeout``.
    """
    c = conf.host_agent
    delay = c.driver_retry_interval
    longest = max(delay, c.driver_retry_max_interval)
    t0 = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        try:
            driver = driver_cls.from_conf(conf)
        except driver_base.DriverUnavailable as exc:
            # said outside the handler: oslo.log would append the
            # exception's repr to the line
            driver, e = None, exc
        if driver is None:
            waited = time.monotonic() - t0
            if c.driver_wait_timeout and waited >= c.driver_wait_timeout:
                raise driver_base.DriverError(
                    'gave up after %.0f s and %d attempts '
                    '([host_agent] driver_wait_timeout): %s'
                    % (waited, attempts, e))
            if attempts == 1:
                LOG.warning(
                    'waiting for the %s driver: %s; trying again after '
                    '%.1f s, doubling up to %.0f s, %s; nothing is '
                    'regulated meanwhile', driver_cls.name, e, delay, longest,
                    ('for %.0f s at most' % c.driver_wait_timeout
                     if c.driver_wait_timeout else 'until it answers'))
            else:
                LOG.debug('attempt %d: %s', attempts, e)
            if c.driver_wait_timeout:
                delay = min(delay, c.driver_wait_timeout - waited)
            if launcher.sleep(delay):
                return None
            delay = min(delay * 2, longest)
            continue
        if attempts > 1:
            LOG.info('the %s driver answers: connected after %.1f s and %d '
                     'attempts', driver_cls.name, time.monotonic() - t0,
                     attempts)
        return driver


def _config_files(argv):
    """The --config-file values of ``argv`` (oslo has not stored them
    when its parse failed).
    """
    out = []
    for i, arg in enumerate(argv):
        if arg == '--config-file' and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif arg.startswith('--config-file='):
            out.append(arg.split('=', 1)[1])
    return out


def _configure(argv):
    """Parse argv and the configuration files, set up logging and read
    every option once (a bad value fails here, not mid-run).
    """
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            CONF(argv, project='iosched',
                 prog='io-host-agent', description=__doc__.split('\n\n')[0],
                 epilog='Options are read from the configuration files; see '
                        'etc/iosched/host-agent.conf.sample for all of them.')
    except SystemExit as e:
        if e.code in (0, 2, None):      # --help, an argparse usage error
            sys.stderr.write(said.getvalue())
            raise
        # oslo's check of a command-line option's value read from a file
        # (e.g. [DEFAULT] debug = maybe): it wrote one line and exit 1
        raise cfg.ConfigFileValueError('%s (read from %s)' % (
            said.getvalue().strip(), ', '.join(_config_files(argv))
            or 'the default configuration files'))
    sys.stderr.write(said.getvalue())
    logging.setup(CONF, 'iosched')
    CONF.log_opt_values(LOG, logging.DEBUG)


def main(argv=None):
    logging.register_options(CONF)
    gmr_opts.set_defaults(CONF)
    try:
        _configure(sys.argv[1:] if argv is None else argv)
    except (cfg.Error, OSError, ValueError, logging.LogConfigError) as e:
        # before logging works: one line on stderr, no traceback
        hint = ('' if isinstance(e, cfg.ConfigFileValueError) else
                ' (accepted: readable ini files for --config-file and '
                '--config-dir, a writable --log-file or --log-dir, a '
                'logging ini file for --log-config-append)')
        # one line: a value with a newline or a control character in it
        # is shown escaped
        msg = ''.join(c if c.isprintable() else repr(c)[1:-1]
                      for c in '%s%s' % (e, hint))
        print(clip('io-host-agent: error: cannot start: %s' % msg),
              file=sys.stderr)
        return 2
    try:
        check_report_key(CONF.reporter.report_key)
    except ValueError as e:
        LOG.error('cannot start: %s', e)
        return 2
    try:
        # One agent per journal, before anything is read or written.
        lock = journal_lock.acquire(CONF.host_agent.journal_path)
    except journal_lock.JournalBusy as e:
        LOG.error('cannot start: %s', e)
        return 2
    launcher = service.Launcher(CONF)
    launcher.install()
    launcher.setup_reports()
    try:
        host = _open_host(CONF, launcher)
    except (plugins.PluginError, NotImplementedError, ValueError,
            driver_base.DriverError) as e:
        LOG.error('cannot start the %s driver: %s', CONF.host_agent.driver,
                  e)
        return 2
    if host is None:
        LOG.info('stopped while waiting for the driver; a journal left by '
                 'a previous run is replayed at the next start')
        return launcher.exit_status()
    driver, knobs = host
    try:
        agent = assembly.build_agent(CONF, driver, knobs=knobs,
                                     reporter=build_reporter(CONF))
    except OSError as e:
        # The journal cannot be read: what a previous run left changed is
        # unknown, so nothing may be changed either.
        LOG.error('cannot start: cannot read the journal %s ([host_agent] '
                  'journal_path): %s', CONF.host_agent.journal_path, e)
        driver.close()
        return 2
    try:
        return _run(launcher, agent, driver)
    finally:
        lock.release()


def _run(launcher, agent, driver):
    """Wire ``agent`` to the bus, Placement and Prometheus, run it until a
    signal (or its journal fails), stop everything; the exit status.
    """
    launcher.attach(agent)
    service.register_agent_section(agent)
    # Re-send the latest report when a scheduler worker starts (resync).
    resync_service = (resync.start_from_conf(
        CONF, agent, messaging.get_transport(
            CONF, CONF.reporter.transport_url))
        if CONF.reporter.enabled else None)
    # [lsvm_trait] publish: the LSVM trait in Placement; [io_inventory]
    # publish: the I/O inventories of the compute node's child provider
    # (each None when off).
    publishers = [placement_trait.start_from_conf(CONF, agent.host),
                  placement_inventory.start_from_conf(CONF, agent.host)]
    agent.reporter = placement_base.with_publisher(agent.reporter,
                                                   *publishers)
    # [metrics]: the Prometheus endpoint (None when off or not bound).
    exporter = metrics.start_from_conf(CONF, agent)
    # The tick loop never waits on the bus: reports go from a thread.
    sender = (report_sender.BackgroundSender(
        agent.reporter, max_retry_interval=agent.report_interval)
        if agent.reporter is not None else None)
    if sender is not None:
        agent.reporter = sender
    LOG.info('io-host-agent on %s: tick %.2fs, policies %s, actuator %s',
             agent.host, CONF.host_agent.tick_interval,
             ','.join(CONF.host_agent.policies), CONF.host_agent.actuator)
    try:
        agent.run()
    finally:
        if sender is not None:
            sender.stop()
        if exporter is not None:
            exporter.stop()
        if resync_service is not None:
            resync_service.stop()
        for publisher in publishers:
            if publisher is not None:
                publisher.stop()
        messaging.cleanup()
        driver.close()
    if agent.failure is not None:
        return EXIT_FAILURE
    return launcher.exit_status()
