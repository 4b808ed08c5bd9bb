#!/usr/bin/python
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
"""Ansible module: iosched's entries in nova.conf, on top of what is there."""

DOCUMENTATION = r'''
module: iosched_nova_conf
short_description: >-
  Add (or remove) iosched's filters, weigher and options in nova.conf
description:
  - Edits nova.conf line by line, keeping everything else (comments,
    order, other options) as it is.
  - "C([filter_scheduler] enabled_filters) and C(weight_classes) are lists
    (oslo ListOpt: of repeated keys only the last counts): the given items
    are appended to the effective value, which is the option's Nova
    default when the key is absent."
  - "C([filter_scheduler] available_filters) is a MultiStrOpt (every
    repeated key counts): a line per missing item; when the key is
    absent, Nova's default line is written first."
  - Options are set one by one (the last occurrence of a key is the one
    changed).
  - With I(state=absent) the items and options are removed again; what
    the operator had stays.
  - Supports check mode and diff.
version_added: "0.1.0"
author: iosched project
options:
  path:
    description: nova.conf to edit.
    type: path
    required: true
  enabled_filters:
    description: >-
      Filter class names to have in C([filter_scheduler] enabled_filters).
    type: list
    elements: str
    default: []
  default_enabled_filters:
    description: >-
      Nova's default C(enabled_filters), used when the key is absent.
    type: list
    elements: str
    default: [ComputeFilter, ComputeCapabilitiesFilter, ImagePropertiesFilter,
              ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter]
  available_filters:
    description: >-
      Function paths to have in C([filter_scheduler] available_filters).
    type: list
    elements: str
    default: []
  default_available_filters:
    description: >-
      Nova's default C(available_filters), used when the key is absent.
    type: list
    elements: str
    default: [nova.scheduler.filters.all_filters]
  weight_classes:
    description: >-
      Function or class paths to have in C([filter_scheduler] weight_classes).
    type: list
    elements: str
    default: []
  default_weight_classes:
    description: Nova's default C(weight_classes), used when the key is absent.
    type: list
    elements: str
    default: [nova.scheduler.weights.all_weighers]
  options:
    description: >-
      Section -> option -> value to set (bools as true/false, lists
      comma-separated).
    type: dict
    default: {}
  state:
    description: C(present) adds, C(absent) removes the items and options.
    type: str
    choices: [present, absent]
    default: present
'''

EXAMPLES = r'''
- name: iosched in nova-scheduler
  iosched_nova_conf:
    path: /etc/nova/nova.conf
    enabled_filters: [IoDensityFilter, LsvmFilter, SloCapacityFilter]
    available_filters: [iosched.nova_plugin.filters.all_filters]
    weight_classes: [iosched.nova_plugin.weighers.all_weighers]
    options:
      iosched: {listen_for_reports: true}
'''

RETURN = r'''
changes:
  description: What was added or removed, one text per change.
  type: list
  elements: str
  returned: always
'''

import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

_SECTION = re.compile(r'^\s*\[([^\]]+)\]\s*$')
_KEY = re.compile(r'^([A-Za-z0-9_.\-]+)\s*[=:]\s?(.*)$')
FS = 'filter_scheduler'


def value_text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return ','.join(str(v) for v in value)
    return str(value)


class Ini(object):
    """Lines of an INI file, edited in place."""

    def __init__(self, text):
        self.lines = text.splitlines()

    def text(self):
        return '\n'.join(self.lines) + ('\n' if self.lines else '')

    def _bounds(self, section):
        """(first line after the header, end) of ``section``, or None."""
        start = None
        for i, line in enumerate(self.lines):
            m = _SECTION.match(line)
            if m:
                if start is not None:
                    return start, i
                if m.group(1).strip() == section:
                    start = i + 1
        return (start, len(self.lines)) if start is not None else None

    def find(self, section, key):
        """Indexes of the lines setting ``key`` in ``section``."""
        bounds = self._bounds(section)
        if bounds is None:
            return []
        return [i for i in range(*bounds)
                if _KEY.match(self.lines[i])
                and _KEY.match(self.lines[i]).group(1) == key]

    def value(self, i):
        return _KEY.match(self.lines[i]).group(2).strip()

    def insert(self, section, lines, after=None):
        """Add lines after line ``after``, else at the section's end
        (before its trailing blank lines), creating the section.
        """
        if after is not None:
            self.lines[after + 1:after + 1] = lines
            return
        bounds = self._bounds(section)
        if bounds is None:
            if self.lines and self.lines[-1].strip():
                self.lines.append('')
            self.lines += ['[%s]' % section] + lines
            return
        end = bounds[1]
        while end > bounds[0] and not self.lines[end - 1].strip():
            end -= 1
        self.lines[end:end] = lines


