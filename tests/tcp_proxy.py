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
"""A TCP proxy a test can cut: a broker outage for one client only.

    with TcpProxy(('127.0.0.1', 5672)) as proxy:   # proxy.port: connect here
        ...
        proxy.cut()       # close every connection, refuse new ones
        ...
        proxy.restore()   # accept again on the same port

The shared RabbitMQ keeps serving everyone else (other tests, other
workers): only what connects through the proxy sees the outage, as a
compute node cut off from the broker would (connections reset, then
refused).
"""

import socket
import threading


class TcpProxy(object):

    def __init__(self, upstream, host='127.0.0.1'):
        self.upstream = upstream
        self.host = host
        self.port = None
        self._lock = threading.Lock()
        self._conns = []
        self._listener = None
        self._thread = None
        self.accepted = 0
        self.restore()

    def restore(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, self.port or 0))
        s.listen(64)
        self.port = s.getsockname()[1]
        with self._lock:
            self._listener = s
        self._thread = threading.Thread(target=self._accept, args=(s,),
                                        daemon=True)
        self._thread.start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    server.close()
                    return
                self._conns += [client, server]
                self.accepted += 1
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b),
                                 daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        """Reset every connection and stop listening (connections refused)."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)   # wakes accept()
            except OSError:
                pass
            listener.close()
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.cut()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
