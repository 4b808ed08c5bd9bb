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
"""Running ``ansible/rollout.yml`` for real from a test: the wheel a
controller ships (built from this checkout's working tree), the
``ansible-playbook`` of this interpreter's venv, and its PLAY RECAP read
back. Used by tests/functional/test_ansible_rollout.py (stand-in nodes)
and tests/cloud/test_cloud_ansible.py (the one-machine cloud).
"""

from importlib import metadata
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
ANSIBLE = os.path.join(ROOT, 'ansible')
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(BIN, 'ansible-playbook')
RECAP = re.compile(r'^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)'
                   r'\s+failed=(\d+)', re.M)


def build_wheel(base, root=ROOT):
    """A wheel of ``root``'s working tree (tracked and untracked files
    that git does not ignore) in ``base``/dist; its path.

    A copy without .git: pbr takes the version from PBR_VERSION (this
    checkout's, as pbr computed it for this interpreter's install).
    """
    base = str(base)
    src = os.path.join(base, 'src')
    files = subprocess.run(
        ['git', 'ls-files', '-co', '--exclude-standard'], cwd=root,
        check=True, capture_output=True, text=True).stdout.split()
    for rel in files:
        if rel.startswith('.venv/') or not os.path.isfile(
                os.path.join(root, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
        shutil.copy2(os.path.join(root, rel), os.path.join(src, rel))
    out = os.path.join(base, 'dist')
    env = dict(os.environ, PBR_VERSION=metadata.version('iosched'))
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet',
                    '--no-deps', '--disable-pip-version-check', '-w', out,
                    src], check=True, capture_output=True, env=env)
    found = [n for n in os.listdir(out)
             if n.startswith('iosched-') and n.endswith('.whl')]
    assert len(found) == 1, found
    return os.path.join(out, found[0])


def recap(text):
    """{host: {ok, changed, failed}} of a PLAY RECAP."""
    return {m.group(1): dict(ok=int(m.group(2)), changed=int(m.group(3)),
                             failed=int(m.group(5)))
            for m in RECAP.finditer(text)}


def play(inventory, base, *args, playbook='rollout.yml', timeout=600):
    """``ansible-playbook -i inventory playbook args`` in ansible/, with
    its home and temp dirs under ``base``; the CompletedProcess with
    ``recap`` and ``seconds``.
    """
    env = dict(os.environ, ANSIBLE_PIPELINING='1', ANSIBLE_NOCOLOR='1',
               ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_HOME=os.path.join(str(base), 'ansible-home'),
               ANSIBLE_LOCAL_TEMP=os.path.join(str(base), 'ansible-tmp'),
               PATH=BIN + os.pathsep + os.environ.get('PATH', ''))
    t0 = time.monotonic()
    proc = subprocess.run([PLAYBOOK, '-i', str(inventory), playbook]
                          + list(args), cwd=ANSIBLE, env=env,
                          capture_output=True, text=True, timeout=timeout)
    proc.seconds = time.monotonic() - t0
    proc.recap = recap(proc.stdout)
    print('ansible-playbook %s: rc %d in %.1f s, %s' % (
        ' '.join(args), proc.returncode, proc.seconds, proc.recap))
    return proc
