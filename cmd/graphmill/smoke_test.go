package main

import "testing"

func TestSmoke(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.defaultProject()
	s.must(401, "GET", "/api/projects", "", nil)
}
