package mcpregistry

// PackageRecord exposes the package mapping to the external tests.
var PackageRecord = packageRecord

// NewRingLog exposes the stderr log.
func NewRingLog(max int) interface {
	Write([]byte) (int, error)
	String() string
} {
	return &ringLog{max: max}
}
