package migrations

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tableOwners lists, per package (a directory under internal/), the
// tables it alone writes; docs/decisions.md ("Table owners") says the
// same. Another package reads or changes them through the owner's
// service. Foreign-key cascades are not writes.
func tableOwners() map[string]string {
	byPackage := map[string][]string{
		"tenancy":         {"orgs", "org_members", "projects", "project_members", "users", "superadmins", "api_tokens", "project_invitations"},
		"jobqueue":        {"jobqueue_settings"},
		"events":          {"events"},
		"scheduler":       {"scheduler_tasks"},
		"document":        {"documents", "document_chunks", "document_parsing_jobs", "chunk_embedding_jobs"},
		"extraction":      {"object_extraction_jobs", "extraction_job_logs", "extraction_llm_calls"},
		"embedding":       {"graph_embedding_jobs", "graph_object_embeddings"},
		"embeddingpolicy": {"embedding_policies"},
		"graph":           {"graph_objects", "graph_relationships", "graph_object_provenance", "graph_relationship_provenance", "graph_call_effects"},
		"templatepack":    {"template_packs", "project_template_packs", "template_pack_versions"},
		"provider":        {"provider_models", "org_provider_credentials", "org_provider_models", "project_provider_policies", "provider_usage"},
		"task":            {"tasks"},
		"notification":    {"notifications", "notification_preferences", "notification_digests"},
		"activity":        {"user_activity"},
		"mcpregistry":     {"mcp_servers", "mcp_server_tools", "mcp_org_tool_settings", "mcp_project_tool_settings"},
		"email":           {"email_jobs"},
		"audit":           {"audit_events"},
		"integration":     {"integrations", "integration_sync_jobs", "integration_sync_logs", "integration_skipped_items"},
		"chat":            {"chat_sessions", "chat_messages"},
		"discovery":       {"discovery_jobs", "discovery_llm_calls"},
		"agent":           {"agents", "agent_runs", "agent_run_steps", "agent_run_questions"},
		"console":         {"console_revoked_sessions"},
	}
	owners := map[string]string{}
	for pkg, tables := range byPackage {
		for _, table := range tables {
			owners[table] = pkg
		}
	}
	return owners
}

// dynamicWriters are the packages whose SQL takes its table's name at run
// time, with the tables it names (each one of the package's own). The job
// engine is the exception: it writes the shared column block (status,
// attempts, lease) of every queue's job table, for the queue's owner.
func dynamicWriters() map[string][]string {
	return map[string][]string{
		"jobqueue":    nil, // the job tables of the queues registered below
		"graph":       {"graph_object_provenance", "graph_relationship_provenance"},
		"mcpregistry": {"mcp_org_tool_settings", "mcp_project_tool_settings"},
	}
}

