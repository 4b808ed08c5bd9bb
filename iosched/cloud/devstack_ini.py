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
"""DevStack's ini functions, reimplemented for iosched-cloud and the
DevStack plugin's test harness.

Same behaviour as DevStack's ``inc/ini-config`` on what the plugin uses
(written from its documented behaviour, not copied)::

    python -m iosched.cloud.devstack_ini iniset FILE SECTION OPTION VALUE
    ... iniget FILE SECTION OPTION            # first value
    ... iniget_multiline FILE SECTION OPTION  # all, space-joined
    ... iniset_multiline FILE SECTION OPTION VALUE...
    ... iniadd FILE SECTION OPTION VALUE...
    ... inidelete FILE SECTION OPTION

* A section runs from its ``[name]`` line to the next ``[...]`` line; an
  option line is ``option<spaces>=value`` at the start of a line, so a
  commented ``#option = x`` of a sample file is not an option.
* ``iniset`` replaces the value of every line of the option in the
  section, or adds ``option = value`` right after the header; a missing
  section is appended as a blank line and ``[section]``.
* ``iniset_multiline`` removes the option's lines and adds one line per
  value right after the header, in order; ``iniadd`` appends values to it.

``parse(path)`` reads a file the way oslo.config does for these tests:
``{section: {option: [values...]}}``, every value of a repeated key kept.
"""

import os
import re
import sys


def _read(path):
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return fh.read().splitlines()


def _write(path, lines):
    with open(path, 'w') as fh:
        fh.write('\n'.join(lines) + '\n')


def _section(lines, section):
    """(header index, end index) of the first ``[section]``, or None."""
    header = '[%s]' % section
    for i, line in enumerate(lines):
        if line.startswith(header):
            end = i + 1
            while end < len(lines) and not lines[end].startswith('['):
                end += 1
            return i, end
    return None


def _option_re(option):
    return re.compile(r'^%s[ \t]*=[ \t]*' % re.escape(option))


def _values(lines, section, option):
    span = _section(lines, section)
    if span is None:
        return []
    pat = _option_re(option)
    return [pat.sub('', lines[i]).strip() for i in range(*span)
            if pat.match(lines[i])]


def iniget(path, section, option):
    values = _values(_read(path), section, option)
    return values[0] if values else ''


def iniget_multiline(path, section, option):
    return ' '.join(_values(_read(path), section, option))


def _ensure_section(lines, section):
    span = _section(lines, section)
    if span is None:
        lines += ['', '[%s]' % section]
        span = _section(lines, section)
    return span


def iniset(path, section, option, value):
    lines = _read(path)
    start, end = _ensure_section(lines, section)
    pat = _option_re(option)
    found = False
    for i in range(start + 1, end):
        if pat.match(lines[i]):
            lines[i] = pat.match(lines[i]).group(0) + value
            found = True
    if not found:
        lines.insert(start + 1, '%s = %s' % (option, value))
    _write(path, lines)


def inidelete(path, section, option):
    lines = _read(path)
    span = _section(lines, section)
    if span is None:
        return
    pat = _option_re(option)
    start, end = span
    lines[start:end] = [ln for ln in lines[start:end] if not pat.match(ln)]
    _write(path, lines)


def iniset_multiline(path, section, option, *values):
    inidelete(path, section, option)
    lines = _read(path)
    start, _ = _ensure_section(lines, section)
    lines[start + 1:start + 1] = ['%s = %s' % (option, v) for v in values]
    _write(path, lines)


def iniadd(path, section, option, *values):
    current = iniget_multiline(path, section, option).split()
    iniset_multiline(path, section, option, *(current + list(values)))


def parse(path):
    """``{section: {option: [values]}}`` of an ini file (repeats kept)."""
    result = {}
    section = None
    for line in _read(path):
        stripped = line.strip()
        if not stripped or stripped[0] in '#;':
            continue
        if stripped.startswith('['):
            section = result.setdefault(stripped[1:stripped.index(']')], {})
        elif '=' in line and section is not None:
            key, value = line.split('=', 1)
            section.setdefault(key.strip(), []).append(value.strip())
    return result


COMMANDS = {'iniset': iniset, 'iniget': iniget, 'inidelete': inidelete,
            'iniget_multiline': iniget_multiline,
            'iniset_multiline': iniset_multiline, 'iniadd': iniadd}


def main(argv):
    result = COMMANDS[argv[0]](*argv[1:])
    if result is not None:
        print(result)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
