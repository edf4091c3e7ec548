//go:build race

package index

// raceEnabled scales down tests whose cost under the race detector grows
// with the number of distinct atomically accessed words.
const raceEnabled = true
