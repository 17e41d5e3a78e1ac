"""A TCP proxy that adds a fixed latency, for tests on a kernel without
netem: every chunk read from either side is written to the other side
`--delay_ms` later. Chunks are queued with the time they are due, so the
delay is added once, not once per chunk in flight: a stream keeps its
throughput, as over a long link.

    delay_proxy.py --listen=HOST:PORT --to=HOST:PORT --delay_ms=N

It prints "delay_proxy: listening on HOST:PORT" once it accepts
connections, and runs until it is terminated. Each accepted connection
gets a connection of its own to --to; when either side closes or fails,
both are closed.
"""

import argparse
import asyncio
import signal
import sys


def host_port(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


async def delayed_copy(reader, writer, delay):
    """Copies reader to writer, each chunk `delay` seconds after it came."""
    loop = asyncio.get_running_loop()
    due_chunks = asyncio.Queue()

    async def send():
        while True:
            due, chunk = await due_chunks.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)  # the latency this proxy adds
            if not chunk:
                writer.write_eof()
                return
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while True:
            chunk = await reader.read(1 << 16)
            due_chunks.put_nowait((loop.time() + delay, chunk))
            if not chunk:
                break
        await sender
    except OSError:
        pass  # a side reset or closed: on_connection closes both
    finally:
        sender.cancel()


async def serve(listen, target, delay):
    async def on_connection(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(
                *target)
        except OSError as error:
            print(f"delay_proxy: cannot reach {target[0]}:{target[1]}: "
                  f"{error}", file=sys.stderr, flush=True)
            client_writer.close()
            return
        copies = [
            asyncio.create_task(
                delayed_copy(client_reader, server_writer, delay)),
            asyncio.create_task(
                delayed_copy(server_reader, client_writer, delay)),
        ]
        # Half-closes travel through; a failure on either side ends both.
        done, pending = await asyncio.wait(
            copies, return_when=asyncio.FIRST_EXCEPTION)
        for task in pending:
            task.cancel()
        for writer in (client_writer, server_writer):
            writer.close()

    server = await asyncio.start_server(on_connection, *listen)
    print(f"delay_proxy: listening on {listen[0]}:{listen[1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=host_port, required=True)
    parser.add_argument("--to", type=host_port, required=True)
    parser.add_argument("--delay_ms", type=float, required=True)
    args = parser.parse_args()
    if args.delay_ms < 0:
        parser.error("--delay_ms must be at least 0")
    asyncio.run(serve(args.listen, args.to, args.delay_ms / 1000))


if __name__ == "__main__":
    main()
