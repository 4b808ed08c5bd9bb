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
"""Why the schedulers would refuse a host's reports for its clock alone,
for ``iosched-status``: the report store's own ``future`` and ``too_old``
rules (``iosched.nova_plugin.store``) applied to the time a report
reached the CLI.
"""

from iosched.nova_plugin import store as report_store


def clock_problem(report, received_at, conf):
    """Why the schedulers configured by ``conf`` refuse ``report`` for its
    timestamp alone (an agent's clock off), or None: the store's own
    ``future`` and ``too_old`` rules (``iosched.nova_plugin.store``),
    applied to the time it reached us. A clock that stepped back behind
    the host's last accepted report (``replayed``) shows only in the
    schedulers' log and metrics: we hold no earlier report.
    """
    g = conf.iosched
    rules = report_store.ReportStore(
        ttl_intervals=g.report_ttl_intervals,
        max_clock_skew=g.report_max_clock_skew, max_age=g.report_max_age)
    behind = received_at - report.ts
    if -behind > rules.max_clock_skew:
        return ('stamped %.0f s ahead of this clock, more than [iosched] '
                'report_max_clock_skew (%g s): the schedulers refuse its '
                'reports (future); is its clock right (NTP)?' % (
                    -behind, rules.max_clock_skew))
    limit = rules.age_limit(report)
    if limit is not None and behind > limit:
        return ('stamped %.0f s before it arrived, more than the %.0f s the '
                'schedulers accept ([iosched] report_max_age): they refuse '
                'its reports (too_old); is its clock behind (NTP)?' % (
                    behind, limit))
    return None
