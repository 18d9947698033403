//go:build !race

package document

// raceEnabled lets expensive tests skip under the race detector.
const raceEnabled = false
