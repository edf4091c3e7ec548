//go:build !race

package broker

// scaleTopics is TestScaleTopicsMemory's topic count (issue 20: 20,000).
const scaleTopics = 20000
