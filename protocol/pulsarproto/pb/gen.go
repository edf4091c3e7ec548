// Package pb holds the generated Go types for Magnetar's subset of the Pulsar
// binary protocol (pulsar.proto in this directory). Field numbers, types and
// enum values match Apache Pulsar's wire format.
//
// Regenerate after editing pulsar.proto (needs protoc and protoc-gen-go
// v1.36.12 on PATH):
//
//	go generate ./protocol/pulsarproto/pb
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative pulsar.proto
