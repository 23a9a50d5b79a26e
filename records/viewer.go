package records

// ViewerFrame is a line of cmd/viewer's records: a frame received
// (KindReceived) or a frame a page displayed (KindDisplayed). Capture is
// on the sender's clock, the other times on the viewer's.
type ViewerFrame struct {
	Kind          string   `json:"kind"` // KindReceived, KindDisplayed or KindLost
	Stream        uint32   `json:"stream"`
	Frame         uint32   `json:"frame"` // the viewer's frame id within the stream
	Name          string   `json:"name,omitempty"`
	RTPTimestamp  uint32   `json:"rtp_ts,omitempty"`
	CaptureUs     int64    `json:"capture_us,omitempty"`
	ReceivedUs    int64    `json:"received_us,omitempty"`
	Bytes         int      `json:"bytes,omitempty"`
	Key           bool     `json:"key,omitempty"`
	Width         int      `json:"width,omitempty"`
	Height        int      `json:"height,omitempty"`
	ClockOffsetUs int64    `json:"clock_offset_us,omitempty"` // viewer clock minus sender clock
	Undecodable   bool     `json:"undecodable,omitempty"`     // depends on a lost frame: not sent to pages
	LostFrames    int      `json:"lost_frames,omitempty"`     // KindLost: frames that never arrived whole
	Reason        string   `json:"reason,omitempty"`          // KindLost: "reset" or "gap"
	Client        uint32   `json:"client,omitempty"`          // the page
	Native        bool     `json:"native,omitempty"`          // displayed by the page's native player (WHEP); Frame is then 0
	DisplayedUs   int64    `json:"displayed_us,omitempty"`
	G2GMs         *float64 `json:"g2g_ms,omitempty"` // glass to glass from the pixels; nil on a misread
	Misread       bool     `json:"misread,omitempty"`
	DecodeMs      *float64 `json:"decode_ms,omitempty"`
	DrawMs        *float64 `json:"draw_ms,omitempty"`
	// TID is the frame's temporal layer (KindReceived), or as the page
	// reported it (KindDisplayed); absent for a stream without layers.
	TID *uint8 `json:"tid,omitempty"`
}
