//go:build !race

package sender_test

const raceEnabled = false
