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
"""Configuration snippets in the docs can be pasted as they are.

oslo.config has no inline comments: ``host = compute-1  # note`` sets the
host to the whole rest of the line (found by following docs/operator.md
in tests/nova/test_operator_path.py). Every ``ini`` block of the docs
keeps its comments on lines of their own.

Every block is also parsed by oslo.config's own parser (a section header
with a trailing comment is refused, as the programs refuse it), each of
its sections and keys must be one iosched, Nova (for nova.conf fragments)
or the oslo libraries they load read, and each iosched value must be one
its option accepts. DevStack ``local.conf`` blocks are not oslo.config
files and are skipped. Every oslo-config-generator namespace the docs or
etc/oslo-config-generator name must be an installed entry point.
"""

import copy
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOCS = sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')) +
              glob.glob(os.path.join(ROOT, 'docs', 'config', '*.md')) +
              glob.glob(os.path.join(ROOT, '*', 'README.md')) +
              [os.path.join(ROOT, 'README.md')])
INLINE = re.compile(r'^\s*[A-Za-z_][\w.-]*\s*=.*\s#')


def _ini_blocks(text):
    """(line number, line) lists of each ini block; a fence indented in a
    list item has its indentation taken off its lines, as a reader copies
    them.
    """
    block, indent = None, 0
    for number, line in enumerate(text.split('\n'), 1):
        stripped = line.lstrip(' ')
        if stripped.startswith('```'):
            if block is None and stripped[3:].strip() in ('ini', 'conf'):
                block, indent = [], len(line) - len(stripped)
            elif block is not None:
                yield block
                block = None
        elif block is not None:
            block.append((number, line[indent:] if line[:indent].strip()
                          == '' else line))


