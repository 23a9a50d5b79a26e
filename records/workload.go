package records

// Write is a "write" line of a bulk or request/response sender (bulk-send,
// rr-client): one write call.
type Write struct {
	Kind         string `json:"kind"` // KindWrite
	ID           uint64 `json:"id"`
	WriteStartUs int64  `json:"write_start_us"`
	WriteEndUs   int64  `json:"write_end_us"`
	LeftHostUs   int64  `json:"left_host_us,omitempty"` // 0: departure unknown
	Bytes        int    `json:"bytes"`
	DrainBps     int64  `json:"drain_bps,omitempty"` // the invitation's drain-rate estimate
	Unsent       int    `json:"unsent"`              // unsent bytes at the invitation
	Part         string `json:"part,omitempty"`      // rr: "header" or "body"
	Retransmits  int    `json:"retransmits"`         // the connection's, before the write
	// Pending marks a write that had not left the host when the sender
	// stopped; it has no WriteEndUs or LeftHostUs.
	Pending bool `json:"pending,omitempty"`
}

// Parts of a request of the request/response workload, in Write.Part.
const (
	PartHeader = "header"
	PartBody   = "body"
)

// Request is a "request" line of rr-client: one request, from before its
// header's write to its answer read.
type Request struct {
	Kind    string `json:"kind"` // KindRequest
	ID      uint64 `json:"id"`
	StartUs int64  `json:"start_us"`
	EndUs   int64  `json:"end_us"`
}

// Sink is a line of bulk-sink's records (it has no kind): the running total
// of bytes read by time Us.
type Sink struct {
	Us    int64 `json:"us"`
	Total int64 `json:"total"`
}
