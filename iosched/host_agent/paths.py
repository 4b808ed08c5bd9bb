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
"""Path safety for names that come from the host (pure: no I/O).

Domain names, cgroup paths, disk targets and tap names come from libvirt
or procfs, and a guest owner chooses some of them (the domain name follows
the Nova instance name template). Every path the agent builds from them
goes through ``safe_join``, and names are checked against the patterns in
``NAME_PATTERNS`` before use, so a hostile name cannot point a privileged
write outside its root.

libvirt's QEMU cgroup layouts (``<m>`` is the machine name
``qemu-<id>-<name>``, see ``machine_name``)::

    v1: <cpu hierarchy>/machine/<m>.libvirt-qemu/{vcpuN,emulator}
    v2: <root>/machine.slice/machine-<escaped m>.scope/libvirt/{vcpuN,...}

e.g. ``machine.slice/machine-qemu\\x2d1\\x2dinstance\\x2d00000001.scope``.
"""

import os
import re


class UnsafePath(ValueError):
    """A path part or a name was refused; the message says which and why."""


# Accepted names, by kind. Anything else is refused, even when the host
# software would accept it: the agent then skips that object with a warning.
NAME_PATTERNS = {
    # libvirt domain names. Nova's default template gives instance-0000002a;
    # libvirt itself allows almost anything but '/'.
    'domain': r'[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,254}',
    # libvirt's machine name: qemu-<id>-<name with [A-Za-z0-9.-] only>,
    # at most 64 characters (virDomainDriverGenerateMachineName).
    'machine': r'qemu-[0-9]{1,10}(-[A-Za-z0-9][A-Za-z0-9.-]*)?',
    # One component of a cgroup path: a directory name made of the
    # characters libvirt and systemd use (systemd escapes as \xNN).
    'cgroup_component': r'[A-Za-z0-9_:@+\\][A-Za-z0-9_.:@+\\-]{0,254}',
    # Guest disk targets in the libvirt XML: vda, sdb, hdc, xvdaa, fda.
    'disk_target': r'(vd|sd|hd|xvd|fd|ubd)[a-z]{1,3}',
    # Linux interface names (dev_valid_name: < 16 bytes, no '/', ':' or
    # blank, not '.' or '..'); Nova's are tap + 11 characters of a port id.
    'tap': r'(?!\.\.?$)[A-Za-z0-9_.-]{1,15}',
    # A vCPU thread's cgroup directory under libvirt.
    'vcpu_dir': r'vcpu[0-9]{1,4}',
}

_COMPILED = {k: re.compile(v) for k, v in NAME_PATTERNS.items()}
_MACHINE_NAME_MAX = 64


def check_name(kind, value, pattern=None):
    """Return ``value`` when it fully matches the pattern for ``kind``.

    ``pattern`` (a regex string) overrides ``NAME_PATTERNS[kind]``.
    Raise UnsafePath naming the kind and the refused value otherwise.
    """
    if pattern is None:
        try:
            regex = _COMPILED[kind]
        except KeyError:
            raise UnsafePath('no accepted pattern for names of kind %r'
                             % (kind,))
    else:
        regex = re.compile(pattern)
    if not isinstance(value, str):
        raise UnsafePath('%s name %r is not a string' % (kind, value))
    if regex.fullmatch(value) is None:
        raise UnsafePath('%s name %r does not match %s'
                         % (kind, value, regex.pattern))
    if kind == 'machine' and len(value) > _MACHINE_NAME_MAX:
        raise UnsafePath('machine name %r is longer than %d characters'
                         % (value, _MACHINE_NAME_MAX))
    return value


def _segments(part, root):
    if isinstance(part, bool) or not isinstance(part, (str, int)):
        raise UnsafePath('path part %r under %s is not a string'
                         % (part, root))
    if isinstance(part, int):
        if part < 0:
            raise UnsafePath('path part %r under %s is negative'
                             % (part, root))
        return [str(part)]
    if '\0' in part:
        raise UnsafePath('path part %r under %s contains NUL' % (part, root))
    if part.startswith('/'):
        raise UnsafePath('path part %r under %s is absolute' % (part, root))
    segs = part.split('/')
    for seg in segs:
        if seg == '':
            raise UnsafePath('path part %r under %s has an empty segment'
                             % (part, root))
        if seg in ('.', '..'):
            raise UnsafePath('path part %r under %s contains %r'
                             % (part, root, seg))
    return segs


