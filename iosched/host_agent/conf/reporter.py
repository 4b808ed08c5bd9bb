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
"""Options of the reporter: where HostReports go."""

from oslo_config import cfg

GROUP = cfg.OptGroup('reporter', title='iosched reporter',
                     help='HostReports to the Nova scheduler plugin.')

OPTS = [
    cfg.StrOpt('topic', default='iosched-reports',
               help="""
oslo.messaging topic the reports are cast to (fanout).

Must equal ``[iosched] report_topic`` in nova.conf of the schedulers.

Possible values:

* A topic name.
"""),
    cfg.StrOpt('transport_url', secret=True,
               help="""
Messaging URL for reports, e.g. ``rabbit://user:pass@ctl:5672/``.

Possible values:

* An oslo.messaging transport URL. Unset (default) uses
  ``[DEFAULT] transport_url``, the same bus as Nova.
* ``fake:/`` keeps reports in the process (tests, the embedded default).
"""),
    cfg.BoolOpt('enabled', default=True,
                help="""
Send reports at all. Disable to run the agent as a pure host-side
regulator without a Nova plugin.
"""),
    cfg.StrOpt('report_key', secret=True,
               help="""
This host's report key: the agent signs every report with it, and the
schedulers accept a report for this host only with a valid signature
(when ``[iosched] report_auth = hmac`` in their nova.conf). Get the key
on a scheduler node with ``iosched-report-key --host <this host's name>``;
a key signs only for the host it was made for.

Possible values:

* Unset (default): reports are sent unsigned (RPC 1.0); schedulers with
  ``report_auth = hmac`` drop them.
* The 64 hex characters ``iosched-report-key`` prints.

Related options:

* ``[DEFAULT] host``: the name the key was made for.
"""),
    cfg.BoolOpt('listen_for_resync', default=True,
                help="""
Answer the schedulers' resync requests: a scheduler worker whose report
listener has just started asks every agent for its latest report, and
the agent re-sends it at once instead of at its next report interval.
The same server answers ``iosched-status``'s request for the whole
report (per-vCPU records and decisions), which the schedulers' fanout no
longer carries.

Possible values:

* True (default): run a small RPC server on ``resync_topic``.
* False: new scheduler workers learn this host at its next report, and
  ``iosched-status`` shows only the head of its reports.

Related options:

* ``resync_topic``
* ``enabled``: without reports there is nothing to re-send.
"""),
    cfg.StrOpt('resync_topic', default='iosched-agents',
               help="""
oslo.messaging topic this agent takes resync requests on (fanout).

Must equal ``[iosched] agents_topic`` in nova.conf of the schedulers.

Possible values:

* A topic name.
"""),
    cfg.FloatOpt('resync_min_interval', default=1.0, min=0.0,
                 help="""
Seconds between two re-sent reports. Requests arriving sooner (every
scheduler worker asks when it starts) are answered together by one
re-send at the end of the interval.

Possible values:

* Seconds; 0 re-sends on every request.
"""),
    cfg.StrOpt('version_cap', default=None,
               choices=[(None, 'no cap: heads (RPC 1.3)'),
                        ('1.2', 'whole signed reports, as before 1.3'),
                        ('1.0', 'whole unsigned reports')],
               help="""
Highest report RPC version this agent casts to the schedulers (as Nova's
``[upgrade_levels]`` does). During a rolling upgrade that brings agents
forward before every nova-scheduler (and every host running
``iosched-status``), set it to the schedulers' version: a 1.2 scheduler
refuses a 1.3 cast, so a capped agent fanouts whole reports (1.2 signed,
1.0 unsigned) instead of heads. Remove it once every scheduler runs 1.3.

Possible values:

* Unset: heads (RPC 1.3), the schedulers' keep only those.
* 1.2 or 1.0: whole reports to every scheduler.
"""),
    cfg.IntOpt('max_decisions', default=50, min=0, max=1000,
               help="""
Most decisions (why a knob has its value: rule, reason, before and after)
a report carries, newest first; older ones are left out so that reports
stay small. ``iosched-explain`` on the compute node shows all of them.

The default, 50, keeps a report near 15 KB: reports fan out to every
scheduler each report interval, so this is what one compute node costs
the bus.

Possible values:

* 0: reports carry no decisions.
* 1 to 1000 (receivers refuse more): about 300 bytes each.
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
