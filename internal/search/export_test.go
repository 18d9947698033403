package search

// ConnWaits counts the queries of s's searches that wait for one of its
// connection slots.
func ConnWaits(s *Service) int { return int(s.conns.waiting.Load()) }
