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
"""

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOCS = sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')) +
              glob.glob(os.path.join(ROOT, '*', 'README.md')) +
              [os.path.join(ROOT, 'README.md')])
INLINE = re.compile(r'^\s*[A-Za-z_][\w.-]*\s*=.*\s#')


def _ini_blocks(text):
    block = None
    for number, line in enumerate(text.split('\n'), 1):
        if line.startswith('```'):
            if block is None and line[3:].strip() in ('ini', 'conf'):
                block = []
            elif block is not None:
                yield block
                block = None
        elif block is not None:
            block.append((number, line))


@pytest.mark.parametrize('path', DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_inline_comments_in_ini_blocks(path):
    with open(path) as fh:
        text = fh.read()
    bad = ['%d: %s' % (n, line) for block in _ini_blocks(text)
           for n, line in block if INLINE.match(line)]
    assert not bad, ('%s: an inline "# ..." becomes part of the value in '
                     'oslo.config; put the comment on its own line:\n%s'
                     % (os.path.relpath(path, ROOT), '\n'.join(bad)))


def test_the_check_finds_an_inline_comment():
    text = '```ini\n[host_agent]\nhost = compute-1  # nova\n```\n'
    (block,) = list(_ini_blocks(text))
    assert [n for n, line in block if INLINE.match(line)] == [3]
