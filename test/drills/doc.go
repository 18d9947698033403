// Package drills holds the operational drills of Graphmill as Go tests:
// they build the real binary, run it as separate processes (serve, worker)
// on real PostgreSQL clusters, break things (kill -9, several processes on
// one database under load, PostgreSQL stopped under a running server) and
// check the database afterwards. The harness is in harness_test.go.
package drills
