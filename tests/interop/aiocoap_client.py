#!/usr/bin/env python3
"""aiocoap client for coapcc's interop tests (tests/interop/main.rs).

Usage: aiocoap_client.py METHOD URI [--payload TEXT] [--out FILE] [--repeat N] [--timeout S] [--observe N]
Prints one JSON object: {"code": "2.05", "len": N, "sha256": "...", "payload": "<text if short>",
"requests": N}; with --out, also writes the response body to FILE. Block-wise transfers are
reassembled by aiocoap. With --repeat N the request is made N times, one after the other (all
N responses must have the same code and payload, else the exit code is 1); --timeout bounds
each request (default 60 s). With --observe N: registers (RFC 7641), prints {"code", "first",
"notifications": [N payloads]} and cancels.
"""

import argparse
import asyncio
import hashlib
import json
import sys

import aiocoap


async def main(method, uri, payload, out_file, repeat, timeout, observe):
    ctx = await aiocoap.Context.create_client_context()
    responses = []
    try:
        code = getattr(aiocoap, method.upper())
        if observe:
            # Register (Observe = 0), then collect `observe` notifications and cancel.
            req = aiocoap.Message(code=code, uri=uri, observe=0)
            pr = ctx.request(req)
            first = await asyncio.wait_for(pr.response, timeout)
            notes = []
            async for n in pr.observation:
                notes.append(n.payload.decode("utf-8", "replace"))
                if len(notes) >= observe:
                    pr.observation.cancel()
                    break
            print(
                json.dumps(
                    {"code": first.code.dotted, "first": first.payload.decode(), "notifications": notes}
                )
            )
            return
        for _ in range(repeat):
            req = aiocoap.Message(code=code, uri=uri, payload=payload.encode() if payload else b"")
            responses.append(await asyncio.wait_for(ctx.request(req).response, timeout))
    finally:
        await ctx.shutdown()
    resp = responses[-1]
    same = all(r.code == resp.code and r.payload == resp.payload for r in responses)
    out = {
        "code": resp.code.dotted,
        "len": len(resp.payload),
        "sha256": hashlib.sha256(resp.payload).hexdigest(),
        "payload": resp.payload.decode("utf-8", "replace") if len(resp.payload) <= 200 else None,
        "requests": len(responses),
    }
    if out_file:
        with open(out_file, "wb") as f:
            f.write(resp.payload)
    print(json.dumps(out), flush=True)
    if not same:
        print("responses differ between repetitions", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("method")
    ap.add_argument("uri")
    ap.add_argument("--payload")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--observe", type=int, default=0)
    a = ap.parse_args()
    asyncio.run(main(a.method, a.uri, a.payload, a.out, a.repeat, a.timeout, a.observe))
