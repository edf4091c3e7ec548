//go:build !race

package broker

// scaleTopics is TestScaleTopicsMemory's topic count (issue 20: 20,000).
const scaleTopics = 20000

// scaleFullInChild is false: this build runs the 20,000 topics itself.
const scaleFullInChild = false

// raceEnabled: see race_on_test.go.
const raceEnabled = false
