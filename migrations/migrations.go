// Package migrations embeds Graphmill's goose SQL migrations.
package migrations

import "embed"

// FS holds the SQL files, applied in name order.
//
//go:embed *.sql
var FS embed.FS
