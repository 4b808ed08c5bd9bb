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
"""Where ``iosched-placement`` gets its inputs: reports and the flavor.

* Reports from saved JSON files (``HostReport.to_dict()``), or by listening
  on the report topic over the message bus with a private ``ReportStore``
  (``endpoint.start_listener``), as a scheduler worker does.
* The flavor from ``--vcpus`` and ``--property KEY=VALUE``, or by name from
  Nova through openstacksdk (clouds.yaml or ``OS_*`` variables); every
  flavor with its extra specs for ``--check-flavors``.

Every failure is a ``BadInput`` whose message says what was wrong and what
is accepted; the command prints it on one line and exits 2.
"""

import os
import socket
import time

from iosched.contract import payload
from iosched.contract import payload_check
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import listener
from iosched.nova_plugin import store as report_store


class BadInput(Exception):
    """Input the command cannot use: said on stderr, exit code 2."""


# -- reports -----------------------------------------------------------------

def read_report_file(path):
    """A HostReport from a JSON file holding ``HostReport.to_dict()``."""
    try:
        return payload.load(path)
    except OSError as e:
        raise BadInput('cannot read the report %s: %s' % (path, e))
    except payload_check.PayloadError as e:
        raise BadInput('%s is not a HostReport (a saved HostReport.to_dict() '
                       'is accepted): %s' % (path, e))
    except ValueError as e:
        raise BadInput('%s is not JSON: %s' % (path, e))
    except RecursionError:
        raise BadInput('%s is not a HostReport: JSON nested too deeply'
                       % path)


def reports_from_files(paths):
    """{host: HostReport}; the newest (ts, seq) wins for a repeated host."""
    reports = {}
    for path in paths:
        report = read_report_file(path)
        held = reports.get(report.host)
        if held is None or (report.ts, report.seq) > (held.ts, held.seq):
            reports[report.host] = report
    return reports


def open_listener(conf, transport_url, store, name, listen, probe, no_url):
    """The RPC server ``listen`` starts on ``transport_url`` to feed
    ``store`` (server name ``name``), once ``probe`` found a broker there.
    Every failure is a ``BadInput`` (``no_url`` without a URL).
    """
    if not transport_url:
        raise BadInput(no_url)
    safe = _redacted(transport_url)
    try:
        down = probe(transport_url)
    except Exception as e:      # InvalidTransportURL and friends
        raise BadInput('bad transport URL %s: %s (accepted: '
                       'rabbit://USER:PASS@HOST:PORT/)' % (safe, e))
    if down:
        raise BadInput('no message broker answers at %s: %s' % (safe, down))
    try:
        return listen(conf, transport_url=transport_url, store=store,
                      host=name)
    except Exception as e:      # oslo.messaging raises many kinds
        raise BadInput('cannot listen on %s (topic %s): %s' % (
            safe, conf.iosched.report_topic, e))


def reports_from_bus(conf, transport_url, wait, progress, settle=2.0,
                     clock=time.monotonic, sleep=time.sleep,
                     listen=endpoint.start_listener,
                     resync=listener.request_resync,
                     probe=listener.probe_broker):
    """Listen on ``[iosched] report_topic`` and gather every host's report.

    Once listening, ask every agent to re-send its report at once (resync
    on ``[iosched] agents_topic``). Stop when the first of these holds:

    * one report interval (the longest seen, with a margin) has passed:
      every live agent has cast a periodic report since we listened;
    * a report arrived and no new host for ``settle`` seconds: agents
      with the resync server answer within about a second (agents without
      it are heard only at their next periodic report);
    * ``wait`` seconds have passed.

    ``progress(text)`` is called about once a second.

    :returns: ({host: HostReport}, seconds listened, why it stopped:
        'interval', 'settled' or 'wait')
    """
    store = report_store.ReportStore(
        ttl_intervals=conf.iosched.report_ttl_intervals)
    name = 'iosched-placement-%s-%d' % (socket.gethostname(), os.getpid())
    server = open_listener(
        conf, transport_url, store, name, listen, probe,
        'no transport URL to listen for reports: give --transport-url '
        'rabbit://USER:PASS@HOST:5672/ or a --config-file with [DEFAULT] '
        'transport_url (the one the agents report to), or saved reports '
        'with --report FILE')
    start = clock()
    try:
        try:
            resync(conf, server.transport, name)
            resynced = True
        except Exception as e:  # the periodic reports still come
            progress('resync request failed (%s): waiting for the periodic '
                     'reports' % e)
            resynced = False
        stop = _gather(conf, store, start, wait, settle, resynced, progress,
                       clock, sleep)
    finally:
        server.stop()
        server.wait()
    reports = {h: store.get(h) for h in store.hosts()
               if store.get(h) is not None}
    return reports, clock() - start, stop


