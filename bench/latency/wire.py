#!/usr/bin/env python3
"""wire.py PCAP PORT: the broker's side of each publish, from a capture
of the loopback traffic to a broker's binary port (tcpdump -w, any of
the common link types).

It reassembles the client->broker and broker->client byte streams of
every TCP connection to PORT, splits them into Pulsar frames ([total
size u32][command size u32][BaseCommand]...) and decodes just enough of
each BaseCommand: its type (field 1), and for SEND (type 6, field 6) and
SEND_RECEIPT (type 7, field 7) the producer id (field 1) and sequence
id (field 2). A SEND is matched to the SEND_RECEIPT with the same
connection, producer and sequence id; the server-side latency is the
time from the packet that completed the SEND frame to the packet that
carried its receipt. That is the broker's whole part of a publish,
socket to socket (decode, storage, fdatasync, receipt), without the
client library's batching and callbacks.

Prints one line of percentiles, then the clusters of slow sends (over
SLOW_MS, default 2 ms; sends within 20 ms of each other form one
cluster) as "t_seconds(count,max_ms)", t from the first matched send
(whose Unix time it prints, to line the clusters up with other logs), so
periodic causes show up as a period.

Also prints the batches' spacing: the gap between consecutive SENDs of
one producer, p10/p50/p90, and the messages per SEND (field 3).
"""
import os
import struct
import sys


def varint(b, i):
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i


def fields(b):
    """The first value of every field of a protobuf message."""
    i, out = 0, {}
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        out.setdefault(num, v)
    return out


def frame_start(data):
    """Whether data plausibly begins a Pulsar frame: sizes that fit and a
    command whose type decodes. The capture starts mid-stream, so a
    stream's first packets may carry the tail of a frame."""
    if len(data) < 8:
        return False
    total, size = struct.unpack(">II", data[:8])
    if not (0 < size <= total - 4 < 64 << 20) or len(data) < 8 + size:
        return False
    try:
        kind = fields(bytes(data[8:8 + size])).get(1)
    except (ValueError, IndexError):
        return False
    return isinstance(kind, int) and 0 < kind < 200


def find_frame(buf):
    """The first offset in buf where a frame starts that is followed by
    another frame start (or by the end of buf), or None."""
    for j in range(len(buf) - 8):
        if not frame_start(buf[j:j + 8 + 4096]):
            continue
        total = struct.unpack(">I", buf[j:j + 4])[0]
        nxt = j + 4 + total
        if nxt + 8 > len(buf) or frame_start(buf[nxt:nxt + 8 + 4096]):
            return j
    return None


