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
"""An rr guest's request/response client in a process of its own.

A real LSVM's clients live on other machines: their own scheduling is not
the compute host's. On the testbed the client runs on the host, and in a
benchmark's process it shares the GIL with the agent ticking in a thread
and the CPUs with the busy loops of the phase under test, so its own
wake-up lands in the RTT it measures. ``run`` closes the parent's
connection to the guest (QEMU takes one client per channel), runs
``python -m iosched.testbed.rr_client`` with ``SCHED_FIFO`` (``policy``
``'fifo'``; ``'other'`` keeps the normal policy) and returns its RTTs; the
parent reconnects on its next call. A hybrid guest's ``BURN`` reports ride
on the same channel: the child samples them every second (``BurnSampler``)
and ``session`` returns them beside the RTTs.

The child prints one JSON object: ``rtts`` (µs, send order), ``policy``
(what it ran with) and ``burn_rates`` (a hybrid guest's per-second burn
rates during the requests; empty for an rr guest).
"""

import argparse
import json
import os
import subprocess
import sys

from iosched.testbed import burn_sampler
from iosched.testbed import guest as tb_guest

POLICIES = ('fifo', 'other')
FIFO_PRIORITY = 1
# where a benchmark's rr client runs: a child with a policy, or 'inline'
# (a thread of the benchmark's own process, as before)
CLIENTS = POLICIES + ('inline',)


def run(guest, count, rate_per_s, burst_us, policy='fifo', timeout=None):
    """RTTs (µs) of ``count`` requests to ``guest`` sent by a child
    process with scheduling ``policy`` (see the module docstring), or by
    ``guest.rr`` in this process when ``policy`` is ``'inline'``.
    """
    return session(guest, count, rate_per_s, burst_us, policy,
                   timeout)['rtts']


def session(guest, count, rate_per_s, burst_us, policy='fifo',
            timeout=None):
    """As ``run``, the child's whole answer: ``rtts``, ``policy`` and
    ``burn_rates`` (``'inline'``: no burn rates, the caller samples).
    """
    if policy not in CLIENTS:
        raise ValueError('rr client %r is invalid; accepted: %s'
                         % (policy, ', '.join(CLIENTS)))
    if policy == 'inline':
        return {'rtts': guest.rr(count, rate_per_s=rate_per_s,
                                 burst_us=burst_us, timeout=timeout),
                'policy': policy, 'burn_rates': []}
    if guest.mode not in tb_guest.RR_MODES:
        raise tb_guest.GuestError(
            '%s: a separate rr client needs an rr or hybrid guest, not %s'
            % (guest.name, guest.mode))
    target = guest.socket_path
    if isinstance(target, (tuple, list)):
        target = '%s:%s' % tuple(target)
    guest.close()
    cmd = [sys.executable, '-m', 'iosched.testbed.rr_client', '--target',
           str(target), '--mode', guest.mode, '--count', str(count),
           '--rate', str(rate_per_s), '--burst-us', str(int(burst_us)),
           '--policy', policy]
    if timeout is None:
        timeout = 30.0 + count * (burst_us / 1e6 + 0.01)
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout + 30.0)
    if proc.returncode != 0:
        raise tb_guest.GuestError('%s: rr client failed (%d): %s' % (
            guest.name, proc.returncode, proc.stderr.strip()[-2000:]))
    return json.loads(proc.stdout)


def _target(text):
    host, sep, port = text.rpartition(':')
    if sep and port.isdigit() and not text.startswith('/'):
        return (host, int(port))
    return text


def _set_policy(policy):
    if policy == 'fifo':
        os.sched_setscheduler(0, os.SCHED_FIFO,
                              os.sched_param(FIFO_PRIORITY))


def main(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m iosched.testbed.rr_client',
        description='Send open-loop requests to one testbed rr guest from '
                    'this process (SCHED_FIFO by default, so the '
                    'client\'s own wake-ups stay out of the RTTs) and '
                    'print {"rtts": [...], "policy": ...} as JSON.')
    p.add_argument('--target', required=True,
                   help='the guest channel\'s unix socket path, or '
                        'HOST:PORT of a TCP serial port')
    p.add_argument('--mode', choices=tb_guest.RR_MODES, default='rr',
                   help='the guest program\'s mode (hybrid: its burn '
                        'rates are sampled too)')
    p.add_argument('--count', type=int, required=True)
    p.add_argument('--rate', type=float, required=True,
                   help='requests per second (Poisson)')
    p.add_argument('--burst-us', type=int, required=True,
                   help='guest CPU asked per request (µs)')
    p.add_argument('--policy', choices=POLICIES, default='fifo',
                   help='fifo: SCHED_FIFO priority %d (needs root); '
                        'other: the normal policy' % FIFO_PRIORITY)
    args = p.parse_args(argv)
    # before the reader thread exists: threads inherit the policy
    _set_policy(args.policy)
    g = tb_guest.Guest('rr', 'rr', None, args.mode, _target(args.target),
                       None)
    try:
        g.connect()
        with burn_sampler.BurnSampler([g]) as sampler:
            rtts = g.rr(args.count, rate_per_s=args.rate,
                        burst_us=args.burst_us)
    finally:
        g.close()
    json.dump({'rtts': rtts, 'policy': args.policy,
               'burn_rates': sampler.rates.get('rr', [])}, sys.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
