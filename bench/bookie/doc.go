// Package bookie is the bookie benchmark behind `magnetar bench bookie`
// (NewCommand builds that command; the binary only adds it to its tree):
// durable AddEntry throughput and latency for several entry sizes and
// numbers of outstanding adds, over the io_uring and pwrite journals, next
// to a raw-disk baseline measured in the same run on the same directory.
//
// # What is measured
//
// A bookie cell opens a fresh bookie (journal and ledger dirs under a new
// directory) and keeps k adds outstanding over four ledgers (closed loop),
// or issues them at a fixed rate with up to k outstanding (a half-peak
// cell: half the best rate the size reached), latency then counted from
// each add's scheduled time, so a stall is not hidden by the driver
// waiting for it (no coordinated omission). With Config.Batch above 1 the
// adds go in AddEntries runs of one ledger, as the bookie server hands
// over the adds of one network read.
//
// The raw baseline is a plain loop writing the same bytes (k records of
// journal header plus payload) with pwrite into a file preallocated in
// 16 MiB steps, one fdatasync per group of k; its latency is per group,
// what every record in it waits. Ratios to it (MB/s and p99) are what the
// figures mean on a shared machine: absolute rates move with the other
// tenants, the ratio much less.
//
// A half-peak cell's runs are also interleaved with the paced raw loop:
// the same schedule of units (no more outstanding), and one writer that
// takes whatever has arrived, writes it with one pwrite and covers it
// with one fdatasync, each record's latency counted from its scheduled
// time. That is group commit with nothing else on the path, under the
// paced cell's arrivals: a sync that stalls counts once per record that
// arrived during it, as in the bookie cell, where the closed-loop raw
// baseline counts it once per group of k (nothing is issued meanwhile).
//
// Every cell runs Config.Runs times, each in a fresh directory, and
// reports medians. CPU per add is the process's user+system time
// (getrusage, all threads, the driver and the kernel's io_uring workers
// included) divided by the adds; allocations per add come from
// runtime.MemStats.
package bookie
