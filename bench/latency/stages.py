#!/usr/bin/env python3
"""stages.py BEFORE AFTER PREFIX: the per-stage latency of one measured
interval, from two /metrics scrapes of a standalone (before and after).

For each histogram below it takes the bucket counts of AFTER minus BEFORE
and prints "PREFIX_<stage>_{n,p50_us,p99_us,p999_us} value" lines. A
quantile is the upper bound of the bucket it falls in (the histograms
have fixed buckets), so read it as "at most".
"""
import re
import sys

STAGES = {
    # SEND handed to the topic -> stored (managed ledger, ledger client,
    # bookie, journal): the broker's part of a publish.
    "broker_publish": "magnetar_broker_publish_latency_seconds",
    # bookie AddEntry -> durable callback: waiting for the group in flight,
    # then the group's write + fdatasync.
    "bookie_add": "bookie_add_entry_latency_seconds",
    # one journal group: write + fdatasync.
    "journal_sync": "bookie_journal_sync_latency_seconds",
    # a checkpoint: write cache -> entry log, index, fsyncs.
    "checkpoint": "bookie_checkpoint_latency_seconds",
}
COUNTS = {"journal_group_entries": "bookie_journal_group_entries"}


def parse(path):
    h = {}
    other = {}
    for line in open(path):
        m = re.match(r'^(\w+)_bucket\{le="([^"]+)"\} (\S+)$', line)
        if m:
            h.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3))))
            continue
        m = re.match(r'^(\w+) (\S+)$', line)
        if m:
            other[m.group(1)] = float(m.group(2))
    return h, other


def quantiles(before, after, scale):
    b = dict(before)
    d = [(le, c - b.get(le, 0)) for le, c in after]
    d.sort()
    n = d[-1][1] if d else 0
    out = {"n": int(n)}
    for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999)):
        v = None
        for le, c in d:
            if n > 0 and c >= q * n:
                v = le
                break
        out[name] = "-" if v is None else ("inf" if v == float("inf") else round(v * scale))
    return out


def main():
    hb, ob = parse(sys.argv[1])
    ha, oa = parse(sys.argv[2])
    prefix = sys.argv[3]
    for stage, metric in STAGES.items():
        if metric not in ha:
            continue
        q = quantiles(hb.get(metric, []), ha[metric], 1e6)
        for k in ("n", "p50", "p99", "p999"):
            print(f"{prefix}_{stage}_{k}{'' if k == 'n' else '_us'} {q[k]}")
    for stage, metric in COUNTS.items():
        if metric not in ha:
            continue
        q = quantiles(hb.get(metric, []), ha[metric], 1)
        print(f"{prefix}_{stage}_p50 {q['p50']}")
        print(f"{prefix}_{stage}_p99 {q['p99']}")
    # GC cycles and GC pause time of the standalone during the interval;
    # journal groups written over zeros (--journal-zero-fill).
    for k, name in (("go_gc_duration_seconds_count", "gc_cycles"), ("go_gc_duration_seconds_sum", "gc_pause_ms"),
                    ("bookie_journal_zero_filled_groups_total", "zero_filled_groups")):
        if k in oa:
            v = oa[k] - ob.get(k, 0)
            print(f"{prefix}_{name} {round(v * 1000, 1) if name.endswith('ms') else int(v)}")


main()