def packets(path):
    """(timestamp, src port, dst port, sequence number, payload) of every
    TCP/IPv4 packet that carries data."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic not in (0xA1B2C3D4, 0xA1B23C4D):
            raise SystemExit("%s: not a little-endian pcap file" % path)
        scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
        link = struct.unpack("<I", hdr[20:24])[0]
        skip = {0: 4, 1: 14, 113: 16, 276: 20}.get(link)
        if skip is None:
            raise SystemExit("%s: link type %d not handled" % (path, link))
        while True:
            ph = f.read(16)
            if len(ph) < 16:
                return
            sec, frac, incl, _ = struct.unpack("<IIII", ph)
            pkt = f.read(incl)
            ip = pkt[skip:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            sport, dport, seq = struct.unpack(">HHI", tcp[:8])
            data = tcp[(tcp[12] >> 4) * 4:]
            if data:
                yield sec + frac * scale, sport, dport, seq, data


GAP = None  # in_order's marker: bytes were lost, the stream must resync

HOLD_LIMIT = 16 << 20  # bytes held ahead of a gap before it counts as lost
HOLD_SECONDS = 1.0  # how long a gap may stay open before it counts as lost


def in_order(pkts):
    """The packets' payloads in stream order per (src, dst) port pair, as
    (timestamp, src port, dst port, bytes): a capture on loopback holds
    retransmitted and reordered segments, so duplicates and overlaps are
    trimmed and segments ahead of a gap wait until it is filled (the
    timestamp is then the filling packet's). A gap that is never filled
    (tcpdump dropped the packet) is skipped once HOLD_LIMIT bytes wait
    behind it or its oldest held segment is HOLD_SECONDS old (a
    retransmission on loopback comes within the minimum RTO, 0.2 s), and
    at the end of the capture; it is reported as bytes GAP. The held
    segments then go on in stream order, each with its own timestamp."""
    nxt, held = {}, {}  # per stream: next seq; seq -> (ts, data)
    held_bytes, held_since = {}, {}

    def deliver(k, ts, data, own):
        """Yields data at nxt[k] and whatever held segments follow it,
        stamped ts (the packet that filled the gap: only then could the
        receiver read them) or, if own, each with its own timestamp (the
        gap was tcpdump's, not the receiver's)."""
        while True:
            yield ts, k[0], k[1], data
            nxt[k] = (nxt[k] + len(data)) & 0xFFFFFFFF
            h = held[k]
            data = None
            # The segment starting at nxt, else any that overlaps it.
            for s in ([nxt[k]] if nxt[k] in h else list(h)):
                d = (nxt[k] - s) & 0xFFFFFFFF
                if d < 1 << 31:  # s at or before nxt: deliver what is new
                    sts, seg = h.pop(s)
                    held_bytes[k] -= len(seg)
                    if d < len(seg):
                        data = seg[d:]
                        if own:
                            ts = sts
                        break
            if data is None:
                since(k)
                return

    def skip_gap(k):
        """Declares the gap before the nearest held segment lost."""
        h = held[k]
        seq = min(h, key=lambda s: (s - nxt[k]) & 0xFFFFFFFF)
        sts, data = h.pop(seq)
        held_bytes[k] -= len(data)
        nxt[k] = seq
        yield sts, k[0], k[1], GAP
        yield from deliver(k, sts, data, True)

    def since(k):
        """Sets held_since[k] to the oldest held segment's timestamp."""
        if held[k]:
            held_since[k] = min(t for t, _ in held[k].values())
        else:
            held_since.pop(k, None)

    for ts, sport, dport, seq, data in pkts:
        k = (sport, dport)
        if k not in nxt:
            nxt[k], held[k], held_bytes[k] = seq, {}, 0
        ahead = (seq - nxt[k]) & 0xFFFFFFFF
        if ahead >= 1 << 31:  # starts before what was already delivered
            behind = (1 << 32) - ahead
            if behind >= len(data):
                continue
            data, seq = data[behind:], nxt[k]
        elif ahead:
            if seq not in held[k] or len(held[k][seq][1]) < len(data):
                if seq in held[k]:
                    held_bytes[k] -= len(held[k][seq][1])
                held[k][seq] = (ts, data)
                held_bytes[k] += len(data)
                held_since.setdefault(k, ts)
            while held[k] and (held_bytes[k] > HOLD_LIMIT or ts - held_since[k] > HOLD_SECONDS):
                yield from skip_gap(k)
            continue
        yield from deliver(k, ts, data, False)
    for k in list(held):  # the end of the capture: every open gap is lost
        while held[k]:
            yield from skip_gap(k)


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    slow_ms = float(os.environ.get("SLOW_MS", "2"))
    streams = {}  # (client port, to broker) -> pending bytes
    synced = set()  # streams whose buffer starts at a frame boundary
    resyncs = gaps_lost = 0
    sent = {}  # (client port, producer, sequence) -> time
    last_send = {}  # (client port, producer) -> time
    gaps, per_send, lats = [], [], []
    for ts, sport, dport, data in in_order(packets(path)):
        to_broker = dport == port
        if not to_broker and sport != port:
            continue
        client = sport if to_broker else dport
        key = (client, to_broker)
        buf = streams.setdefault(key, bytearray())
        if data is GAP:
            gaps_lost += 1
            buf.clear()
            synced.discard(key)
            continue
        buf += data
        if key not in synced:
            j = find_frame(buf)
            if j is None:
                del buf[:max(0, len(buf) - (1 << 20))]  # keep a tail to search on
                continue
            del buf[:j]
            synced.add(key)
        while len(buf) >= 8:
            total, size = struct.unpack(">II", buf[:8])
            if len(buf) < 4 + total:
                break
            try:
                cmd = fields(bytes(buf[8:8 + size]))
            except (ValueError, IndexError):
                # Out of step (a frame start mistaken, or a lost packet):
                # search onwards for the next frame start.
                resyncs += 1
                synced.discard(key)
                del buf[:1]
                break
            del buf[:4 + total]
            kind = cmd.get(1)
            if to_broker and kind == 6 and 6 in cmd:
                s = fields(cmd[6])
                sent[(client, s.get(1, 0), s.get(2, 0))] = ts
                per_send.append(s.get(3, 1))
                k = (client, s.get(1, 0))
                if k in last_send:
                    gaps.append(ts - last_send[k])
                last_send[k] = ts
            elif not to_broker and kind == 7 and 7 in cmd:
                r = fields(cmd[7])
                at = sent.pop((client, r.get(1, 0), r.get(2, 0)), None)
                if at is not None:
                    lats.append((ts - at, at))
    if not lats:
        raise SystemExit("no SEND matched to a SEND_RECEIPT")
    ls = sorted(l for l, _ in lats)

    def q(v, p):
        return v[min(len(v) - 1, int(p * len(v)))]

    if gaps_lost:
        print("%d gaps in the capture (packets tcpdump dropped): the frames "
              "around them are not counted" % gaps_lost)
    if resyncs:
        print("stream lost step %d times (resynchronised at a frame start)" % resyncs)
    print("%d sends matched (%d unanswered); server-side p50/p90/p99/p999/max "
          "%.0f/%.0f/%.0f/%.0f/%.0f us" % (
              len(ls), len(sent), q(ls, .5) * 1e6, q(ls, .9) * 1e6,
              q(ls, .99) * 1e6, q(ls, .999) * 1e6, ls[-1] * 1e6))
    if gaps:
        g = sorted(gaps)
        print("SEND spacing per producer p10/p50/p90 %.0f/%.0f/%.0f us; "
              "messages per SEND mean %.1f" % (
                  q(g, .1) * 1e6, q(g, .5) * 1e6, q(g, .9) * 1e6,
                  sum(per_send) / len(per_send)))
    t0 = min(at for _, at in lats)
    clusters = []
    for at, l in sorted((at - t0, l) for l, at in lats if l * 1e3 > slow_ms):
        if clusters and at - clusters[-1][1] < 0.02:
            c = clusters[-1]
            c[1], c[2], c[3] = at, max(c[2], l), c[3] + 1
        else:
            clusters.append([at, at, l, 1])
    print("slow (> %g ms; t from the first matched send, %.6f Unix): %d sends in %d clusters: %s" % (
        slow_ms, t0, sum(c[3] for c in clusters), len(clusters),
        " ".join("%.3f(%d,%.1f)" % (c[0], c[3], c[2] * 1e3) for c in clusters)))


if __name__ == "__main__":
    main()
