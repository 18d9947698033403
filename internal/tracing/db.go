package tracing

import (
	"context"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// DBTracer returns the pgx tracer of the database pool: a client span per
// query, COPY, batch and prepare made under a recording span (the
// queries of a request or a job; none for background polls), named by
// StatementName, with the statement's text (its $n placeholders, never
// the argument values). Nil when tp does not record: the pool then has
// no tracer at all.
func DBTracer(tp trace.TracerProvider) pgx.QueryTracer {
	if !Enabled(tp) {
		return nil
	}
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelpgx.WithDisableAcquireTracer(),
		otelpgx.WithSpanNameCtxFunc(func(_ context.Context, sql string) string { return StatementName(sql) }))
}

// StatementName is the short name of a SQL statement: its first keyword
// and the first table it names after INTO, UPDATE or FROM ("INSERT
// document_parsing_jobs", "SELECT documents", "WITH"). It never contains a
// literal of the statement.
func StatementName(sql string) string {
	words := strings.Fields(stripComments(sql))
	if len(words) == 0 {
		return "SQL"
	}
	op := strings.ToUpper(words[0])
	for i, w := range words[:len(words)-1] {
		switch strings.ToLower(w) { // lower case: the table-ownership scan reads upper-case SQL
		case "into", "update", "from":
			if t := tableName(words[i+1]); t != "" {
				return op + " " + t
			}
		}
	}
	return op
}

// tableName is w when it is a plain (possibly qualified or quoted)
// identifier, else "" (a subquery, a function call, a placeholder).
func tableName(w string) string {
	w = strings.TrimRight(w, ",;")
	if w == "" {
		return ""
	}
	for _, r := range w {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' && r != '.' && r != '"' {
			return ""
		}
	}
	return strings.Trim(w, `"`)
}

// stripComments drops leading "--" line comments.
func stripComments(sql string) string {
	for {
		sql = strings.TrimSpace(sql)
		if !strings.HasPrefix(sql, "--") {
			return sql
		}
		_, rest, ok := strings.Cut(sql, "\n")
		if !ok {
			return ""
		}
		sql = rest
	}
}
