package summary

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"replenish/experiments/report"
	"replenish/records"
)

// maxRecords caps the lines of a run's records.jsonl.
const maxRecords = 4_000_000

// Write writes a run's run.json and records.jsonl into dir, its directory
// in a results directory.
func Write(dir string, run report.Run, recs []records.RunLine) error {
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("summary: encoding run.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, records.RunFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	w, err := records.Create(filepath.Join(dir, records.RunRecords), maxRecords)
	if err != nil {
		return err
	}
	for _, r := range recs {
		w.Write(r)
	}
	return w.Close()
}
