package media

import (
	"fmt"
	"time"
)

// t0 is an arbitrary capture epoch for tests, away from any wraparound.
var t0 = time.Date(2026, 10, 29, 15, 57, 15, 123_000_000, time.UTC)

// checkStamp reads f's stamp and returns "" if it gives capture to the
// millisecond, or what went wrong. The reader's reference time is 40 ms
// later, as a viewer's clock would be.
func checkStamp(f *Frame, capture time.Time) string {
	v, err := ReadStamp(f.Y, f.Size.W, f.Size)
	if err != nil {
		return err.Error()
	}
	if got := StampTime(v, capture.Add(40*time.Millisecond)); got.UnixMilli() != capture.UnixMilli() {
		return fmt.Sprintf("read %v, captured %v", got, capture)
	}
	return ""
}
