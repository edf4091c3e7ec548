package perf

import "errors"

var (
	// ErrInvalidConfig wraps every configuration validation failure.
	ErrInvalidConfig = errors.New("perf: invalid configuration")
	// ErrNoMessages is returned when a run ended without a single message.
	ErrNoMessages = errors.New("perf: no messages")
)
