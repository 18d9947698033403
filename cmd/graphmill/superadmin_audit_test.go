package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

// auditRow is an audit_events row as the database holds it.
type auditRow struct {
	ActorID   string
	TokenID   *string
	Action    string
	TargetIDs []string
	Requested int
	Affected  int
	RequestID string
}

// auditRows are the audit_events rows of action, oldest first.
func (s *testServer) auditRows(action string) []auditRow {
	s.t.Helper()
	rows, err := s.m.db.pool.Query(context.Background(), `SELECT actor_id::text, token_id::text, action, target_ids::text[], requested, affected, request_id
		FROM audit_events WHERE action = $1 ORDER BY created_at, id`, action)
	require.NoError(s.t, err)
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		require.NoError(s.t, rows.Scan(&r.ActorID, &r.TokenID, &r.Action, &r.TargetIDs, &r.Requested, &r.Affected, &r.RequestID))
		out = append(out, r)
	}
	require.NoError(s.t, rows.Err())
	return out
}

// auditCount is how many audit rows there are.
// The users the harness makes (newUser, through the superadmin API) are
// recorded as user.create and user.token_create rows;
// TestSuperadminAuditRecordsCreations checks those. auditCount counts the
// others: the actions the tests are about.
func (s *testServer) auditCount() int {
	s.t.Helper()
	return s.extractionCount(`SELECT count(*) FROM audit_events WHERE action NOT IN ('user.create', 'user.token_create')`)
}

