package scheduler

// Leader reports whether this process leads now (tests watch leadership
// change hands).
func (s *Scheduler) Leader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader
}
