//go:build !race

package mledger_test

const raceEnabled = false
