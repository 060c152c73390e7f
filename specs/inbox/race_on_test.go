//go:build race

package inbox_test

// raceDetector says the specs run under the race detector, which multiplies the CPU every Go
// statement costs: latencies measured in this process then say little about the server's.
const raceDetector = true
