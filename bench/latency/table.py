#!/usr/bin/env python3
"""table.py KV...: medians over runs of bench/latency/run.sh's key/value
files, as a Markdown table (latencies in ms)."""
import statistics
import sys

runs = []
for path in sys.argv[1:]:
    kv = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 2:
            kv[parts[0]] = parts[1]
    runs.append(kv)


def vals(k):
    out = []
    for kv in runs:
        try:
            out.append(float(kv[k]))
        except (KeyError, ValueError):
            pass
    return out


def med(k):
    v = vals(k)
    return statistics.median(v) if v else None


def ms(k):
    v = med(k)
    return "–" if v is None or v < 0 else f"{v / 1000:.2f}"


def num(k, fmt="{:,.0f}"):
    v = med(k)
    return "–" if v is None else fmt.format(v)


print(f"runs: {len(runs)}; load average before each run: "
      + ", ".join(kv.get("load_before", "?") for kv in runs)
      + "; after: " + ", ".join(kv.get("load_after", "?") for kv in runs))
print()
print("| medians of the runs | 10k msgs/s | half peak | peak |")
print("|---|---|---|---|")
rows = [
    ("rate asked / achieved, msgs/s", lambda s: "–" if s == "peak" else f"{num(s + '_rate')} / {num(s + '_achieved')}"),
    ("publish p50 / p99 / p999, ms", lambda s: f"{ms(s + '_pub_p50_us')} / {ms(s + '_pub_p99_us')} / {ms(s + '_pub_p999_us')}"),
    ("publish p99, worst 10 s window, ms", lambda s: ms(s + "_pub_worst_window_p99_us")),
    ("publish p999, worst 10 s window, ms", lambda s: ms(s + "_pub_worst_window_p999_us")),
    ("end-to-end p50 / p99 / p999, ms", lambda s: "–" if s == "peak" else f"{ms(s + '_e2e_p50_us')} / {ms(s + '_e2e_p99_us')} / {ms(s + '_e2e_p999_us')}"),
    ("end-to-end p99, worst 10 s window, ms", lambda s: ms(s + "_e2e_worst_window_p99_us")),
    ("end-to-end p99 ÷ publish p99", lambda s: "–" if med(s + "_e2e_p99_us") is None or not med(s + "_pub_p99_us") else f"{med(s + '_e2e_p99_us') / med(s + '_pub_p99_us'):.2f}"),
    ("stage: broker publish p50 / p99 (≤ bucket), ms", lambda s: f"{ms(s + '_broker_publish_p50_us')} / {ms(s + '_broker_publish_p99_us')}"),
    ("stage: bookie add p50 / p99 (≤ bucket), ms", lambda s: f"{ms(s + '_bookie_add_p50_us')} / {ms(s + '_bookie_add_p99_us')}"),
    ("stage: journal group sync p50 / p99 (≤ bucket), ms", lambda s: f"{ms(s + '_journal_sync_p50_us')} / {ms(s + '_journal_sync_p99_us')}"),
    ("journal groups, entries per group p50 / p99 (≤)", lambda s: f"{num(s + '_journal_sync_n')}, {num(s + '_journal_group_entries_p50')} / {num(s + '_journal_group_entries_p99')}"),
    ("journal groups written over zeros (--journal-zero-fill)", lambda s: num(s + "_zero_filled_groups")),
    ("standalone GC cycles / pause ms", lambda s: f"{num(s + '_gc_cycles')} / {num(s + '_gc_pause_ms', '{:.1f}')}"),
]
print("| peak rate, msgs/s | – | – | " + num("peak_rate") + " |")
if med("floor_p99_us") is not None:
    print(f"| disk floor (bench/fsync -floor, groups paced as the 10k producer's) p50 / p99 / worst-window p99, ms | "
          f"{ms('floor_p50_us')} / {ms('floor_p99_us')} / {ms('floor_worst_window_p99_us')} | – | – |")
for name, f in rows:
    print(f"| {name} | " + " | ".join(f(s) for s in ("low", "half", "peak")) + " |")
nats = sorted({k[:-len("_achieved")] for kv in runs for k in kv if k.startswith("nats_") and k.endswith("_achieved")},
              key=lambda k: (k.split("_")[1], int(k.rsplit("_r", 1)[1])))
if nats:
    print()
    print("NATS JetStream peer, same rates, same runs (`nats bench js pub async`, ~1 ms batches; default = fsync every 2 min, always = fsync per write):")
    print()
    print("| peer | asked msgs/s | achieved | batch | publish p50 / p99 / p999 ms |")
    print("|---|---|---|---|---|")
    for kv_key in nats:
        print(f"| {kv_key.split('_')[1]} | {num(kv_key + '_rate')} | {num(kv_key + '_achieved')} | {num(kv_key + '_batch')} | {ms(kv_key + '_p50_us')} / {ms(kv_key + '_p99_us')} / {ms(kv_key + '_p999_us')} |")
