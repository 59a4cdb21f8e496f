"""The local server's listening socket: accepted connections get TCP_NODELAY from asyncio.

Without it every small keep-alive response waited ~40 ms for the client's delayed ACK. The
check is on the socket option itself, not on timings."""

from __future__ import annotations

import asyncio
import socket

from shared.local.server import loopback_listener


def test_connections_accepted_on_the_listener_have_tcp_nodelay() -> None:
    async def accept_one() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        listener = loopback_listener(0)
        server = await asyncio.start_server(on_connect, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(seen, timeout=5)
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(accept_one()) != 0


def test_a_plain_socket_would_not_get_it() -> None:
    # Why the listener names its protocol: asyncio skips TCP_NODELAY for proto 0 sockets.
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener = loopback_listener(0)
    try:
        assert plain.proto == 0
        assert listener.proto == socket.IPPROTO_TCP
    finally:
        plain.close()
        listener.close()
