package mcpregistry

import (
	"context"

	"github.com/google/uuid"
)

// PackageRecord exposes the package mapping to the external tests.
var PackageRecord = packageRecord

// NewRingLog exposes the stderr log.
func NewRingLog(max int) interface {
	Write([]byte) (int, error)
	String() string
} {
	return &ringLog{max: max}
}

// PretendHost makes the service act as if it ran with effective uid euid,
// allowed to switch users or not.
func PretendHost(c *Config, euid int, setID bool) {
	c.host = &host{euid: euid, setID: setID}
}

// BeforeFirstSettingWrite runs f in every first write of a tool setting,
// after it found no row and before it writes one.
func BeforeFirstSettingWrite(c *Config, f func(level string)) {
	c.beforeFirstWrite = f
}

// CreateRecord stores a server as one made before the stdio policy
// changed: without the policy's check.
func (s *Service) CreateRecord(ctx context.Context, project uuid.UUID, in ServerInput) (Server, error) {
	return s.createServer(ctx, project, in, nil)
}

// HeadersOf returns a server's stored header values (the exported field
// shows them masked).
func HeadersOf(s Server) map[string]string { return s.headers }