// tokenID is the id of an API token.
func (s *testServer) tokenID(token string) string {
	s.t.Helper()
	h := auth.HashToken(token)
	var id string
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT id::text FROM api_tokens WHERE token_hash = $1`, h[:]).Scan(&id))
	return id
}

// adminID is the bootstrap superadmin's user id.
func (s *testServer) adminID() string {
	s.t.Helper()
	var me struct {
		UserID string `json:"userId"`
	}
	s.must(200, "GET", "/api/superadmin/me", s.admin, nil).Decode(s.t, &me)
	return me.UserID
}

// requireAudit requires exactly one audit row of action, by the admin's
// token, naming ids, with the counts and the request id r carried.
func (s *testServer) requireAudit(r response, action string, ids []string, requested, affected int) {
	s.t.Helper()
	rows := s.auditRows(action)
	require.Len(s.t, rows, 1, action)
	got := rows[0]
	require.Equal(s.t, s.adminID(), got.ActorID, action)
	require.NotNil(s.t, got.TokenID, action)
	require.Equal(s.t, s.tokenID(s.admin), *got.TokenID, action)
	require.ElementsMatch(s.t, ids, got.TargetIDs, action)
	require.Equal(s.t, requested, got.Requested, action)
	require.Equal(s.t, affected, got.Affected, action)
	require.NotEmpty(s.t, r.Header.Get("X-Request-Id"))
	require.Equal(s.t, r.Header.Get("X-Request-Id"), got.RequestID, action)
}

func TestSuperadminAuditRecordsJobActions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, _, queued, failed, completed := s.superadminExtractionJobs()
	unknown := uuid.NewString()

	// Delete: requested 3, one deleted (the queued one skipped). The
	// request id is the caller's when it sends one.
	r := s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin,
		map[string]any{"ids": []string{queued, failed, unknown}}, header{"X-Request-ID", "audit-delete-1"})
	require.Equal(t, "audit-delete-1", r.Header.Get("X-Request-Id"))
	s.requireAudit(r, "extraction_jobs.delete", []string{queued, failed, unknown}, 3, 1)

	// Cancel: requested 2, one cancelled; the request id is the server's.
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{queued, completed}})
	s.requireAudit(r, "extraction_jobs.cancel", []string{queued, completed}, 2, 1)

	// An action that changes nothing is still recorded (asked, 0 affected).
	r = s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{unknown}})
	rows := s.auditRows("extraction_jobs.cancel")
	require.Len(t, rows, 2)
	require.Equal(t, 1, rows[1].Requested)
	require.Equal(t, 0, rows[1].Affected)
	require.Equal(t, r.Header.Get("X-Request-Id"), rows[1].RequestID)

	// Refused calls record nothing.
	_, member := s.newUser("m@example.com", allScopes, "")
	s.must(403, "POST", "/api/superadmin/extraction-jobs/delete", member, map[string]any{"ids": []string{completed}})
	s.must(400, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{"nope"}})
	s.must(401, "POST", "/api/superadmin/extraction-jobs/cancel", "", map[string]any{"ids": []string{completed}})
	require.Equal(t, 3, s.auditCount())
}

// TestSuperadminAuditRecordsCreations: creating a user and minting a
// token for one are recorded (the new record among the targets) in the
// creation's transaction; refused calls record nothing, and a row that
// cannot be written undoes the creation.
func TestSuperadminAuditRecordsCreations(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	creations := func() int {
		return s.extractionCount(`SELECT count(*) FROM audit_events WHERE action IN ('user.create', 'user.token_create')`)
	}

	var u struct{ ID string }
	r := s.must(201, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "new@example.com", "displayName": "New"})
	r.Decode(t, &u)
	s.requireAudit(r, "user.create", []string{u.ID}, 1, 1)
	var tok struct{ ID, Token string }
	r = s.must(201, "POST", "/api/superadmin/users/"+u.ID+"/tokens", s.admin, map[string]any{"name": "cli", "scopes": []string{"documents:read"}})
	r.Decode(t, &tok)
	require.Equal(t, s.tokenID(tok.Token), tok.ID)
	s.requireAudit(r, "user.token_create", []string{u.ID, tok.ID}, 2, 2)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM audit_events a WHERE strpos(row_to_json(a)::text, $1) > 0`, tok.Token), "the secret is not recorded")

	// Refused: bad input, a taken email, an unknown user, no scope.
	s.must(400, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "nope"})
	s.must(409, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "new@example.com"})
	s.must(404, "POST", "/api/superadmin/users/"+uuid.NewString()+"/tokens", s.admin, map[string]any{"name": "x", "scopes": []string{"documents:read"}})
	_, member := s.newUser("m@example.com", []string{"documents:read"}, "")
	before := creations()
	s.must(403, "POST", "/api/superadmin/users", member, map[string]any{"primaryEmail": "other@example.com"})
	require.Equal(t, before, creations())
	require.Equal(t, 4, before, "new@example.com and its token, m@example.com and its token")

	// The audit row fails: no user, no token.
	undo := s.failOn("audit_events", "INSERT")
	s.must(500, "POST", "/api/superadmin/users", s.admin, map[string]any{"primaryEmail": "undone@example.com"})
	s.must(500, "POST", "/api/superadmin/users/"+u.ID+"/tokens", s.admin, map[string]any{"name": "undone", "scopes": []string{"documents:read"}})
	undo()
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM users WHERE primary_email = 'undone@example.com'`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM api_tokens WHERE name = 'undone'`))
	require.Equal(t, before, creations())
}

func TestSuperadminAuditRecordsDeletions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	userID, _ := s.newUser("u@example.com", []string{"admin:read"}, "")
	other := s.newProject(org, "other")

	r := s.must(200, "DELETE", "/api/superadmin/users/"+userID, s.admin, nil)
	s.requireAudit(r, "user.delete", []string{userID}, 1, 1)
	r = s.must(200, "DELETE", "/api/superadmin/projects/"+other, s.admin, nil)
	s.requireAudit(r, "project.delete", []string{other}, 1, 1)
	r = s.must(200, "DELETE", "/api/superadmin/organizations/"+org, s.admin, nil, header{"X-Request-ID", "org-delete"})
	s.requireAudit(r, "organization.delete", []string{org}, 1, 1)
	require.Equal(t, "org-delete", s.auditRows("organization.delete")[0].RequestID)

	// Failed deletions record nothing: yourself, unknown and gone records.
	s.must(409, "DELETE", "/api/superadmin/users/"+s.adminID(), s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/users/"+userID, s.admin, nil)
	s.must(404, "DELETE", "/api/superadmin/projects/"+project, s.admin, nil) // its organization is gone
	s.must(404, "DELETE", "/api/superadmin/organizations/"+uuid.NewString(), s.admin, nil)
	require.Equal(t, 3, s.auditCount())
}

