// Package server puts a *bookie.Bookie on the network and in process.
//
// Local (local.go) is the in-process client used by standalone: it calls
// the bookie directly and has the ledger client's BookieClient method set.
// Server (server.go) serves the bkproto wire protocol over TCP; Register
// (register.go) keeps the bookie's registration and cookie in the metadata
// store. Bookie errors map to bkproto status codes with ProtoError.
package server