def split_list(text):
    return [v.strip() for v in text.split(',') if v.strip()]


def edit(ini, p, present):
    changes = []

    def list_opt(key, items, default):
        idx = ini.find(FS, key)
        current = split_list(ini.value(idx[-1])) if idx else list(default)
        if present:
            new = current + [i for i in items if i not in current]
        else:
            new = [c for c in current if c not in items]
        if new == current:
            return
        line = '%s = %s' % (key, ','.join(new))
        if idx:
            ini.lines[idx[-1]] = line
        else:
            ini.insert(FS, [line])
        changes.append('[%s] %s = %s' % (FS, key, ','.join(new)))

    def multi_opt(key, items, default):
        idx = ini.find(FS, key)
        current = [ini.value(i) for i in idx]
        if present:
            missing = [i for i in items if i not in (current or default)]
            if not missing:
                return
            if idx:
                ini.insert(FS, ['%s = %s' % (key, m) for m in missing],
                           after=idx[-1])
            else:
                ini.insert(FS, ['%s = %s' % (key, v)
                                for v in list(default) + missing])
            changes.extend('[%s] %s += %s' % (FS, key, m) for m in missing)
        else:
            for i in reversed(idx):
                if ini.value(i) in items:
                    changes.append('[%s] %s -= %s' % (FS, key, ini.value(i)))
                    del ini.lines[i]

    list_opt('enabled_filters', p['enabled_filters'],
             p['default_enabled_filters'])
    multi_opt('available_filters', p['available_filters'],
              p['default_available_filters'])
    list_opt('weight_classes', p['weight_classes'],
             p['default_weight_classes'])
    for section, options in sorted((p['options'] or {}).items()):
        for key, value in sorted((options or {}).items()):
            idx = ini.find(section, key)
            if not present:
                for i in reversed(idx):
                    del ini.lines[i]
                if idx:
                    changes.append('[%s] %s removed' % (section, key))
                continue
            if value is None:
                continue
            line = '%s = %s' % (key, value_text(value))
            if idx and ini.value(idx[-1]) == value_text(value):
                continue
            if idx:
                ini.lines[idx[-1]] = line
            else:
                ini.insert(section, [line])
            changes.append('[%s] %s = %s' % (section, key, value_text(value)))
    return changes


ARGS = dict(
    path=dict(type='path', required=True),
    enabled_filters=dict(type='list', elements='str', default=[]),
    default_enabled_filters=dict(
        type='list', elements='str',
        default=['ComputeFilter', 'ComputeCapabilitiesFilter',
                 'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                 'ServerGroupAffinityFilter']),
    available_filters=dict(type='list', elements='str', default=[]),
    default_available_filters=dict(
        type='list', elements='str',
        default=['nova.scheduler.filters.all_filters']),
    weight_classes=dict(type='list', elements='str', default=[]),
    default_weight_classes=dict(
        type='list', elements='str',
        default=['nova.scheduler.weights.all_weighers']),
    options=dict(type='dict', default={}),
    state=dict(type='str', choices=['present', 'absent'], default='present'),
)


def main():
    module = AnsibleModule(
        argument_spec=ARGS,
        supports_check_mode=True,
    )
    p = module.params
    path = p['path']
    if not os.path.isfile(path):
        module.fail_json(msg='%s does not exist: nova.conf of the '
                         'nova-scheduler host is expected' % path)
    with open(path, encoding='utf-8') as fh:
        before = fh.read()
    ini = Ini(before)
    changes = edit(ini, p, p['state'] == 'present')
    after = ini.text()
    result = dict(changed=bool(changes), changes=changes)
    if module._diff:
        result['diff'] = dict(before=before, after=after,
                              before_header=path, after_header=path)
    if changes and not module.check_mode:
        st = os.stat(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or '.',
                                   prefix='.nova.conf.')
        with os.fdopen(fd, 'w', encoding='utf-8') as fh:
            fh.write(after)
        os.chmod(tmp, st.st_mode & 0o7777)
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except PermissionError:
            pass
        module.atomic_move(tmp, path)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
