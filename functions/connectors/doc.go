// Package connectors holds Magnetar's builtin Pulsar IO connectors, run by
// the function worker as `magnetar functions-instance` with the connector
// name in MAGNETAR_BUILTIN (archive "builtin://NAME"). Each is an ordinary
// SDK program (package functions/sdk).
//
// Before a connector opens, creates, binds or connects anything it checks
// the paths, listen address or hosts of its configs against the
// operator's policy (package functions/iopolicy, handed over by the
// worker in MAGNETAR_IO_POLICY; absent, nothing is allowed). The file
// connectors open their directories below an allowed root without
// following symbolic links and every file by name in the opened
// directory (openat with O_NOFOLLOW, renameat).
//
// Sources:
//   - file: reads the files of configs.inputDirectory (names matching
//     configs.fileFilter, a regexp, default all), one message per line, then
//     moves each file to configs.processedDirectory (default
//     INPUT/.processed). Exactly once with broker deduplication: the source
//     produces under a fixed producer name and stores, before sending a
//     file, the sequence id its first line gets (state key
//     "file-seq/NAME"); a file re-read after a crash is re-sent with the
//     same sequence ids and the broker drops what it already has.
//   - http: a webhook. configs.listenAddress (default 127.0.0.1:0, the
//     chosen address is written to the instance log and to state key
//     "http-address"), configs.path (default /); every POST body becomes a
//     message and the request is answered 200 after the message is
//     persisted, 503 otherwise (the reason is in the instance log). A
//     path ending in "/" takes its subtree. The webhook is an httpapi
//     server behind an anonymous guard: the timeouts and body pace of
//     every Magnetar HTTP server, bodies of any media type up to 5 MiB,
//     and connection caps that never trust a connection (webhookLimits).
//
// Sinks:
//   - file: appends every message as a line to configs.outputFile
//     (fsync per batch) before acknowledging.
//   - log: writes every message to the instance's log (stdout).
//   - jdbc-postgres: configs.url (a PostgreSQL connection string),
//     configs.table, configs.key (column of the key, default "key"), and
//     optionally configs.batchSize (default 200) and configs.lingerMs
//     (default 100). Every message is a JSON object whose fields are
//     columns; the message key (or the object's key field) is the primary
//     key. A batch is one transaction of INSERT ... ON CONFLICT (key) DO
//     UPDATE; the messages are acknowledged only after it commits, so a
//     PostgreSQL outage redelivers and the upsert keeps the rows exact.
package connectors