// TestEachTableHasOneWriter parses the production Go sources (internal/
// and cmd/, test files and test helper packages left out) for SQL that
// writes a table (INSERT INTO, UPDATE, DELETE FROM, COPY, TRUNCATE, MERGE
// INTO, pgx CopyFrom) and fails on any table written by a package other
// than its owner in tableOwners. It also holds each queue to its owner:
// the package that registers a queue (jobqueue.QueueConfig) owns its job
// table and declares its name, and no other package names that queue (the
// wiring in cmd/graphmill excepted), so that only the owner enqueues,
// cancels or retries its jobs.
func TestEachTableHasOneWriter(t *testing.T) {
	t.Parallel()
	owners := tableOwners()
	dynamic := dynamicWriters()

	var migrated []string
	files, err := fs.Glob(FS, "*.sql")
	require.NoError(t, err)
	create := regexp.MustCompile(`(?i)\bCREATE TABLE (?:IF NOT EXISTS )?([a-z_][a-z0-9_]*)`)
	for _, f := range files {
		b, err := fs.ReadFile(FS, f)
		require.NoError(t, err)
		for _, m := range create.FindAllStringSubmatch(string(b), -1) {
			migrated = append(migrated, m[1])
		}
	}
	for _, table := range migrated {
		require.Contains(t, owners, table, "table %s has no owner: add it to tableOwners and to docs/decisions.md", table)
	}
	for table := range owners {
		require.Contains(t, migrated, table, "tableOwners names %s, which no migration creates", table)
	}

	src := scanSources(t, "..")
	var problems []string
	written := map[string]bool{}
	for _, w := range src.writes {
		if w.table == "" {
			if _, ok := dynamic[w.pkg]; !ok {
				problems = append(problems, w.pos+": "+w.pkg+" writes a table named at run time; name it in the SQL, or list it in dynamicWriters")
			}
			continue
		}
		owner, ok := owners[w.table]
		switch {
		case !ok:
			problems = append(problems, w.pos+": "+w.pkg+" writes "+w.table+", which no migration creates")
		case owner != w.pkg:
			problems = append(problems, w.pos+": "+w.pkg+" writes "+w.table+", owned by "+owner)
		default:
			written[w.table] = true
		}
	}
	for pkg, tables := range dynamic {
		for _, table := range tables {
			require.Equal(t, pkg, owners[table], "dynamicWriters lets %s write %s, owned by %s", pkg, table, owners[table])
			require.Contains(t, src.literals[pkg], table, "dynamicWriters lets %s write %s, which it never names", pkg, table)
			written[table] = true
		}
	}

	queueOwner := map[string]string{} // queue name -> owner
	for _, q := range src.queues {
		if q.table == "" {
			problems = append(problems, q.pos+": "+q.pkg+" registers a queue whose table is not a string literal")
		} else if owners[q.table] != q.pkg {
			problems = append(problems, q.pos+": "+q.pkg+" registers a queue on "+q.table+", owned by "+owners[q.table])
		}
		if q.name == "" {
			problems = append(problems, q.pos+": "+q.pkg+" registers a queue whose name is not a constant declared, as a string literal, in "+q.pkg)
			continue
		}
		queueOwner[q.name] = q.pkg
	}
	for _, l := range src.queueRefs {
		if owner, ok := queueOwner[l.value]; ok && owner != l.pkg && l.pkg != "cmd/graphmill" {
			problems = append(problems, l.pos+": "+l.pkg+" names "+owner+"'s queue "+strconv.Quote(l.value)+"; only "+owner+" enqueues, cancels or retries its jobs")
		}
	}
	for table, owner := range owners {
		if !written[table] {
			problems = append(problems, "tableOwners: "+owner+" never writes "+table)
		}
	}
	slices.Sort(problems)
	require.Empty(t, problems, "writes outside the table owners:\n%s", strings.Join(problems, "\n"))
}

// write is a statement that writes table (empty: a name given at run time).
type write struct{ pkg, pos, table string }

// queueReg is a jobqueue.QueueConfig literal: the queue's resolved name
// (empty when not a constant of pkg) and its table.
type queueReg struct{ pkg, pos, name, table string }

// stringRef is a string literal, or a reference to another package's
// string constant, with its value.
type stringRef struct{ pkg, pos, value string }

type sources struct {
	writes    []write
	queues    []queueReg
	queueRefs []stringRef
	literals  map[string][]string // package -> its string literals
}

// scanSources reads the Go files of root's internal/ and cmd/ trees.
func scanSources(t *testing.T, root string) sources {
	t.Helper()
	type file struct {
		pkg string
		f   *ast.File
	}
	fset := token.NewFileSet()
	var parsed []file
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || (strings.HasSuffix(n, "test") && p != filepath.Join(root, top)) {
					return filepath.SkipDir // fixtures and test helper packages
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			parsed = append(parsed, file{strings.TrimPrefix(filepath.ToSlash(rel), "internal/"), f})
			return nil
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, parsed)

	// String constants per package: a literal value, or another package's
	// constant (resolved below).
	type constRef struct{ pkg, name string }
	literal := map[constRef]string{}
	alias := map[constRef]constRef{}
	imports := func(f *ast.File) map[string]string { // local name -> package
		out := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			rest, ok := strings.CutPrefix(p, "github.com/graphmill/graphmill/")
			if !ok {
				continue
			}
			name := path.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			out[name] = strings.TrimPrefix(rest, "internal/")
		}
		return out
	}
	for _, pf := range parsed {
		imp := imports(pf.f)
		for _, decl := range pf.f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
							literal[constRef{pf.pkg, n.Name}] = s
						}
					case *ast.SelectorExpr:
						if x, ok := v.X.(*ast.Ident); ok && imp[x.Name] != "" {
							alias[constRef{pf.pkg, n.Name}] = constRef{imp[x.Name], v.Sel.Name}
						}
					}
				}
			}
		}
	}
	resolve := func(c constRef) (string, bool) {
		for range 10 {
			if s, ok := literal[c]; ok {
				return s, true
			}
			next, ok := alias[c]
			if !ok {
				return "", false
			}
			c = next
		}
		return "", false
	}

	out := sources{literals: map[string][]string{}}
	for _, pf := range parsed {
		imp := imports(pf.f)
		pos := func(n ast.Node) string { return fset.Position(n.Pos()).String() }
		// A string that is a key of a composite literal or a case of a
		// switch names a field or a value of its own domain (a JSON schema's
		// "email" field or format), not a queue: it is no queue reference.
		notQueueRef := map[ast.Expr]bool{}
		ast.Inspect(pf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				notQueueRef[n.Key] = true
			case *ast.CaseClause:
				for _, e := range n.List {
					notQueueRef[e] = true
				}
			}
			return true
		})
		ast.Inspect(pf.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				out.literals[pf.pkg] = append(out.literals[pf.pkg], s)
				if !notQueueRef[n] {
					out.queueRefs = append(out.queueRefs, stringRef{pf.pkg, pos(n), s})
				}
				for _, table := range writtenTables(s) {
					out.writes = append(out.writes, write{pf.pkg, pos(n), table})
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && imp[x.Name] != "" {
					if s, ok := resolve(constRef{imp[x.Name], n.Sel.Name}); ok {
						out.queueRefs = append(out.queueRefs, stringRef{pf.pkg, pos(n), s})
					}
				}
			case *ast.CallExpr:
				// pgx's CopyFrom(ctx, pgx.Identifier{"table"}, columns, rows).
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "CopyFrom" && len(n.Args) == 4 {
					table := ""
					if cl, ok := n.Args[1].(*ast.CompositeLit); ok && len(cl.Elts) > 0 {
						if lit, ok := cl.Elts[len(cl.Elts)-1].(*ast.BasicLit); ok {
							table, _ = strconv.Unquote(lit.Value)
						}
					}
					out.writes = append(out.writes, write{pf.pkg, pos(n), table})
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "QueueConfig" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || imp[x.Name] != "jobqueue" {
					return true
				}
				q := queueReg{pkg: pf.pkg, pos: pos(n)}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch k, _ := kv.Key.(*ast.Ident); {
					case k == nil:
					case k.Name == "Table":
						if lit, ok := kv.Value.(*ast.BasicLit); ok {
							q.table, _ = strconv.Unquote(lit.Value)
						}
					case k.Name == "Name":
						// The name is a constant of the registering package,
						// declared there as a literal.
						if id, ok := kv.Value.(*ast.Ident); ok {
							q.name = literal[constRef{pf.pkg, id.Name}]
						}
					}
				}
				out.queues = append(out.queues, q)
			}
			return true
		})
	}
	return out
}

