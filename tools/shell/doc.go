// Package shell is `magnetar shell`: flags and output around package
// tools. The bookie directory tools (readjournal, readentrylog,
// rebuildindex, ledgerstats) read a bookie's files offline; the cluster
// tools (listbookies, listledgers, ledgermetadata, readledger,
// listunderreplicated, recover, decommission, bookiesanity, simpletest)
// work on a cluster an Opener opens: over the network from its metadata
// store, or on a stopped standalone's data directory. --json (or -o
// json) prints JSON on stdout; long scans draw a progress bar on stderr
// (-q: none). NewCommand builds the command tree.
package shell