def _gather(conf, store, start, wait, settle, resynced, progress, clock,
            sleep):
    """Wait for reports in ``store`` until ``reports_from_bus``'s stop
    rule holds; returns why it stopped.
    """
    next_line = start
    seen, last_new = 0, start
    while True:
        now = clock()
        fresh = [r for r in (store.get(h) for h in store.hosts())
                 if r is not None]
        if len(fresh) > seen:
            seen, last_new = len(fresh), now
        interval_done = (fresh and now - start >=
                         1.2 * max(r.report_interval for r in fresh) + 0.2)
        settled = resynced and fresh and now - last_new >= settle
        stop = ('interval' if interval_done else
                'settled' if settled else
                'wait' if now - start >= wait else None)
        if stop:
            return stop
        if now >= next_line:
            progress('listening on topic %s: %d host(s) reported after '
                     '%.0f s (up to %s s%s)' % (
                         conf.iosched.report_topic, len(fresh),
                         now - start, _num(wait),
                         ', resync asked' if resynced else ''))
            next_line = now + 1.0
        sleep(0.05)


def _num(value):
    return ('%g' % value)


def _redacted(url):
    """The URL without its password."""
    if '@' not in url or '://' not in url:
        return url
    scheme, rest = url.split('://', 1)
    creds, host = rest.rsplit('@', 1)
    user = creds.split(':', 1)[0]
    return '%s://%s:***@%s' % (scheme, user, host)


# -- flavor ------------------------------------------------------------------

def parse_properties(items):
    """``KEY=VALUE`` strings -> dict; a bad one is a BadInput."""
    specs = {}
    for item in items:
        key, sep, value = item.partition('=')
        if not sep or not key.strip():
            raise BadInput('--property %r: accepted: KEY=VALUE, e.g. '
                           'iosched:io_profile=io' % (item,))
        specs[key.strip()] = value.strip()
    return specs


def _connection(cloud, connect, instead):
    """An openstacksdk connection (``connect`` injected by tests)."""
    if connect is None:
        try:
            import openstack
        except ImportError:
            raise BadInput('%s needs openstacksdk (pip install '
                           'openstacksdk)%s' % instead)
        connect = openstack.connect
    return connect(cloud=cloud) if cloud else connect()


_NO_CLOUD = ('A cloud is configured in clouds.yaml (select it with --os-cloud '
             'or OS_CLOUD) or with OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, '
             'OS_PROJECT_NAME, ...')


def flavor_from_nova(name, cloud=None, connect=None):
    """(vcpus, extra_specs, description) of flavor ``name`` from Nova."""
    try:
        conn = _connection(cloud, connect, (
            '--flavor', '; or give --vcpus N and --property KEY=VALUE'))
        # get_extra_specs: fetched separately if the microversion's
        # flavor body has none
        flavor = conn.compute.find_flavor(name, ignore_missing=True,
                                          get_extra_specs=True)
        if flavor is None:
            raise BadInput('no flavor named or with the id %r in Nova '
                           '(openstack flavor list shows them)' % (name,))
        specs = flavor.extra_specs
    except BadInput:
        raise
    except Exception as e:     # openstacksdk / keystoneauth errors
        raise BadInput(
            'cannot read flavor %r from Nova: %s. %s; without one, give '
            '--vcpus N and --property KEY=VALUE instead'
            % (name, e, _NO_CLOUD))
    return int(flavor.vcpus), dict(specs or {}), 'flavor %s' % flavor.name


def flavors_from_nova(cloud=None, connect=None):
    """Every flavor Nova lists, with its extra specs.

    ``is_public=none``: private flavors too when the credentials are an
    admin's (Nova lists only public ones to others).

    :returns: [(id, name, vcpus, extra_specs)]
    """
    try:
        conn = _connection(cloud, connect, ('--check-flavors', ''))
        flavors = [(f.id, f.name, int(f.vcpus), dict(f.extra_specs or {}))
                   for f in conn.compute.flavors(
                       details=True, get_extra_specs=True, is_public='none')]
    except BadInput:
        raise
    except Exception as e:     # openstacksdk / keystoneauth errors
        raise BadInput('cannot list the flavors of Nova: %s. %s'
                       % (e, _NO_CLOUD))
    return flavors
