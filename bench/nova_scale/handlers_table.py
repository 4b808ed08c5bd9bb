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
"""Part 1's table: the cost per request beside Nova's default set, each
iosched class's cost per host, the goal and the verdict.
"""

import sys


def print_table(fig, out=sys.stdout):
    w = out.write
    goal = fig.get('goal_alone_over_default', 0.05)
    w('\nPart 1: filter + weigher cost per request (Nova\'s handlers; '
      'requests: %s)\n' % ', '.join(fig['requests_mix']))
    w('  iosched filters: %s; weighers: %s; SloCapacityFilter\'s volumes: '
      '%s\n' % (', '.join(fig['names']['iosched_filters']) or '-',
                ', '.join(fig['names']['iosched_weighers']) or '-',
                fig.get('slo_volumes', '?')))
    w('  %7s | %14s | %14s | %6s | %14s | %13s | %11s | %s\n' % (
        'hosts', 'Nova default', 'with iosched', 'ratio',
        'iosched alone', 'alone/default', 'alone/host',
        'passed (default/iosched)'))
    for r in fig['per_size']:
        p = r['hosts_passed_per_request']
        w('  %7d | %11.0f us | %11.0f us | %5.2fx | %11.0f us | %12.3fx | '
          '%8.2f us | %.0f / %.0f\n' % (
              r['hosts'], r['nova_default_us_per_request'],
              r['with_iosched_us_per_request'],
              r['with_iosched_over_default'],
              r['iosched_alone_us_per_request'],
              r['iosched_alone_over_default'],
              r['iosched_alone_us_per_host'], p['default'], p['iosched']))
    for r in fig['per_size']:
        by_class = r.get('iosched_us_per_host_by_class')
        if not by_class:
            continue
        nova = r['nova_default_us_per_request'] / r['hosts']
        w('  %d hosts, us per host: Nova default set %.2f; each iosched '
          'class alone (reading the store itself): %s\n' % (
              r['hosts'], nova, ', '.join(
                  '%s %.2f (%.3fx)' % (name, us, us / nova)
                  for name, us in by_class.items())))
    worst = max(r['iosched_alone_over_default'] for r in fig['per_size'])
    w('  goal: iosched alone <= %.2fx of Nova\'s default set per request; '
      'measured %s: %s\n' % (goal, ', '.join(
          '%.3fx at %d hosts' % (r['iosched_alone_over_default'],
                                 r['hosts']) for r in fig['per_size']),
          'MET' if worst <= goal else 'NOT MET'))
    m = fig['memory']
    w('  memory at %d hosts: report store %d B/host vs Nova HostState '
      '%d B/host: %.2fx (report JSON %d B, %d vCPUs, %d decisions)\n' % (
          m['hosts'], m['store_bytes_per_host'],
          m['nova_host_state_bytes_per_host'], m['store_over_host_state'],
          m['report_json_bytes'], fig['report']['vcpus'],
          fig['report']['decisions']))
