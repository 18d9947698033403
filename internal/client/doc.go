// Package client is the Go client of the Graphmill API, generated from the
// server's OpenAPI document by oapi-codegen (client.gen.go). The document
// is the server's own, downgraded by huma from OpenAPI 3.1 to 3.0
// (/api/openapi-3.0.json), which is what oapi-codegen reads.
//
// Regenerate with `go generate ./internal/client`: it starts the server in
// a test (cmd/graphmill TestGeneratedClientUpToDate) and writes
// openapi-3.0.json and client.gen.go here; the same test fails when either
// is stale.
package client

//go:generate env GRAPHMILL_UPDATE_CLIENT=1 go test ../../cmd/graphmill -run ^TestGeneratedClientUpToDate$ -count=1
