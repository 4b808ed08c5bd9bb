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
"""Stand-ins for DevStack, to run the devstack plugin's phases in a test.

``run.sh`` sources ``stubs.sh`` (DevStack's functions: recording ones, and
iosched-cloud's real ini and service-list functions), the plugin's
``settings`` and then ``plugin.sh`` once per phase, as stack.sh, unstack.sh
and clean.sh do. ``tests/functional/test_devstack_plugin.py`` drives it.
"""
