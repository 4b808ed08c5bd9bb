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
"""iosched's Nova plugin: runs inside nova-scheduler.

Each scheduler worker holds one ``state.SchedulerState``: the report
``store`` that ``endpoint`` (run by ``listener``) fills with every compute
host's HostReport, the prepared figures, the ``explain`` ring, the SLO
``slo_lookup`` caches and the ``metrics``. The filters (``filters/``) and
the weigher (``weighers/``) are thin adapters: they fetch the request and
the state and call ``report_checks``, ``slo_check`` and ``weighing``,
which apply the pure rules of ``scoring``, ``lsvm_rule`` and ``slo_rule``.
Only ``filters``, ``weighers`` and ``validators`` import nova. See
docs/nova.md.
"""
