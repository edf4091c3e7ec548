//go:build race

package broker

// scaleTopics is TestScaleTopicsMemory's topic count: the race detector
// makes each topic ~10x slower.
const scaleTopics = 2000
