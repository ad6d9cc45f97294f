#!/usr/bin/env python3
"""A TCP proxy that misbehaves on command, for the replication fault tests.

    python3 fault_proxy.py TARGET_HOST TARGET_PORT [SECONDS]

Listens on two loopback ports chosen by the kernel and prints them on one line:
`listening PROXY_PORT CONTROL_PORT`. Clients connect to PROXY_PORT and are forwarded to the
target. A line sent to CONTROL_PORT changes what happens to the bytes clients send to the
target (the server's answers always pass); the proxy answers `ok`:

    pass          forward at once (the start)
    hold          keep every byte clients send from now on; deliver nothing
    release       deliver what was held, in order, even for clients that have gone since
                  (as a network does when a partition heals), then pass again
    slow N        forward at most N bytes a second
    cut           close every connection now, both ways
    mute          drop every answer the server sends on the connections open now (a link that
                  fails one way: requests arrive, answers never come); new connections pass
    count         answer the number of open connections

It stops by itself after SECONDS (600 by default), or when killed.
"""
import asyncio
import collections
import sys


class Proxy:
    def __init__(self, host, port):
        self.host = host
        self.port = port
        self.mode = "pass"
        self.rate = 0
        self.connections = set()
        self.muted = set()
        self.changed = asyncio.Condition()

    async def client(self, reader, writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        link = (writer, server_writer)
        self.connections.add(link)
        up = asyncio.ensure_future(self.upstream(reader, server_writer))
        down = asyncio.ensure_future(self.downstream(server_reader, writer, link))
        # The client's side may end while bytes it sent are held: the upstream task delivers them
        # on release, then closes the server's side. Only the server's end stops it early.
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        if down.done() and not up.done():
            up.cancel()
            server_writer.close()
        await asyncio.gather(up, down, return_exceptions=True)
        self.connections.discard(link)
        self.muted.discard(link)
        writer.close()

    async def wait_change(self):
        async with self.changed:
            await self.changed.wait()

    async def send(self, data, server_writer):
        if self.mode == "slow" and self.rate > 0:
            for i in range(len(data)):
                server_writer.write(data[i:i + 1])
                await server_writer.drain()
                await asyncio.sleep(1.0 / self.rate)
        else:
            server_writer.write(data)
            await server_writer.drain()

    async def upstream(self, reader, server_writer):
        """Client to server, through the mode."""
        pending = collections.deque()
        read = None
        eof = False
        while True:
            if self.mode != "hold" and pending:
                await self.send(pending.popleft(), server_writer)
                continue
            if eof:
                if self.mode != "hold":
                    break
                await self.wait_change()
                continue
            if read is None:
                read = asyncio.ensure_future(reader.read(65536))
            change = asyncio.ensure_future(self.wait_change())
            done, _ = await asyncio.wait([read, change], return_when=asyncio.FIRST_COMPLETED)
            if read in done:
                change.cancel()
                data = read.result()
                read = None
                if data:
                    pending.append(data)
                else:
                    eof = True
            # Else the mode changed: look again; the read stays on its way.
        server_writer.close()

    async def downstream(self, server_reader, writer, link):
        while True:
            data = await server_reader.read(65536)
            if not data:
                break
            if link in self.muted:
                continue
            writer.write(data)
            await writer.drain()

    async def control(self, reader, writer):
        while True:
            line = await reader.readline()
            if not line:
                break
            words = line.decode().split()
            answer = "ok"
            if not words:
                continue
            if words[0] in ("pass", "hold"):
                self.mode = words[0]
            elif words[0] == "release":
                self.mode = "pass"
            elif words[0] == "slow":
                self.mode = "slow"
                self.rate = int(words[1])
            elif words[0] == "cut":
                for client, server in list(self.connections):
                    for side in (client, server):
                        transport = side.transport
                        if transport is not None:
                            transport.abort()
            elif words[0] == "mute":
                self.muted.update(self.connections)
            elif words[0] == "count":
                answer = str(len(self.connections))
            else:
                answer = "unknown command"
            async with self.changed:
                self.changed.notify_all()
            writer.write((answer + "\n").encode())
            await writer.drain()
        writer.close()


async def main():
    proxy = Proxy(sys.argv[1], int(sys.argv[2]))
    server = await asyncio.start_server(proxy.client, "127.0.0.1", 0)
    control = await asyncio.start_server(proxy.control, "127.0.0.1", 0)
    ports = (server.sockets[0].getsockname()[1], control.sockets[0].getsockname()[1])
    print("listening %d %d" % ports, flush=True)
    await asyncio.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 600)


if __name__ == "__main__":
    asyncio.run(main())