@pytest.mark.parametrize('path', DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_inline_comments_in_ini_blocks(path):
    with open(path) as fh:
        text = fh.read()
    bad = ['%d: %s' % (n, line) for block in _ini_blocks(text)
           for n, line in block if INLINE.match(line)]
    assert not bad, ('%s: an inline "# ..." becomes part of the value in '
                     'oslo.config; put the comment on its own line:\n%s'
                     % (os.path.relpath(path, ROOT), '\n'.join(bad)))


def test_an_indented_block_is_read_as_pasted():
    text = '1. in nova.conf:\n\n   ```ini\n   [iosched]\n   x = 1\n   ```\n'
    (block,) = list(_ini_blocks(text))
    assert block == [(4, '[iosched]'), (5, 'x = 1')]


def test_the_check_finds_an_inline_comment():
    text = '```ini\n[host_agent]\nhost = compute-1  # nova\n```\n'
    (block,) = list(_ini_blocks(text))
    assert [n for n, line in block if INLINE.match(line)] == [3]


# -- every block parses as oslo.config parses it, and loads into a program --

# What each program reads besides iosched's own options: the namespaces of
# its oslo-config-generator file (etc/oslo-config-generator) and, for a
# block pasted into nova.conf, Nova's own (no block of the docs is a
# cinder.conf fragment: the SLO tooling's options are iosched's).
NAMESPACES = {
    'nova': ['nova.conf', 'oslo.log', 'oslo.messaging', 'oslo.policy',
             'oslo.concurrency', 'oslo.reports', 'oslo.privsep',
             'keystonemiddleware.auth_token', 'oslo.middleware', 'os_vif'],
    'iosched': ['iosched.host_agent', 'iosched.nova_plugin',
                'iosched.cinder_qos', 'oslo.log', 'oslo.messaging',
                'oslo.reports', 'oslo.privsep'],
}
_DUMP = r'''
import json, sys, warnings
warnings.simplefilter('ignore')
from oslo_config import generator
out = {}
for ns, groups in generator._list_opts(sys.argv[1:]):
    for group, opts in groups:
        name = getattr(group, 'name', group) or 'DEFAULT'
        keys = out.setdefault(name, [])
        for o in opts:
            keys.append(o.dest)
            keys.extend(d.name for d in o.deprecated_opts if d.name)
print(json.dumps(out))
'''


@pytest.fixture(scope='module')
def known_options():
    """{program: {group: set(option names)}}, each read in a process of its
    own (Nova and Cinder register global options that cannot share one).
    """
    import json
    import subprocess
    import sys
    known = {}
    for program, namespaces in NAMESPACES.items():
        out = subprocess.run([sys.executable, '-c', _DUMP] + namespaces,
                             capture_output=True, text=True, check=True)
        known[program] = {g: set(k) for g, k in json.loads(
            out.stdout).items()}
    return known


def _auth_options(auth_type):
    """The keystoneauth options a group with ``auth_type`` accepts."""
    from keystoneauth1 import loading
    names = {'auth_type', 'auth_section'}
    for opt in (loading.get_session_conf_options()
                + loading.get_adapter_conf_options()):
        names.add(opt.dest)
    if auth_type:
        try:
            names.update(o.dest for o in
                         loading.get_auth_plugin_conf_options(auth_type))
        except Exception:
            pass
    return names


def _parse(text, tmp_path):
    """{section: {key: [values]}} as oslo.config's own parser reads it."""
    from oslo_config import cfg
    path = tmp_path / 'block.conf'
    path.write_text(text)
    sections = {}
    cfg.ConfigParser(str(path), sections).parse()
    return path, sections


def _iosched_conf(path):
    """A fresh ConfigOpts with every iosched option, loaded from ``path``
    the way io-host-agent, nova-scheduler (the plugin) and iosched-slo
    load their files.
    """
    from oslo_config import cfg

    from iosched.cinder_qos import conf as cinder_conf
    from iosched.host_agent.conf import opts as agent_opts
    from iosched.nova_plugin import conf as plugin_conf
    conf = cfg.ConfigOpts()
    for list_opts in (agent_opts.list_opts, plugin_conf.list_opts,
                      cinder_conf.list_opts):
        for group, opts in list_opts():
            name = getattr(group, 'name', group)
            for opt in opts:
                # a credential a block leaves out is not what is checked
                opt = copy.copy(opt)
                opt.required = False
                try:
                    conf.register_opt(opt, group=None if name in (
                        None, 'DEFAULT') else name)
                except cfg.DuplicateOptError:
                    pass
    conf([], project='iosched-docs', default_config_files=[str(path)],
         default_config_dirs=[])
    return conf


def _blocks_of_docs():
    for path in DOCS:
        with open(path) as fh:
            text = fh.read()
        for block in _ini_blocks(text):
            # DevStack's local.conf ([[local|localrc]] meta-sections) is
            # shell for DevStack, not an oslo.config file.
            if not block or any(line.startswith('[[') for _, line in block):
                continue
            yield os.path.relpath(path, ROOT), block


BLOCKS = list(_blocks_of_docs())


def _problems(block, tmp_path, known):
    """What is wrong with one ini block: a section header oslo.config
    refuses, a section or key no program reads, a value an iosched option
    refuses.
    """
    from oslo_config import cfg
    text = '\n'.join(line for _, line in block) + '\n'
    first = block[0][0]
    try:
        path, sections = _parse(text, tmp_path)
    except cfg.ParseError as e:
        return ['line %d: oslo.config refuses the block: %s'
                % (first + e.lineno - 1, e.msg)]
    ours = known['iosched']
    problems = []
    for section, keys in sections.items():
        programs = [p for p in known.values() if section in p]
        if not programs:
            problems.append('[%s]: no program reads this section (not an '
                            'option group of iosched, Nova or Cinder)'
                            % section)
            continue
        accepted = set().union(*(p[section] for p in programs))
        auth_type = keys.get('auth_type', [None])[-1]
        if auth_type or 'auth_section' in keys:
            accepted |= _auth_options(auth_type)
        for key in keys:
            if key not in accepted:
                problems.append('[%s] %s: no program reads this option'
                                % (section, key))
    if not problems and any(s in ours for s in sections):
        conf = _iosched_conf(path)
        for section, keys in sections.items():
            if section not in ours:
                continue
            group = conf if section == 'DEFAULT' else getattr(
                conf, section, None)
            for key in keys:
                if group is None or key not in ours[section]:
                    continue
                try:
                    getattr(group, key)
                except (cfg.NoSuchOptError, AttributeError):
                    continue    # another program's option of that group
                except (cfg.ConfigFileValueError, ValueError) as e:
                    problems.append('[%s] %s: %s' % (section, key, e))
    return problems


@pytest.mark.parametrize('where, block', BLOCKS,
                         ids=['%s:%d' % (w, b[0][0]) for w, b in BLOCKS])
def test_ini_block_loads_into_its_program(where, block, tmp_path,
                                          known_options):
    """Paste-ready: oslo.config parses the block (section headers
    included), every section and key is one some program reads, and every
    iosched value is one its option accepts.
    """
    problems = _problems(block, tmp_path, known_options)
    assert not problems, '%s:\n%s' % (where, '\n'.join(problems))


@pytest.mark.parametrize('text, want', [
    ('[placement]  # the agent\nauth_type = password\n', 'must end with ]'),
    ('[place ment]\nauth_type = password\n', 'no program reads'),
    ('[host_agent]\ntick_interval = soon\n', 'tick_interval'),
    ('[host_agent]\ntick_intervall = 1\n', 'no program reads'),
])
def test_the_block_check_finds(text, want, tmp_path, known_options):
    block = [(n, line) for n, line in enumerate(text.rstrip().split('\n'),
                                                  1)]
    problems = _problems(block, tmp_path, known_options)
    assert problems and want in '\n'.join(problems), problems


NAMESPACE_RE = re.compile(
    r'(?:--namespace[ =]|namespaces?:? )`?([\w.]+)`?')


def test_every_generator_namespace_the_docs_name_exists():
    from importlib import metadata
    names = {e.name for e in metadata.entry_points(
        group='oslo.config.opts')}
    named = set()
    for path in DOCS:
        with open(path) as fh:
            text = fh.read()
        for line in text.split('\n'):
            if 'generator' in line or '--namespace' in line:
                named.update(m for m in NAMESPACE_RE.findall(line)
                             if m.startswith(('iosched', 'oslo', 'nova',
                                              'cinder', 'keystone')))
    for path in glob.glob(os.path.join(ROOT, 'etc', 'oslo-config-generator',
                                       '*.conf')):
        with open(path) as fh:
            named.update(re.findall(r'^namespace\s*=\s*(\S+)', fh.read(),
                                    re.M))
    assert named, 'no namespace found in the docs'
    missing = sorted(named - names)
    assert not missing, ('oslo-config-generator namespaces named in the docs '
                         'or generator files that no package provides: %s'
                         % missing)
