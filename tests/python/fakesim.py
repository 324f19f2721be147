"""Runners for tests of the sweep machinery: a fake simulator (deterministic in the
configuration, same report shape as the real one) and a wrapper around the real simulator
that counts its runs, can fail after k runs, and can be slowed down."""

import json
import os
import random
import time


def fake_runner(config_json: str) -> str:
    cfg = json.loads(config_json)
    rng = random.Random(cfg["seed"])
    flows, hist, client = [], [0] * 6, 0
    n_total = sum(g["clients"] for g in cfg["groups"])
    exchanges = cfg.get("workload", {}).get("exchanges", 50)
    for gi, g in enumerate(cfg["groups"]):
        for _ in range(g["clients"]):
            retrans = [min(5, int(rng.expovariate(4.0 / max(1, n_total / 10)))) for _ in range(exchanges)]
            for r in retrans:
                hist[r] += 1
            flows.append(
                {
                    "client": client,
                    "group": gi,
                    "cc": g["cc"].split(":")[0],
                    "fct_s": exchanges * 0.66 + sum(retrans) * 2.0 + rng.random(),
                    "transmissions": exchanges + sum(retrans),
                    "retransmissions": sum(retrans),
                    "unnecessary_retransmissions": sum(1 for r in retrans if r and rng.random() < 0.3),
                    "failed_exchanges": 0,
                    "completed_exchanges": exchanges,
                }
            )
            client += 1
    link = {
        "offered_bytes": 1000 * n_total,
        "delivered_bytes": 900 * n_total,
        "buffer_drop_bytes": 50 * n_total,
        "error_loss_bytes": 50 * n_total,
        "busy_fraction": 0.5,
        "offered_packets": 10 * n_total,
        "delivered_packets": 9 * n_total,
        "buffer_drop_packets": 1,
        "error_loss_packets": 0,
    }
    return json.dumps(
        {
            "config": cfg,
            "flows": flows,
            "retransmissions_per_exchange": hist,
            "links": {"downlink": link, "uplink": link},
            "useful_fraction": 0.9,
            "sim_time_s": max(f["fct_s"] for f in flows),
            "wall_s": rng.random() * 1e-3,
            "events": 1234,
            "truncated": False,
        }
    )


def _count_run(config_json: str) -> None:
    """Count a run in $COAPCC_COUNT_FILE (one line per run started: its seed); raise once
    $COAPCC_FAIL_AFTER runs were done; sleep $COAPCC_SLEEP seconds."""
    path = os.environ["COAPCC_COUNT_FILE"]
    fail_after = int(os.environ.get("COAPCC_FAIL_AFTER", "-1"))
    with open(path, "a+") as f:
        f.seek(0)
        n = len(f.read().splitlines())
        if 0 <= fail_after <= n:
            raise RuntimeError(f"injected failure after {n} runs")
        f.write(f"{json.loads(config_json)['seed']}\n")
    time.sleep(float(os.environ.get("COAPCC_SLEEP", "0")))


def counting_runner(config_json: str) -> str:
    """The real simulator, counting, failing and sleeping as :func:`_count_run` says."""
    from coapcc.runner import native_runner

    _count_run(config_json)
    return native_runner(config_json)


def dying_runner(config_json: str) -> str:
    """The fake simulator, but the worker process dies (as if killed, or out of memory) on
    runs whose seed is a multiple of $COAPCC_DIE_SEED_MOD."""
    seed = json.loads(config_json)["seed"]
    if seed % int(os.environ["COAPCC_DIE_SEED_MOD"]) == 0:
        os._exit(9)
    return fake_runner(config_json)


def mesh_counting_runner(config_json: str) -> str:
    """The real mesh simulator (``coapcc._native.mesh_json``) with the counting, failing and
    sleeping of :func:`counting_runner` (same environment variables)."""
    from coapcc import _native

    _count_run(config_json)
    return _native.mesh_json(config_json, None)
