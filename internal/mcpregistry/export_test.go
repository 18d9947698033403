package mcpregistry

// PackageRecord exposes the package mapping to the external tests.
var PackageRecord = packageRecord
