//go:build race

package broker

// scaleTopics is TestScaleTopicsMemory's in-process topic count under
// the race detector, which makes each topic ~10x slower; the 20,000
// topics run in a build without it (scaleFullInChild).
const scaleTopics = 500

// scaleFullInChild: TestScaleTopicsMemory also runs its 20,000 topics in
// this package's tests built without the race detector.
const scaleFullInChild = true

// raceEnabled: tests at client-controlled sizes of a million run at
// 64Ki in this build and in full in a build without the detector
// (testenv.RunWithoutRace).
const raceEnabled = true
