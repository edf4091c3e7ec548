#!/usr/bin/env python3
"""Medians of the figures.kv files run.sh writes, as one markdown table."""
import statistics
import sys


def load(paths):
    runs = []
    for p in paths:
        d = {}
        for line in open(p):
            parts = line.split()
            if len(parts) == 2:
                try:
                    d[parts[0]] = float(parts[1])
                except ValueError:
                    pass
        runs.append(d)
    return runs


def med(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def best(runs, *keys):
    """Median over runs of the best of keys within each run."""
    vals = [max(r[k] for k in keys if k in r) for r in runs if any(k in r for k in keys)]
    return statistics.median(vals) if vals else None


def med_ratio(runs, num, den, scale):
    """Median over runs of scale*num/den, for runs that have both."""
    vals = [scale * r[num] / r[den] for r in runs if num in r and r.get(den)]
    return statistics.median(vals) if vals else None


def us(v):
    return "–" if v is None else f"{v:.2f} µs"


def n(v):
    return "–" if v is None else f"{v:,.0f}"


def ratio(a, b):
    return "–" if a is None or not b else f"{a / b:.2f}×"


def main():
    runs = load(sys.argv[1:])
    m = lambda k: med(runs, k)
    print(f"runs: {len(runs)}; load average before each run: "
          + ", ".join(f"{r.get('load_before', 0):.1f}" for r in runs)
          + "; after: " + ", ".join(f"{r.get('load_after', 0):.1f}" for r in runs))
    print()
    print("| 200 B, durable | Magnetar | target / floor | JetStream default | Magnetar ÷ JS default | JetStream sync_interval: always | Magnetar ÷ JS always |")
    print("|---|---|---|---|---|---|---|")
    prod = m("mag_produce")
    jsd_pub = best(runs, "nats_default_pub_async", "nats_default_pub_fast")
    jsa_pub = best(runs, "nats_always_pub_async", "nats_always_pub_atomic")
    print(f"| produce msgs/s (max) | {n(prod)} | 1,000,000 / 250,000 | {n(jsd_pub)} (best of async {n(m('nats_default_pub_async'))}, fast batch {n(m('nats_default_pub_fast'))}) | {ratio(prod, jsd_pub)} | {n(jsa_pub)} (async {n(m('nats_always_pub_async'))}, atomic batch {n(m('nats_always_pub_atomic'))}) | {ratio(prod, jsa_pub)} |")
    tail = m("mag_consume_tail")
    print(f"| consume msgs/s, tailing (producer at max: {n(m('mag_tail_produce'))}) | {n(tail)} | 2,000,000 / 550,000 | – | – | – | – |")
    cu = m("mag_consume_catchup")
    jsd_c = m("nats_default_consume_durable")
    jsd_o = m("nats_default_consume_ordered")
    print(f"| consume msgs/s, catch-up (backlog {n(m('mag_backlog'))}) | {n(cu)} | 2,000,000 / 550,000 | durable {n(jsd_c)}, ordered {n(jsd_o)} | {ratio(cu, jsd_c)} durable, {ratio(cu, jsd_o)} ordered | – | – |")
    print(f"| publish latency p50 / p99 at {n(m('mag_fixed_rate'))} msgs/s (achieved {n(m('mag_fixed_rate_achieved'))}) | {n(m('mag_fixed_p50_us'))} / {n(m('mag_fixed_p99_us'))} µs | | async pub at max rate: {n(m('nats_default_pub_async_p50_us'))} / {n(m('nats_default_pub_async_p99_us'))} µs | | async pub: {n(m('nats_always_pub_async_p50_us'))} / {n(m('nats_always_pub_async_p99_us'))} µs | |")
    print(f"| publish latency p50 / p99 at max rate | {n(m('mag_produce_p50_us'))} / {n(m('mag_produce_p99_us'))} µs | | | | | |")
    print(f"| tailing end-to-end latency p50 / p99 (ms clock) | {n(m('mag_tail_e2e_p50_us'))} / {n(m('mag_tail_e2e_p99_us'))} µs | | | | | |")
    raw_prod = m("mag_raw_produce")
    if raw_prod is not None:
        print(f"| produce msgs/s (max), raw protocol client (`perf --raw`) | {n(raw_prod)} | 1,000,000 / 250,000 | – | {ratio(raw_prod, jsd_pub)} | – | {ratio(raw_prod, jsa_pub)} |")
        print(f"| publish latency p50 / p99 at max rate, raw client | {n(m('mag_raw_produce_p50_us'))} / {n(m('mag_raw_produce_p99_us'))} µs | | | | | |")
        raw_cu = m("mag_raw_consume_catchup")
        print(f"| consume msgs/s, catch-up, raw client (backlog {n(m('mag_raw_backlog'))}) | {n(raw_cu)} | 2,000,000 / 550,000 | – | {ratio(raw_cu, jsd_c)} durable, {ratio(raw_cu, jsd_o)} ordered | – | – |")
    cpu_rows = [("produce (a), pulsar-client-go", "mag_produce", "mag_produce_msgs"),
                ("catch-up (c), pulsar-client-go", "mag_consume_catchup", "mag_backlog"),
                ("produce (e), raw client", "mag_raw_produce", "mag_raw_msgs"),
                ("catch-up (f), raw client", "mag_raw_consume_catchup", "mag_raw_backlog")]
    if any(f"{k}_client_cpu_s" in r for r in runs for _, k, _ in cpu_rows):
        print()
        print("| CPU per message (medians of per-run µs/msg) | client | server |")
        print("|---|---|---|")
        for label, key, count in cpu_rows:
            per = lambda side: med_ratio(runs, f"{key}_{side}_cpu_s", count, 1e6)
            print(f"| {label} | {us(per('client'))} | {us(per('server'))} |")
    print()
    print("All medians:")
    for k in sorted({k for r in runs for k in r}):
        vals = [r[k] for r in runs if k in r]
        print(f"  {k:36s} median {n(statistics.median(vals)):>14s}   runs: {', '.join(n(v) for v in vals)}")


if __name__ == "__main__":
    main()