def safe_join(root, *parts):
    """Join ``parts`` below ``root``, refusing anything that could leave it.

    A part may hold several segments (``'machine/qemu-1-a.libvirt-qemu'``)
    or be a non-negative int (a pid). Refused with UnsafePath: a relative
    or NUL-containing root; parts that are absolute, contain NUL, ``.`` or
    ``..`` segments or empty segments (``a//b``, trailing ``/``); and any
    result whose normalized form is not below the normalized root.
    Symbolic links are not resolved here (no I/O): the privileged writer
    checks ``os.path.realpath`` itself.
    """
    if not isinstance(root, str) or not root or '\0' in root:
        raise UnsafePath('root %r is not a usable path' % (root,))
    if not os.path.isabs(root):
        raise UnsafePath('root %r is not absolute' % (root,))
    norm_root = os.path.normpath(root)
    segs = []
    for part in parts:
        segs.extend(_segments(part, norm_root))
    result = os.path.normpath(os.path.join(norm_root, *segs))
    if os.path.commonpath([norm_root, result]) != norm_root:
        raise UnsafePath('path %r leaves root %s' % ('/'.join(segs),
                                                      norm_root))
    return result


def is_below(root, path):
    """True when normalized ``path`` is ``root`` or inside it (no I/O)."""
    root = os.path.normpath(root)
    path = os.path.normpath(path)
    return os.path.commonpath([root, path]) == root


# systemd unit-name escaping as libvirt does it (virSystemdEscapeName):
# '/' becomes '-', a leading '.', '-', '\' and anything outside the valid
# characters become \xNN (lower-case hex of each UTF-8 byte).
_SYSTEMD_VALID = frozenset(b'0123456789abcdefghijklmnopqrstuvwxyz'
                           b'ABCDEFGHIJKLMNOPQRSTUVWXYZ:_.')


def escape_systemd(name):
    """'qemu-1-vm' -> 'qemu\\x2d1\\x2dvm' (systemd-escape, libvirt style)."""
    out = []
    for i, byte in enumerate(name.encode('utf-8')):
        if byte == ord('/'):
            out.append('-')
        elif byte in _SYSTEMD_VALID and not (i == 0 and byte == ord('.')):
            out.append(chr(byte))
        else:
            out.append('\\x%02x' % byte)
    return ''.join(out)


_UNESCAPE = re.compile(rb'\\x([0-9a-fA-F]{2})')


def unescape_systemd(text):
    """Inverse of ``escape_systemd`` (a '-' decodes to '/')."""
    raw = text.encode('utf-8').replace(b'-', b'/')
    return _UNESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]),
                         raw).decode('utf-8', 'replace')


def machine_name(dom_id, name):
    """libvirt's machine name ``qemu-<id>-<name>`` for a domain.

    Mirrors virDomainMachineNameAppendValid (libvirt >= 7.0): characters
    outside ``[A-Za-z0-9.-]`` are dropped, a '.' or '-' is kept only right
    after a kept letter or digit, the whole name stops at 64 characters and
    loses trailing '-' and '.'.
    """
    buf = 'qemu-%d-' % int(dom_id)
    skip = True
    for ch in name:
        if len(buf) >= _MACHINE_NAME_MAX:
            break
        if ch in '.-':
            if not skip:
                buf += ch
                skip = True
            continue
        if ch.isascii() and ch.isalnum():
            buf += ch
            skip = False
    return buf.rstrip('-.')


def v1_machine_dir(machine):
    """cgroup v1 directory of a QEMU domain below ``machine/``."""
    return check_name('machine', machine) + '.libvirt-qemu'


def v2_scope_name(machine):
    """cgroup v2 systemd scope of a QEMU domain below ``machine.slice/``."""
    return 'machine-%s.scope' % escape_systemd(check_name('machine', machine))
