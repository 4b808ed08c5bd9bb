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
"""The cloud's backing services: MariaDB (its databases and user) and a
RabbitMQ virtual host. Both servers are the machine's own (127.0.0.1:3306,
127.0.0.1:5672); ``make cloud`` starts them when absent (tools/services.sh)
and this module checks they answer, says so clearly when not, and creates
and removes only what the cloud owns: ``<prefix>*`` databases, one user and
one vhost.
"""

import shutil
import socket
import subprocess

from iosched.cloud import procs


def _answers(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


def check(layout):
    """Raise with what to do when MariaDB or RabbitMQ does not answer."""
    missing = []
    if not _answers(layout.db_host, 3306):
        missing.append('MariaDB on %s:3306 (apt-get install mariadb-server; '
                       'start-stop-daemon --start --background --exec '
                       '/usr/sbin/mariadbd)' % layout.db_host)
    if not _answers(layout.rabbit_host, layout.rabbit_port):
        missing.append('RabbitMQ on %s:%d (rabbitmq-server -detached)'
                       % (layout.rabbit_host, layout.rabbit_port))
    if missing:
        raise procs.ServiceFailed(
            'the cloud needs these services, which do not answer: %s. '
            '`make cloud` starts them (tools/services.sh).'
            % '; '.join(missing))


def _mysql(sql):
    # root over the server's unix socket, as Debian's mariadb-server sets it
    return procs.run(['mysql', '-uroot', '-e', sql])


def create_databases(layout, names):
    stmts = ["CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s'"
             % (layout.db_user, layout.password),
             "ALTER USER '%s'@'%%' IDENTIFIED BY '%s'"
             % (layout.db_user, layout.password)]
    for name in names:
        db = layout.database(name)
        stmts.append('CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8'
                     % db)
        stmts.append("GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%%'"
                     % (db, layout.db_user))
    _mysql('; '.join(stmts))


def list_databases(layout):
    return _mysql("SHOW DATABASES LIKE '%s%%'" % layout.db_prefix.replace(
        '_', '\\_')).stdout.split()[1:]


def drop_databases(layout):
    out = list_databases(layout)
    stmts = ['DROP DATABASE IF EXISTS `%s`' % db for db in out]
    stmts.append("DROP USER IF EXISTS '%s'@'%%'" % layout.db_user)
    _mysql('; '.join(stmts))
    return out


def _rabbitmqctl(*args, check=True):
    ctl = shutil.which('rabbitmqctl') or '/usr/sbin/rabbitmqctl'
    return procs.run([ctl, '-q'] + list(args), check=check)


def create_vhost(layout):
    _rabbitmqctl('add_vhost', layout.rabbit_vhost, check=False)
    _rabbitmqctl('set_permissions', '-p', layout.rabbit_vhost,
                 layout.rabbit_user, '.*', '.*', '.*')


def delete_vhost(layout):
    res = _rabbitmqctl('delete_vhost', layout.rabbit_vhost, check=False)
    return res.returncode == 0


def vhost_exists(layout):
    try:
        res = _rabbitmqctl('list_vhosts', check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return layout.rabbit_vhost in res.stdout.split()
