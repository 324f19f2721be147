#!/usr/bin/env python3
"""aiocoap client for coapcc's interop tests (tests/interop/main.rs).

Usage: aiocoap_client.py METHOD URI [--payload TEXT] [--out FILE]
Prints one JSON object: {"code": "2.05", "len": N, "sha256": "...", "payload": "<text if short>"};
with --out, also writes the response body to FILE. Block-wise transfers are reassembled by
aiocoap.
"""
import argparse
import asyncio
import hashlib
import json

import aiocoap


async def main(method, uri, payload, out_file):
    ctx = await aiocoap.Context.create_client_context()
    try:
        code = getattr(aiocoap, method.upper())
        req = aiocoap.Message(code=code, uri=uri, payload=payload.encode() if payload else b"")
        resp = await asyncio.wait_for(ctx.request(req).response, 60)
    finally:
        await ctx.shutdown()
    c = resp.code
    out = {
        "code": c.dotted,
        "len": len(resp.payload),
        "sha256": hashlib.sha256(resp.payload).hexdigest(),
        "payload": resp.payload.decode("utf-8", "replace") if len(resp.payload) <= 200 else None,
    }
    if out_file:
        with open(out_file, "wb") as f:
            f.write(resp.payload)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("method")
    ap.add_argument("uri")
    ap.add_argument("--payload")
    ap.add_argument("--out")
    a = ap.parse_args()
    asyncio.run(main(a.method, a.uri, a.payload, a.out))
