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
"""Nova host weighers of iosched.

Enable them in nova.conf::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,\
iosched.nova_plugin.weighers.all_weighers

(one line in the file: a list option, where a repeated ``weight_classes``
key keeps only its last value.)
"""

from iosched.nova_plugin.weighers import io_strength


def all_weighers():
    """Return the plugin's weigher classes.

    Used as a ``[filter_scheduler] weight_classes`` function path. It lists
    the classes: ``HostWeightHandler().get_all_classes()`` would walk Nova's
    own weights directory.
    """
    return [io_strength.IoStrengthWeigher]
