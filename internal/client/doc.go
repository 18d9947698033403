// Package client is the Go client of the Graphmill API, generated from the
// server's OpenAPI document by oapi-codegen (client.gen.go). The document
// is the server's own, downgraded by huma from OpenAPI 3.1 to 3.0
// (/api/openapi-3.0.json), which is what oapi-codegen reads.
//
// Regenerate with `go generate ./internal/client`: `graphmill openapi`
// prints the document, built without a server or database (the routes
// registered with no services), and oapi-codegen writes client.gen.go from
// it. The test cmd/graphmill TestGeneratedClientUpToDate fails when either
// file is stale.
package client

//go:generate sh -c "go run -buildvcs=false ../../cmd/graphmill openapi --openapi 3.0 > openapi-3.0.json"
//go:generate go tool -modfile=../../tools/go.mod oapi-codegen -config oapi-codegen.yaml -o client.gen.go openapi-3.0.json
