// Package iopolicy is the operator's allow-list for the builtin
// connectors (package functions/connectors): the directories the file
// source and sink may use, the addresses the webhook (http) source may
// listen on, and the hosts the jdbc-postgres sink may connect to. A
// tenant sets these values in a source's or sink's configs; the
// operator decides which are allowed.
//
// The worker checks a deployment's configs when it is created or
// updated (a refused value is a 400 and nothing is stored) and again
// before it starts an instance; the connector checks them a third time
// when it starts, against the policy the worker hands it in the
// environment (EnvPolicy), and opens what it uses in a way that cannot
// be redirected (OpenDir, OpenFileIn).
//
// # Rules
//
// Directories: absolute paths. An entry may contain {tenant}, replaced by
// the deployment's tenant ("/srv/io/{tenant}" gives every tenant its own
// directory); an entry without it is shared by every tenant. A path is
// allowed when it is an entry or lies below one, compared as written
// (after filepath.Clean, with no ".." element); below the entry no
// element may be a symbolic link, which the connectors enforce by
// walking the path one element at a time with O_NOFOLLOW.
//
// Listen addresses and hosts: HOST:PORTS entries. HOST is an IP address
// (IPv6 in brackets), "localhost" (127.0.0.1 and ::1), 0.0.0.0 or [::]
// (all interfaces: a tenant may then bind all interfaces) or "*" (any
// address, all interfaces included); for hosts it may also be a DNS
// name, matched case-insensitively. PORTS is "*" (any, and for listen
// addresses also 0, a port the kernel picks), a port, or a range N-M.
// A tenant's listen address ":9000" or "0.0.0.0:9000" binds all
// interfaces and needs an entry that allows all interfaces.
package iopolicy