// failOn makes every statement of op on table fail in this server's
// database (a trigger), until the returned function drops it.
func (s *testServer) failOn(table, op string) func() {
	s.t.Helper()
	ctx := context.Background()
	name := "fail_" + table + "_" + strings.ToLower(op)
	_, err := s.m.db.pool.Exec(ctx, `CREATE FUNCTION `+name+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$`)
	require.NoError(s.t, err)
	_, err = s.m.db.pool.Exec(ctx, `CREATE TRIGGER `+name+` BEFORE `+op+` ON `+table+` FOR EACH ROW EXECUTE FUNCTION `+name+`()`)
	require.NoError(s.t, err)
	return func() {
		_, err := s.m.db.pool.Exec(ctx, `DROP TRIGGER `+name+` ON `+table+`; DROP FUNCTION `+name+`()`)
		require.NoError(s.t, err)
	}
}

// TestSuperadminAuditSharesTheTransaction: the audit row and the change
// commit together: a change that fails leaves no row, and a row that
// cannot be written undoes the change.
func TestSuperadminAuditSharesTheTransaction(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	_, _, queued, failed, _ := s.superadminExtractionJobs()
	userID, _ := s.newUser("u@example.com", []string{"admin:read"}, "")
	count := func(id string) int {
		return s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE id = $1`, id)
	}

	// The change fails: nothing is recorded.
	undo := s.failOn("object_extraction_jobs", "DELETE")
	s.must(500, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{failed}})
	undo()
	undo = s.failOn("users", "UPDATE")
	s.must(500, "DELETE", "/api/superadmin/users/"+userID, s.admin, nil)
	undo()
	require.Zero(t, s.auditCount())
	require.Equal(t, 1, count(failed))

	// The audit row fails: the change is undone.
	undo = s.failOn("audit_events", "INSERT")
	s.must(500, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{failed}})
	s.must(500, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{queued}})
	s.must(500, "DELETE", "/api/superadmin/users/"+userID, s.admin, nil)
	s.must(500, "DELETE", "/api/superadmin/projects/"+project, s.admin, nil)
	s.must(500, "DELETE", "/api/superadmin/organizations/"+org, s.admin, nil)
	undo()
	require.Zero(t, s.auditCount())
	require.Equal(t, 1, count(failed))
	require.Equal(t, "queued", s.extractionGetJob(queued).Status)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM users WHERE id = $1 AND deleted_at IS NULL`, userID))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM projects WHERE id = $1 AND deleted_at IS NULL`, project))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM orgs WHERE id = $1 AND deleted_at IS NULL`, org))
	s.must(200, "GET", "/api/projects/"+project, s.admin, nil)

	// Once the database accepts them again, the same calls work and are
	// recorded.
	r := s.must(200, "POST", "/api/superadmin/extraction-jobs/delete", s.admin, map[string]any{"ids": []string{failed}})
	s.requireAudit(r, "extraction_jobs.delete", []string{failed}, 1, 1)
	require.Zero(t, count(failed))
}

func TestSuperadminAuditList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, org := s.defaultProject()
	admin := s.adminID()
	// A second superadmin (granted before their token is first used).
	opsID, ops := s.newUser("ops@example.com", []string{"admin:read", "admin:write"}, "")
	_, err := s.m.db.pool.Exec(context.Background(), `INSERT INTO superadmins (user_id, created_at) VALUES ($1, now())`, opsID)
	require.NoError(t, err)

	// Four actions an hour apart: admin deletes a user, ops deletes a
	// project, admin cancels jobs, ops deletes a project.
	victim, _ := s.newUser("v@example.com", []string{"admin:read"}, "")
	p1, p2 := s.newProject(org, "p1"), s.newProject(org, "p2")
	// The two users' creations are recorded (TestSuperadminAuditRecordsCreations);
	// this test lists the four actions below.
	_, err = s.m.db.pool.Exec(context.Background(), `DELETE FROM audit_events WHERE action IN ('user.create', 'user.token_create')`)
	require.NoError(t, err)
	job := uuid.NewString()
	s.clock.Advance(time.Hour)
	t0 := s.clock.Now()
	s.must(200, "DELETE", "/api/superadmin/users/"+victim, s.admin, nil)
	s.clock.Advance(time.Hour)
	s.must(200, "DELETE", "/api/superadmin/projects/"+p1, ops, nil)
	s.clock.Advance(time.Hour)
	cancel := s.must(200, "POST", "/api/superadmin/extraction-jobs/cancel", s.admin, map[string]any{"ids": []string{job}})
	s.clock.Advance(time.Hour)
	s.must(200, "DELETE", "/api/superadmin/projects/"+p2, ops, nil)

	list := func(query string) pagedBody {
		t.Helper()
		r := s.must(200, "GET", "/api/superadmin/audit"+query, s.admin, nil)
		var p pagedBody
		r.Decode(t, &p)
		require.NotContains(t, r.JSON(t), "stats")
		return p
	}
	actions := func(p pagedBody) []any {
		out := []any{}
		for _, e := range p.Data {
			out = append(out, e["action"])
		}
		return out
	}

	p := list("")
	require.Equal(t, []any{"project.delete", "extraction_jobs.cancel", "project.delete", "user.delete"}, actions(p), "newest first")
	require.Equal(t, 4, p.Meta.Total)
	require.Equal(t, 1, p.Meta.Page)
	require.Equal(t, 20, p.Meta.Limit)
	require.Equal(t, 1, p.Meta.TotalPages)
	c := p.Data[1]
	require.Equal(t, admin, c["actorId"])
	require.Equal(t, s.tokenID(s.admin), c["tokenId"])
	require.Equal(t, []any{job}, c["targetIds"])
	require.InDelta(t, 1, c["requested"], 0)
	require.InDelta(t, 0, c["affected"], 0)
	require.Equal(t, cancel.Header.Get("X-Request-Id"), c["requestId"])
	require.NotEmpty(t, c["id"])
	created, err := time.Parse(time.RFC3339Nano, c["createdAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, t0.Add(2*time.Hour), created, time.Millisecond)
	require.Equal(t, "ops@example.com", p.Data[0]["actorEmail"])
	require.Equal(t, opsID, p.Data[0]["actorId"])
	require.Equal(t, []any{p2}, p.Data[0]["targetIds"])

	// Filters.
	p = list("?actorId=" + opsID)
	require.Equal(t, []any{"project.delete", "project.delete"}, actions(p))
	require.Equal(t, 2, p.Meta.Total)
	p = list("?action=user.delete")
	require.Equal(t, []any{"user.delete"}, actions(p))
	require.Equal(t, []any{victim}, p.Data[0]["targetIds"])
	p = list("?action=project.delete&actorId=" + admin)
	require.Empty(t, p.Data)
	require.NotNil(t, p.Data)
	at := func(h int) string {
		return url.QueryEscape(t0.Add(time.Duration(h) * time.Hour).Format(time.RFC3339Nano))
	}
	p = list("?fromDate=" + at(1))
	require.Equal(t, []any{"project.delete", "extraction_jobs.cancel", "project.delete"}, actions(p), "fromDate is inclusive")
	p = list("?toDate=" + at(1))
	require.Equal(t, []any{"project.delete", "user.delete"}, actions(p), "toDate is inclusive")
	p = list("?fromDate=" + at(1) + "&toDate=" + at(2))
	require.Equal(t, []any{"extraction_jobs.cancel", "project.delete"}, actions(p))
	require.Equal(t, 2, p.Meta.Total)
	p = list("?fromDate=" + at(1) + "&toDate=" + at(1))
	require.Equal(t, []any{"project.delete"}, actions(p))

	// Paging.
	p = list("?limit=3&page=2")
	require.Equal(t, []any{"user.delete"}, actions(p))
	require.Equal(t, 4, p.Meta.Total)
	require.Equal(t, 2, p.Meta.TotalPages)
	require.True(t, p.Meta.HasPrev)
	require.False(t, p.Meta.HasNext)
	p = list("?limit=1")
	require.True(t, p.Meta.HasNext)
	require.Equal(t, 4, p.Meta.TotalPages)
	p = list("?limit=100")
	require.Len(t, p.Data, 4)

	// Bad filters and limits.
	for bad, detail := range map[string]string{
		"actorId=nope":                           "actorId",
		"action=bogus":                           "extraction_jobs.cancel",
		"action=user.explode":                    "user.delete",
		"fromDate=yesterday":                     "fromDate",
		"toDate=2026-13-01T00:00:00Z":            "toDate",
		"fromDate=" + at(2) + "&toDate=" + at(1): "fromDate must not be after toDate",
		"limit=0":                                "limit",
		"limit=101":                              "limit",
		"page=0":                                 "page",
		"limit=x":                                "limit",
	} {
		r := s.must(400, "GET", "/api/superadmin/audit?"+bad, s.admin, nil)
		require.Equal(t, "invalid_argument", r.JSON(t)["code"], bad)
		require.Contains(t, r.Detail(t)+" "+string(r.Body), detail, bad)
	}
	// Listing records nothing.
	require.Equal(t, 4, s.auditCount())
}

// TestSuperadminAuditTotalPastLastPage: meta.total counts the events the
// filters select on any page, one past the end included.
func TestSuperadminAuditTotalPastLastPage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	_, org := s.defaultProject()
	s.must(200, "DELETE", "/api/superadmin/projects/"+s.newProject(org, "p1"), s.admin, nil)
	s.must(200, "DELETE", "/api/superadmin/projects/"+s.newProject(org, "p2"), s.admin, nil)
	var p pagedBody
	s.must(200, "GET", "/api/superadmin/audit?limit=1&page=2", s.admin, nil).Decode(t, &p)
	require.Len(t, p.Data, 1)
	require.Equal(t, [3]int{2, 2, 2}, [3]int{p.Meta.Page, p.Meta.Total, p.Meta.TotalPages})
	s.must(200, "GET", "/api/superadmin/audit?limit=1&page=3", s.admin, nil).Decode(t, &p)
	require.Empty(t, p.Data)
	require.Equal(t, [3]int{3, 2, 2}, [3]int{p.Meta.Page, p.Meta.Total, p.Meta.TotalPages}, "the total past the last page")
	require.True(t, p.Meta.HasPrev)
	require.False(t, p.Meta.HasNext)
	s.must(200, "GET", "/api/superadmin/audit?action=user.delete&page=2", s.admin, nil).Decode(t, &p)
	require.Zero(t, p.Meta.Total, "filtered")
}

func TestSuperadminAuditRefusesOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	victim, _ := s.newUser("x@example.com", []string{"admin:read"}, "")
	s.must(200, "DELETE", "/api/superadmin/users/"+victim, s.admin, nil)
	_, member := s.newMember("u@example.com", allScopes, project, "admin")
	var bound map[string]any
	s.must(201, "POST", "/api/projects/"+project+"/tokens", s.admin, map[string]any{"name": "b", "scopes": allScopes}).Decode(t, &bound)
	var noRead map[string]any
	s.must(201, "POST", "/api/tokens", s.admin, map[string]any{"name": "w", "scopes": []string{"documents:read"}}).Decode(t, &noRead)

	s.must(401, "GET", "/api/superadmin/audit", "", nil)
	require.Contains(t, s.must(403, "GET", "/api/superadmin/audit", member, nil).Detail(t), "superadmin")
	s.must(403, "GET", "/api/superadmin/audit", bound["token"].(string), nil)
	require.Contains(t, s.must(403, "GET", "/api/superadmin/audit", noRead["token"].(string), nil).Detail(t), "admin:read")
	var p pagedBody
	s.must(200, "GET", "/api/superadmin/audit?action=user.delete", s.admin, nil).Decode(t, &p)
	require.Equal(t, 1, p.Meta.Total)
}

// TestAdminCommandsAudited: graphmill admin user create and admin token
// create, which write the database directly, record user.create and
// user.token_create like the API's routes, in the creation's transaction,
// with the command line as the actor (the nil UUID: no user acted; no
// token; the command as the request). The API's audit list shows them. A
// refused command records nothing, and a row that cannot be written
// undoes the creation.
func TestAdminCommandsAudited(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"admin"}, args...),
			[]string{"GRAPHMILL_DATA_DIR=" + t.TempDir(), "GRAPHMILL_DATABASE_URL=" + s.dbURL}, &out, &errOut)
		return strings.TrimSpace(out.String()), err
	}
	const commandLine = "00000000-0000-0000-0000-000000000000"

	user, err := admin("user", "create", "--email", "cli@example.com", "--name", "Cli")
	require.NoError(t, err)
	require.Equal(t, []auditRow{{
		ActorID: commandLine, Action: "user.create", TargetIDs: []string{user}, Requested: 1, Affected: 1,
		RequestID: "cli: graphmill admin user create",
	}}, s.auditRows("user.create"))
	token, err := admin("token", "create", "--user", "cli@example.com", "--scopes", "documents:read", "--name", "cli-token")
	require.NoError(t, err)
	require.Equal(t, []auditRow{{
		ActorID: commandLine, Action: "user.token_create", TargetIDs: []string{user, s.tokenID(token)}, Requested: 2, Affected: 2,
		RequestID: "cli: graphmill admin token create",
	}}, s.auditRows("user.token_create"))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM audit_events a WHERE strpos(row_to_json(a)::text, $1) > 0`, token), "the secret is not recorded")

	// The API lists them by their actor.
	var list struct {
		Data []struct {
			ActorID    string  `json:"actorId"`
			ActorEmail *string `json:"actorEmail"`
			TokenID    *string `json:"tokenId"`
			Action     string  `json:"action"`
			RequestID  string  `json:"requestId"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/superadmin/audit?actorId="+commandLine, s.admin, nil).Decode(t, &list)
	require.Len(t, list.Data, 2)
	require.Equal(t, "user.token_create", list.Data[0].Action)
	require.Equal(t, "user.create", list.Data[1].Action)
	for _, e := range list.Data {
		require.Equal(t, commandLine, e.ActorID)
		require.Nil(t, e.ActorEmail)
		require.Nil(t, e.TokenID)
	}

	// The console's audit log names the command line as the actor.
	b := newConsoleBrowser(t, s)
	b.signIn(s.admin)
	status, _, page := b.do("GET", "/admin/audit?actorId="+commandLine, nil)
	require.Equal(t, 200, status)
	require.Equal(t, 2, strings.Count(page, "<td>command line</td>"), page)
	require.NotContains(t, page, "<td>"+commandLine+"</td>")

	// Refused: a taken email, an unknown user, a bad scope.
	count := func() int {
		return s.extractionCount(`SELECT count(*) FROM audit_events WHERE actor_id = $1`, commandLine)
	}
	_, err = admin("user", "create", "--email", "cli@example.com")
	require.Error(t, err)
	_, err = admin("token", "create", "--user", "nobody@example.com", "--scopes", "documents:read")
	require.Error(t, err)
	_, err = admin("token", "create", "--user", user, "--scopes", "nope")
	require.Error(t, err)
	require.Equal(t, 2, count())

	// The audit row fails: no user, no token.
	undo := s.failOn("audit_events", "INSERT")
	_, err = admin("user", "create", "--email", "undone@example.com")
	require.ErrorContains(t, err, "refused by the test")
	_, err = admin("token", "create", "--user", user, "--scopes", "documents:read", "--name", "undone")
	require.ErrorContains(t, err, "refused by the test")
	undo()
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM users WHERE primary_email = 'undone@example.com'`))
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM api_tokens WHERE name = 'undone'`))
	require.Equal(t, 2, count())
}
