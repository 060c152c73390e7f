//go:build !race

package inbox_test

// raceDetector says the specs run under the race detector (see race_on_test.go).
const raceDetector = false
