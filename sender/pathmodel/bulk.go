package pathmodel

// Bulk returns the utilization a backlogged flow of the path's congestion
// control reaches on it (the same drop-tail queue, loss and steps), over the
// same measured time and relative to the same capacity as Result.Util, less
// the same settling after rate steps: what the transport itself can make of
// the path, which bounds what a stream over it can. It returns an error
// wrapping ErrConfig for an unusable configuration.
func Bulk(cfg Config) (float64, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return 0, err
	}
	cfg.Path.Cross = 0 // the transport's own capacity, alone
	s := newSim(cfg)
	s.q = eventQueue{}
	s.state = appEncoding // the application never writes a frame
	s.tcp.write(0, 1<<40)
	for {
		ev, ok := s.q.pop()
		if !ok || ev.at > cfg.Duration {
			break
		}
		s.dispatch(ev)
	}
	u, _, _, _ := s.utilization()
	return u, nil
}
