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
"""Nova host filters of iosched.

Enable them in nova.conf::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = iosched.nova_plugin.filters.all_filters
    enabled_filters = ...,IoDensityFilter,LsvmFilter
"""

from iosched.nova_plugin.filters import io_density
from iosched.nova_plugin.filters import lsvm
from iosched.nova_plugin.filters import slo_capacity


def all_filters():
    """Return the plugin's filter classes.

    Used as a ``[filter_scheduler] available_filters`` function path. Unlike
    ``nova.scheduler.filters.all_filters`` this lists the classes instead of
    calling ``HostFilterHandler().get_all_classes()``: that walks the
    directory of Nova's own ``BaseHostFilter`` and would return Nova's
    filters, not ours.
    """
    return [io_density.IoDensityFilter, lsvm.LsvmFilter,
            slo_capacity.SloCapacityFilter]
