package main

import (
	"os"
	"runtime/trace"
)

// startTrace starts a Go execution trace of the whole run into path
// (--trace; `go tool trace`, or `go tool trace -pprof=sched` for where
// goroutines waited to run) and returns the function that stops it. An
// empty path traces nothing.
func startTrace(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}
