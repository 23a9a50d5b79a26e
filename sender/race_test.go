//go:build race

package sender_test

// raceEnabled says the race detector is on: it slows the path model about
// tenfold, and a run of the model has no concurrency for it to check.
const raceEnabled = true
