#!/usr/bin/env python3
"""aiocoap test server for coapcc's interop tests (tests/interop/main.rs).

Serves the same resources as `coapcc server` where the test needs them:
  /hello              GET: the same 60-byte payload
  /large?size=N       GET: N bytes of the same 64-byte line pattern (aiocoap slices Block2)
  /echo               PUT/POST: 2.04 echoing the payload; GET: last payload
  /.well-known/core   GET: link format (aiocoap's WKCResource)

Usage: aiocoap_server.py HOST PORT. Prints "ready" on stdout once listening.
"""

import asyncio
import contextlib
import sys

import aiocoap
import aiocoap.resource as resource

HELLO = b"Hello from coapcc! CoAP congestion-control test server ....\n"
LINE = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n"
assert len(HELLO) == 60 and len(LINE) == 64


def large_body(n):
    return (LINE * (n // 64 + 1))[:n]


class Hello(resource.Resource):
    async def render_get(self, request):
        return aiocoap.Message(payload=HELLO, content_format=0)


class Large(resource.Resource):
    async def render_get(self, request):
        size = 102400
        for q in request.opt.uri_query:
            if q.startswith("size="):
                size = int(q[5:])
        return aiocoap.Message(payload=large_body(size), content_format=0)


class Echo(resource.Resource):
    def __init__(self):
        super().__init__()
        self.stored = b""

    async def render_get(self, request):
        return aiocoap.Message(payload=self.stored)

    async def render_put(self, request):
        self.stored = request.payload
        return aiocoap.Message(code=aiocoap.CHANGED, payload=request.payload)

    render_post = render_put


async def main(host, port):
    root = resource.Site()
    root.add_resource([".well-known", "core"], resource.WKCResource(root.get_resources_as_linkheader))
    root.add_resource(["hello"], Hello())
    root.add_resource(["large"], Large())
    root.add_resource(["echo"], Echo())
    await aiocoap.Context.create_server_context(root, bind=(host, port))
    print("ready", flush=True)
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(sys.argv[1], int(sys.argv[2])))
