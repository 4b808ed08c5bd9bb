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
"""Jinja filter ``iosched_flavor_resources``: a flavor's extra specs with
the ``resources:CUSTOM_IOSCHED_*`` keys its ``iosched:*`` specs call for.

    extra_specs | iosched_flavor_resources(vcpus, lsvm_vcpu_share)

is ``iosched.nova_plugin.placement_resources.with_resources`` (iosched
installed on the control host, beside openstacksdk):
``resources:CUSTOM_IOSCHED_IO_VCPU`` = vcpus for ``iosched:io_profile`` io or
mixed, ``resources: CUSTOM_IOSCHED_LSVM_BW`` = vcpus x round(1000 x
lsvm_vcpu_share) for ``iosched:latency_sensitive`` true; a stale amount of
either is replaced or dropped, ``resources:CUSTOM_IOSCHED_SLO_IOPS`` is kept as
given. A value of ``iosched:io_profile`` or ``iosched:latency_sensitive`` that
every reader would ignore (``placement_resources.check_sizing``: a bad value,
or the key in another case) fails the task with what is accepted; the other
keys are left to Nova's validators (microversion 2.86).
"""

from ansible.errors import AnsibleFilterError

try:
    from iosched.nova_plugin import placement_resources as _resources
except ImportError as exc:      # reported when the filter is used
    _resources = None
    _IMPORT_ERROR = str(exc)


def _int(name, value):
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise AnsibleFilterError(
            'iosched_flavor_resources: %s must be a positive integer, got '
            '%r' % (name, value))
    return int(text)


def _share(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError(
            'iosched_flavor_resources: lsvm_vcpu_share must be a number '
            'from 0.0005 to 1, got %r' % (value,))


def iosched_flavor_resources(specs, vcpus, lsvm_vcpu_share=0.5):
    """See the module docstring."""
    if _resources is None:
        raise AnsibleFilterError(
            'iosched_flavor_resources needs iosched (nova_plugin) on the '
            'control host: %s; or set '
            'iosched_cloud_objects_placement_resources: false'
            % _IMPORT_ERROR)
    if specs is None:
        specs = {}
    if not isinstance(specs, dict):
        raise AnsibleFilterError(
            'iosched_flavor_resources: extra_specs must be a mapping, got '
            '%r' % (specs,))
    vcpus, share = _int('vcpus', vcpus), _share(lsvm_vcpu_share)
    try:
        resources = _resources.with_resources(vcpus, dict(specs), share)
        _resources.check_sizing(specs)
        return resources
    except ValueError as exc:       # InvalidExtraSpec is one
        raise AnsibleFilterError('iosched_flavor_resources: %s' % exc)


class FilterModule(object):

    def filters(self):
        return {'iosched_flavor_resources': iosched_flavor_resources}
