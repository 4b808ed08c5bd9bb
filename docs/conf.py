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
"""Sphinx configuration of the iosched docs (docs/*.md through MyST).

Built by `tox -e docs` and `make docs` with warnings as errors.
"""

import os
import posixpath

from docutils import nodes
from sphinx import addnodes

project = 'iosched'
copyright = 'iosched authors'

extensions = [
    'myst_parser',
]

source_suffix = {'.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build', 'requirements.txt']

# GitHub-style heading anchors ("#host_agent" links within and between the
# Markdown files) resolve as they do on a code host.
myst_heading_anchors = 4
myst_enable_extensions = [
    'colon_fence',
    'deflist',
]

html_theme = 'alabaster'
html_title = 'iosched'

# Links from a page to a file of the repository outside docs/ (the code, the
# README, etc/, ansible/) read well on a code host but are not pages of this
# site. In the HTML each becomes its repository path in literal text, and a
# link to it under IOSCHED_REPO_URL (e.g. a code browser's tree URL) when
# that is set, instead of a download of a lone file or a warning.
repo_url = os.environ.get('IOSCHED_REPO_URL', '').rstrip('/')
_DOCS = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_DOCS)


def _repo_path(docname, target, domain):
    """The repository path a relative link leaves docs/ for, or None."""
    target = target.split('#', 1)[0]
    if domain == 'doc' and target.startswith(_ROOT + os.sep):
        # MyST made "../README.md" an absolute document name.
        path = os.path.relpath(target, _ROOT) + '.md'
    elif not target or '://' in target or target.startswith(
            ('/', 'mailto:')):
        return None
    else:
        path = posixpath.normpath(
            posixpath.join(posixpath.dirname('docs/' + docname), target))
    if path.startswith(('docs/', '../')) or path in ('docs', '..'):
        return None
    if not os.path.exists(os.path.join(_ROOT, path)):
        return None  # a broken link: Sphinx says so
    return path


def _source_links(app, doctree):
    docname = app.env.docname
    for node in list(doctree.findall(
            lambda n: isinstance(n, (addnodes.download_reference,
                                     addnodes.pending_xref)))):
        path = _repo_path(docname, node.get('reftarget', ''),
                          node.get('refdomain'))
        if path is None:
            continue
        text = node.astext()
        shown = [] if text.strip('`/') == path.rstrip('/') else [
            nodes.Text(text + ' (')]
        label = nodes.literal(path, path)
        if repo_url:
            label = nodes.reference('', '', label,
                                    refuri='%s/%s' % (repo_url, path))
        new = nodes.inline('', '', *shown, label)
        if shown:
            new += nodes.Text(')')
        node.replace_self(new)


def setup(app):
    # Before Sphinx's own collector turns download links into files.
    app.connect('doctree-read', _source_links, priority=400)
