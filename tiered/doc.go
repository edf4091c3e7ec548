// Package tiered is the broker's tiered storage, a feature behind the
// core's extension points (broker/extension.go): it hands every
// persistent topic's managed ledger its offload policy — the broker's
// defaults (brokerconf.Config.Offload) under the namespace's and the topic's
// offload policies — when the ledger opens (broker.LedgerHook) and each
// time the topic's policy is applied again (broker.PolicyObserver), and
// it serves the admin API's offload trigger and status (the admin
// package's Offloads role). The managed ledger (package mledger) does the
// offloading itself, through the offloaders of package offload.
//
// # Usage
//
//	t, err := tiered.Enable(b, tiered.Options{Offloader: off, Metrics: m}) // before b.Start
//	deps.Offloads = t                                                      // admin.Deps
//
// # Offloaders
//
// One offload.Offloader per distinct connection setting (driver, bucket,
// endpoint, directory, ...) is made on first use and kept for the
// broker's life; Options.Offloader is the one of the broker's own
// settings, shared with the managed-ledger factory that reads offloaded
// ledgers. A policy naming a location outside the operator's allow-list
// (policy.OffloadDefaults.Allowed) is refused where it is applied too,
// not only where the admin API writes it: the topic then offloads
// nothing and the refusal is logged.
package tiered
