package report

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"
)

// fastBulkRecords returns the records of a 60 s bulk run at 86 Mb/s: about
// 10k writes of 64 KiB and a sample every 100 ms.
func fastBulkRecords() []byte {
	var b bytes.Buffer
	interval := 65536 * 8 / 86e6
	for i := 0; float64(i)*interval < 60; i++ {
		fmt.Fprintf(&b, `{"kind":"write","t":%.6f,"bytes":65536,"source_delay_ms":%.3f}`+"\n", float64(i)*interval, 8+float64(i%40))
	}
	for i := range 600 {
		fmt.Fprintf(&b, `{"kind":"sample","t":%.1f,"goodput_bps":86e6,"queue_ms":%d,"rate_bps":86000000}`+"\n", float64(i)/10, i%200)
	}
	return b.Bytes()
}

func BenchmarkReadRecords(b *testing.B) {
	data := fastBulkRecords()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := readRecords(bytes.NewReader(data), window{5, math.Inf(1)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild reports one Build of a scenario of three 60 s runs at
// 86 Mb/s with their plots.
func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	recs := bytes.Split(bytes.TrimSpace(fastBulkRecords()), []byte("\n"))
	lines := make([]string, len(recs))
	for i, r := range recs {
		lines[i] = string(r)
	}
	for _, m := range []string{"default", "lowat=165000", "replenish=15ms"} {
		r, _ := bulkRun(b, m, 10, 86e6)
		writeRun(b, dir, r.ID, mustJSON(b, r), lines)
	}
	now := time.Now()
	for b.Loop() {
		if err := build(dir, nil, now); err != nil {
			b.Fatal(err)
		}
	}
}
