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
"""A QMP reply read through libvirt's monitor passthrough: its ``return``
value, or the error it carries raised as the caller's exception class
(``qemu_histograms``, ``virtio_queues``).
"""

import json


def reply(text, error_cls):
    """``return`` of a QMP reply; ``error_cls`` for bad JSON or an error."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise error_cls('QMP reply is not JSON: %s' % e)
    if 'error' in data:
        err = data['error']
        raise error_cls('%s: %s' % (err.get('class', 'error'),
                                    err.get('desc', '')))
    return data.get('return')
