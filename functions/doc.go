// Package functions is Magnetar's function worker: Pulsar Functions and
// Pulsar IO (sources and sinks) run next to the broker.
//
// # Model
//
// A deployment is a function, a source or a sink (Kind), configured with
// Pulsar's FunctionConfig, SourceConfig or SinkConfig JSON and turned into
// a Spec, the runtime's view. Each of its Parallelism instances is a child
// process supervised by exactly one worker: an uploaded Go executable
// built against package functions/sdk, or, for builtin://NAME packages,
// the worker's BuiltinCommand (the magnetar binary's hidden
// functions-instance subcommand), or the program of a connector of the
// operator's connectors directory (connectors_dir.go), stored as a
// package on create. Instances consume and produce through
// the Pulsar protocol; the worker never touches messages except for
// trigger.
//
// # Metadata (see store.go for the exact paths)
//
//   - /functions/meta/{kind}/{tenant}/{ns}/{name}: the Record (config as
//     given, spec, package id, version, stopped instances, restart counts).
//     Writes are compare-and-set; every update bumps Version and instances
//     of an older version are restarted.
//   - /functions/packages/{sha256}: uploaded packages, content-addressed,
//     stored in 512 KiB chunks before their meta node (a meta node means a
//     complete package); the digest is checked on every read.
//   - /functions/state/{tenant}/{ns}/{name}/{hex(key)}: State (Pulsar's
//     FunctionState); counters are updated with compare-and-set. State
//     lives in the metadata store, so it is as durable as the store (bbolt
//     with fsync in standalone, ZooKeeper in clusters).
//   - /functions/workers/{id}: ephemeral membership of live workers.
//   - /functions/assignments/{kind}/{fqfn}/{i}: the worker that last
//     started instance i (informational).
//
// # Assignment
//
// Every worker reads the membership list and the records (on a timer and
// on membership changes) and runs the instances whose rendezvous hash
// (FNV-64a of worker id and instance key) is highest for itself. Workers
// with the same view agree without a leader; when a worker's ephemeral
// node goes away (close, crash, session expiry) only its instances move.
// During a membership change two workers may briefly both run an
// instance; Shared and Failover subscriptions keep that safe.
//
// # Instance protocol
//
// The child gets its Spec as JSON in MAGNETAR_FUNCTION_SPEC, its id in
// MAGNETAR_INSTANCE_ID, the broker in MAGNETAR_SERVICE_URL and the
// worker's REST base in MAGNETAR_WORKER_URL (state goes through it). It
// writes cumulative InstanceStats as one JSON line at a time to file
// descriptor 3; the worker adds the totals of earlier processes so stats
// survive restarts of the instance (not of the worker). A process that
// exits is restarted after a backoff doubling from 200ms to 30s (reset
// after 30s of uptime). Stopping sends SIGTERM, then SIGKILL after 10s.
// Resources: ram becomes GOMEMLIMIT, cpu GOMAXPROCS, disk RLIMIT_FSIZE.
// File descriptor 4 (ConfFD) is a pipe on which the instance reads, once,
// its configuration with its credentials: the submitter's token when
// authentication is on (instanceauth.go; Record.Auth holds it, never
// the API's answers). An uploaded executable also gets Pulsar's Go
// runtime contract (pulsargo.go: -instance-conf-path /dev/fd/4, a gRPC
// control port and a metrics port the worker polls), so functions built
// with Pulsar's Go SDK run.
// A root worker runs instances as Options.InstanceUser with an
// environment built from nothing (runas.go). Package URLs are checked
// against the operator's directories and patterns before anything is
// read or contacted (packages.go). The paths, listen addresses and hosts
// of builtin connectors' configs are checked against the operator's
// allow-list (package functions/iopolicy) on create and update, before
// every start, and by the connector itself (iocheck.go).
//
// # Concurrency
//
// Worker.mu guards the instance map and membership view; instance.mu
// guards one instance's counters. Each instance has one supervising
// goroutine; reconcile runs on one goroutine.
package functions
