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
"""The Nova plugin at scale: ``python -m bench.nova_scale --help``.

* ``handlers``: filter + weigher cost per request through Nova's handlers
  at 100-10,000 hosts, Nova's defaults beside Nova's defaults plus iosched;
  memory of the report store beside Nova's HostState objects.
* ``pipeline``: HostReports from 1,000 simulated hosts through RabbitMQ to
  scheduler workers, beside a bare oslo.messaging server on the same casts.
* ``reports``: the realistic HostReport dicts both parts use.
"""