var (
	sqlWrite = regexp.MustCompile(`\b(INSERT\s+INTO|DELETE\s+FROM|UPDATE|COPY|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO)\b`)
	sqlIdent = regexp.MustCompile(`^\s+([a-z_][a-z0-9_]*)`)
)

// writtenTables returns the tables a piece of SQL writes; "" stands for a
// table whose name the literal leaves to a concatenation.
func writtenTables(sql string) []string {
	var out []string
	for _, m := range sqlWrite.FindAllStringIndex(sql, -1) {
		keyword, rest := sql[m[0]:m[1]], sql[m[1]:]
		if keyword == "UPDATE" {
			before := strings.Fields(sql[:m[0]])
			if len(before) > 0 && slices.Contains([]string{"FOR", "KEY", "DO", "ON"}, before[len(before)-1]) {
				continue // a row lock, an upsert's action or a foreign key's rule
			}
		}
		if id := sqlIdent.FindStringSubmatch(rest); id != nil {
			if id[1] != "set" {
				out = append(out, id[1])
			}
			continue
		}
		if strings.TrimSpace(rest) == "" {
			out = append(out, "") // UPDATE ` + table + `
		}
		// Anything else (COPY (SELECT ...) TO) writes no table.
	}
	return out
}

// TestWrittenTables: the scanner finds the written table of each form of
// write, none in row locks and upserts' actions, and "" for a name left
// to a concatenation.
func TestWrittenTables(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{`INSERT INTO events (id) VALUES ($1)`, []string{"events"}},
		{`UPDATE projects SET name = $2 WHERE id = $1`, []string{"projects"}},
		{`DELETE FROM tasks WHERE id = $1`, []string{"tasks"}},
		{`COPY documents (id, content) FROM STDIN (FORMAT binary)`, []string{"documents"}},
		{`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, nil},
		{`SELECT 1 FROM jobs FOR NO KEY UPDATE OF j`, nil},
		{`INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2`, []string{"t"}},
		{`UPDATE `, []string{""}},
		{`WITH doomed AS (DELETE FROM graph_objects RETURNING id) SELECT 1`, []string{"graph_objects"}},
		{`SELECT status FROM documents WHERE id = $1`, nil},
		{`UPDATE graph_objects o SET name = u.name FROM unnest($1) u WHERE true`, []string{"graph_objects"}},
		{`COPY (SELECT 1) TO STDOUT`, nil},
	} {
		require.Equal(t, c.want, writtenTables(c.sql), c.sql)
	}
}
