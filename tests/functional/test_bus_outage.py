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
"""The broker gone for a minute: local control goes on, reports resume.

The real ``io-host-agent`` daemon (simulated driver, 0.2-s ticks, a
report every 5 ticks) reaches the real RabbitMQ through a TCP proxy
(``tests/tcp_proxy.py``); a scheduler-side listener is connected
directly. The proxy is cut (connections reset, new ones refused) for
``IOSCHED_OUTAGE_S`` seconds (default 60). Checked: the agent keeps
ticking at its pace all along (its Prometheus tick counter), logs the
outage without a traceback at WARNING, and once the proxy is back its
reports reach the listener again; the delay is printed and bounded.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

from iosched.nova_plugin import conf as plugin_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store as store_mod
from tests import fixtures
from tests import tcp_proxy

AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')
OUTAGE_S = float(os.environ.get('IOSCHED_OUTAGE_S', '60'))
TICK_S = 0.2
REPORT_EVERY = 5


def _free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _ticks(port):
    try:
        text = urllib.request.urlopen(
            'http://127.0.0.1:%d/metrics' % port, timeout=5).read().decode()
    except OSError:
        return None
    m = re.search(r'^iosched_agent_tick_duration_seconds_count\S* (\S+)$',
                  text, re.M)
    return float(m.group(1)) if m else None


def _wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_agent_rides_out_a_broker_outage(tmp_path):
    url = fixtures.rabbit_url()
    parts = urllib.parse.urlparse(url)
    tag = uuid.uuid4().hex[:8]
    topic = 'iosched-outage-%s' % tag
    host = 'outage-%s' % tag
    plugin_conf.register_opts(fixtures.CONF)
    fixtures.CONF.set_override('report_topic', topic, 'iosched')
    store = store_mod.ReportStore()
    try:
        server = endpoint.start_listener(fixtures.CONF, transport_url=url,
                                         store=store, host='outage-worker')
    finally:
        fixtures.CONF.clear_override('report_topic', 'iosched')
    proxy = tcp_proxy.TcpProxy((parts.hostname, parts.port or 5672))
    metrics_port = _free_port()
    proxied = url.replace('%s:%s' % (parts.hostname, parts.port or 5672),
                          '127.0.0.1:%d' % proxy.port)
    conf = tmp_path / 'host-agent.conf'
    conf.write_text(
        '[DEFAULT]\ntransport_url = %s\n[host_agent]\nhost = %s\n'
        'driver = simulated\ntick_interval = %s\nreport_every_ticks = %d\n'
        'journal_path = %s\n[reporter]\ntopic = %s\n'
        'resync_topic = iosched-outage-agents-%s\n'
        '[metrics]\nport = %d\n[lsvm_trait]\npublish = false\n' % (
            proxied, host, TICK_S, REPORT_EVERY, tmp_path / 'journal.jsonl',
            topic, tag, metrics_port))
    log = tmp_path / 'agent.log'
    with open(log, 'w') as out:
        proc = subprocess.Popen([AGENT, '--config-file', str(conf)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: store.get(host) is not None and
                     store.get(host).seq >= 2, 60), log.read_text()[-3000:]
        seq_before = store.get(host).seq
        ticks_before = _ticks(metrics_port)
        proxy.cut()
        t_cut = time.monotonic()
        samples = []
        while time.monotonic() - t_cut < OUTAGE_S:
            time.sleep(min(5.0, OUTAGE_S / 4))
            samples.append((time.monotonic() - t_cut,
                            _ticks(metrics_port)))
        outage = time.monotonic() - t_cut
        ticks_during = _ticks(metrics_port) - ticks_before
        proxy.restore()
        t_back = time.monotonic()
        assert _wait(lambda: store.get(host) is not None and
                     store.get(host).seq > seq_before, 120), (
            log.read_text()[-3000:])
        resumed_after = time.monotonic() - t_back
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proxy.close()
        server.stop()
        server.wait()
    text = log.read_text()
    expected = outage / TICK_S
    interval = TICK_S * REPORT_EVERY
    print('outage %.0f s: %d ticks (%.0f expected), tick counter samples '
          '%s; reports resumed %.1f s after the broker came back '
          '(interval %.1f s)' % (outage, ticks_during, expected,
                                 [(round(t), n) for t, n in samples],
                                 resumed_after, interval))
    assert rc == 0, text[-3000:]
    # local control went on at its pace: no tick loop blocked on the bus
    assert ticks_during >= 0.8 * expected, text[-3000:]
    counts = [n for _, n in samples]
    assert all(b > a for a, b in zip(counts, counts[1:])), samples
    # the outage is said, without a traceback at WARNING or above
    assert 'Traceback' not in ''.join(
        line for line in text.splitlines(True)
        if ' WARNING ' in line or ' ERROR ' in line)
    # reports resume promptly once the broker answers again
    assert resumed_after <= interval + 5, resumed_after
