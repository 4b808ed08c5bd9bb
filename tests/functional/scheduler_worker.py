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
"""A scheduler-worker-like process for the functional tests (not a test).

Like nova-scheduler it optionally monkey-patches with eventlet first
(``--eventlet``), configures ``[iosched]`` on the global ``cfg.CONF``,
loads the plugin (``iosched.nova_plugin.state.for_worker``, what the filters'
``__init__`` does: the worker's state, its listener started), then either
serves in this process (``--forks 0``) or forks workers (``--forks N``:
like oslo.service's launchers; the at-fork hooks retire this process's
listener and start each worker's own before any request; ``--reset-hub``
replaces the eventlet hub in the child as oslo.service's eventlet
ProcessLauncher does).

A "scheduling request" is what the filters do: ``state.for_request()``
then ``store.get(host)``. ``--requests N`` makes N of them (one every
50 ms; -1: forever); the first one's outcome is recorded. Each worker
writes its state as JSON to ``STATUS_DIR/worker-<index>.json`` every
50 ms until SIGTERM (or its parent exits)::

    python tests/functional/scheduler_worker.py --status-dir DIR \
        --url rabbit://guest:guest@127.0.0.1:5672/ --report-topic T \
        --agents-topic A [--eventlet] [--forks N] [--requests N]
"""

import argparse
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--status-dir', required=True)
    p.add_argument('--url', required=True)
    p.add_argument('--report-topic', required=True)
    p.add_argument('--agents-topic', required=True)
    p.add_argument('--eventlet', action='store_true')
    p.add_argument('--forks', type=int, default=0)
    p.add_argument('--first-index', type=int, default=0)
    p.add_argument('--reset-hub', action='store_true')
    p.add_argument('--requests', type=int, default=0)
    p.add_argument('--retry-max', type=float, default=30.0)
    p.add_argument('--host', action='append', default=[],
                   help='hosts each request looks up')
    return p.parse_args(argv)


ARGS = parse_args()
if ARGS.eventlet:
    import eventlet
    eventlet.monkey_patch()

import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from oslo_config import cfg  # noqa: E402

from iosched.nova_plugin import conf as iosched_conf  # noqa: E402
from iosched.nova_plugin import state as state_mod  # noqa: E402

CONF = cfg.CONF


class Recorder(logging.Handler):
    """Keeps the plugin's INFO and WARNING messages for the status."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append([record.levelname, record.getMessage()])


RECORDER = Recorder()


def setup():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format='%(process)d %(levelname)s %(name)s '
                               '%(message)s')
    logging.getLogger('iosched.nova_plugin').addHandler(RECORDER)
    iosched_conf.register_opts(CONF)
    CONF([], project='iosched-test-worker', default_config_files=[])
    for name, value in (('listen_for_reports', True),
                        ('report_topic', ARGS.report_topic),
                        ('agents_topic', ARGS.agents_topic),
                        ('listener_retry_interval_max', ARGS.retry_max),
                        # the agents run on a simulated clock (reports
                        # stamped seconds after 0): no age bound
                        ('report_max_age', 1e12)):
        CONF.set_override(name, value, group='iosched')


def status_of(index, requests, first):
    worker = state_mod.current()
    listener, st = worker.listener, worker.store
    stats = st.stats()
    stats.pop('stale_hosts')
    return {
        'pid': os.getpid(), 'index': index, 'eventlet': ARGS.eventlet,
        'requests': requests, 'first_request': first,
        'listener': None if listener is None else {
            'state': listener.state, 'attempts': listener.attempts,
            'outages': listener.outages, 'resyncs': listener.resyncs,
            'delays': listener.delays},
        'hosts': {h: st.get(h).seq for h in st.hosts()
                  if st.get(h) is not None},
        'stats': stats,
        'messages': RECORDER.messages[-50:],
    }


def write_status(index, data):
    path = os.path.join(ARGS.status_dir, 'worker-%d.json' % index)
    with open(path + '.tmp', 'w') as f:
        json.dump(data, f)
    os.replace(path + '.tmp', path)


def worker(index, parent=None):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    requests, first = 0, None
    while not stop.is_set():
        if ARGS.requests < 0 or requests < ARGS.requests:
            # one "scheduling request", as IoDensityFilter.filter_all
            worker = state_mod.for_request().configure(CONF)
            listener, st = worker.listener, worker.store
            held = st.hosts()
            for host in ARGS.host:
                st.get(host)
            requests += 1
            if first is None:
                first = {'returned': True, 'state': listener.state,
                         'hosts': held}
        write_status(index, status_of(index, requests, first))
        if parent is not None and os.getppid() != parent:
            break
        stop.wait(0.05)
    state_mod.current().stop()


def main():
    setup()
    # nova-scheduler loads the filters (their __init__) before it forks
    state_mod.for_worker(CONF, transport_url=ARGS.url)
    if ARGS.forks <= 0:
        worker(ARGS.first_index)
        return 0
    parent = os.getpid()
    children = []
    for i in range(ARGS.forks):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if ARGS.reset_hub:
                    import eventlet.hubs
                    eventlet.hubs.use_hub()
                worker(ARGS.first_index + i, parent=parent)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        children.append(pid)

    # The handler only takes note; the loop forwards SIGTERM and reaps.
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    alive, codes, forwarded = set(children), [], False
    while alive:
        if stopping and not forwarded:
            forwarded = True
            for pid in alive:
                os.kill(pid, signal.SIGTERM)
        pid, code = os.waitpid(-1, os.WNOHANG)
        if pid:
            alive.discard(pid)
            codes.append(code)
        else:
            time.sleep(0.05)
    return 0 if not any(codes) else 1


if __name__ == '__main__':
    sys.exit(main())
