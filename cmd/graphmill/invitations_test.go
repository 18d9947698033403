package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/email/smtptest"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// withInvitationMail turns email on, delivered to srv, with the public URL
// the links are checked against.
func withInvitationMail(srv *smtptest.Server) serverOption {
	return func(c *config.Config) {
		c.SMTPURL = "smtp://" + srv.Addr
		c.EmailFrom = "Graphmill <noreply@graphmill.test>"
		c.PublicURL = "https://graphmill.test/gm/"
	}
}

// newInvitingServer starts a server with email on, delivering to the
// SMTP server it returns, and returns the default project's id.
func newInvitingServer(t *testing.T, opts ...serverOption) (s *testServer, srv *smtptest.Server, project string) {
	t.Helper()
	srv = smtptest.Start(t, smtptest.Options{})
	s = newServer(t, append(opts, withInvitationMail(srv))...)
	project, _ = s.defaultProject()
	return s, srv, project
}

// invitationBody is an invitation as the API shows it.
type invitationBody struct {
	ID          string     `json:"id"`
	ProjectID   string     `json:"projectId"`
	ProjectName string     `json:"projectName"`
	Email       string     `json:"email"`
	Role        string     `json:"role"`
	Status      string     `json:"status"`
	InvitedBy   string     `json:"invitedBy"`
	InviterName string     `json:"inviterName"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	AcceptedBy  string     `json:"acceptedBy"`
	AcceptedAt  *time.Time `json:"acceptedAt"`
	RevokedAt   *time.Time `json:"revokedAt"`
}

type invitationList struct {
	Data  []invitationBody `json:"data"`
	Total int              `json:"total"`
}

// inviteLink matches the link of an invitation email's text part.
var inviteLink = regexp.MustCompile(`https://graphmill\.test/gm/invitations/accept#token=([A-Za-z0-9_-]+)`)

// invitationMail waits for the message to address (exactly as written;
// the tests send one per spelling) at srv, checks it is an invitation as
// role with both parts carrying the same link, and returns the link's
// token.
func invitationMail(t *testing.T, srv *smtptest.Server, address, role string) string {
	t.Helper()
	var msg smtptest.Message
	require.Eventually(t, func() bool {
		for _, m := range srv.Messages() {
			if slices.Equal(m.Rcpt, []string{address}) {
				msg = m
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no invitation reached %s", address)
	m, err := mail.ReadMessage(bytes.NewReader(msg.Data))
	require.NoError(t, err)
	require.Equal(t, "You are invited to default on Graphmill", m.Header.Get("Subject"))
	// Both parts are quoted-printable: decoded, the text part has the
	// link, the HTML part has it as the href.
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	require.NoError(t, err)
	links := inviteLink.FindAllStringSubmatch(string(body), -1)
	require.Len(t, links, 2, "message: %s", body)
	require.Equal(t, links[0], links[1])
	require.Contains(t, string(body), "Accept the invitation: "+links[0][0])
	require.Contains(t, string(body), `<a href="`+links[0][0]+`">`)
	require.Contains(t, string(body), "as "+role+".")
	return links[0][1]
}

// myInvitations lists the pending invitations to user's address.
func (s *testServer) myInvitations(user string) []invitationBody {
	s.t.Helper()
	var l invitationList
	s.must(200, "GET", "/api/me/invitations", user, nil).Decode(s.t, &l)
	return l.Data
}

// acceptRefused posts token as user and requires the refusal: status,
// code and a detail containing detail.
func (s *testServer) acceptRefused(user, token string, status int, code, detail string) {
	s.t.Helper()
	r := s.must(status, "POST", "/api/invitations/accept", user, map[string]any{"token": token})
	require.Equal(s.t, code, r.JSON(s.t)["code"])
	require.Contains(s.t, r.Detail(s.t), detail)
}

// TestInvitationSentAcceptedOnce is issue 14's done-when: an invitation
// sent through the API arrives at the SMTP server, its link accepted by
// the invited user gives them the role, and a second use is refused. The
// token is stored only hashed, and neither responses nor logs carry it.
func TestInvitationSentAcceptedOnce(t *testing.T) {
	t.Parallel()
	srv := smtptest.Start(t, smtptest.Options{})
	var logs bytes.Buffer
	s := startLoggedServer(t, pgtest.NewURL(t), slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}), withInvitationMail(srv))
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}

	var inv invitationBody
	created := s.must(201, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "bob@example.com", "role": "editor"})
	created.Decode(t, &inv)
	require.Equal(t, "pending", inv.Status)
	require.Equal(t, "editor", inv.Role)
	require.Equal(t, "bob@example.com", inv.Email)
	require.Equal(t, project, inv.ProjectID)
	require.Equal(t, "default", inv.ProjectName)
	require.WithinDuration(t, time.Now().Add(7*24*time.Hour), inv.ExpiresAt, time.Minute)
	require.NotContains(t, string(created.Body), "token")

	token := invitationMail(t, srv, "bob@example.com", "editor")
	var hash []byte
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT token_hash FROM project_invitations WHERE id = $1`, inv.ID).Scan(&hash))
	sum := sha256.Sum256([]byte(token))
	require.Equal(t, sum[:], hash, "the table holds the token's SHA-256")
	var leaks int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM project_invitations i WHERE strpos(i::text, $1) > 0`, token).Scan(&leaks))
	require.Zero(t, leaks, "the raw token is in no invitation column")
	s.requireTokenHidden(token)

	// Bob signs up after the invitation: the address matches whatever its
	// case. He sees the project only once he accepts.
	bobID, bob := s.newUser("Bob@Example.com", []string{"admin:read", "admin:write", "documents:read", "documents:write"}, "")
	doc := map[string]any{"filename": "a.txt", "content": "Alpha beta.", "mimeType": "text/plain"}
	s.must(404, "POST", "/api/documents", bob, doc, hp)
	mine := s.myInvitations(bob)
	require.Len(t, mine, 1)
	require.Equal(t, inv.ID, mine[0].ID)
	require.Equal(t, "default", mine[0].ProjectName)
	require.Equal(t, "admin", mine[0].InviterName)

	var accepted invitationBody
	r := s.must(200, "POST", "/api/invitations/accept", bob, map[string]any{"token": token})
	r.Decode(t, &accepted)
	require.NotContains(t, string(r.Body), token)
	require.Equal(t, "accepted", accepted.Status)
	require.Equal(t, bobID, accepted.AcceptedBy)

	// The role works at once: an editor uploads.
	s.must(201, "POST", "/api/documents", bob, doc, hp)
	var members struct {
		Data []struct {
			UserID string `json:"userId"`
			Role   string `json:"role"`
		} `json:"data"`
	}
	s.must(200, "GET", "/api/projects/"+project+"/members", s.admin, nil).Decode(t, &members)
	roles := map[string]string{}
	for _, m := range members.Data {
		roles[m.UserID] = m.Role
	}
	require.Equal(t, "editor", roles[bobID])

	// The link works once.
	s.acceptRefused(bob, token, 409, "failed_precondition", "already been accepted")
	require.Empty(t, s.myInvitations(bob))
	var all invitationList
	s.must(200, "GET", "/api/projects/"+project+"/invitations", s.admin, nil).Decode(t, &all)
	require.Len(t, all.Data, 1)
	require.Equal(t, "accepted", all.Data[0].Status)
	require.NotContains(t, logs.String(), token, "no log line carries the token")
	s.requireTokenHidden(token)
}

// requireTokenHidden requires that no email job column holds token (the
// sent invitation's job erased its sealed link) and that preview-json of
// each job shows the placeholder instead of the link.
func (s *testServer) requireTokenHidden(token string) {
	s.t.Helper()
	ctx := context.Background()
	// The SMTP server has the message before the worker commits the job's
	// completion: wait for the jobs to be final first.
	require.Eventually(s.t, func() bool {
		var open int
		require.NoError(s.t, s.m.db.pool.QueryRow(ctx,
			`SELECT count(*) FROM email_jobs WHERE status IN ('queued', 'running')`).Scan(&open))
		return open == 0
	}, 10*time.Second, 10*time.Millisecond, "the email jobs finish")
	var leaks int
	require.NoError(s.t, s.m.db.pool.QueryRow(ctx,
		`SELECT count(*) FROM email_jobs e WHERE strpos(e::text, $1) > 0`, token).Scan(&leaks))
	require.Zero(s.t, leaks, "the raw token is in no email job column")
	rows, err := s.m.db.pool.Query(ctx, `SELECT id::text, status, secrets FROM email_jobs`)
	require.NoError(s.t, err)
	type job struct {
		id, status string
		sealed     *string
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.id, &j.status, &j.sealed)
	})
	require.NoError(s.t, err)
	require.NotEmpty(s.t, jobs)
	for _, j := range jobs {
		require.Equal(s.t, "completed", j.status)
		require.Nil(s.t, j.sealed, "a sent job's secrets are erased")
		p := s.must(200, "GET", "/api/superadmin/email-jobs/"+j.id+"/preview-json", s.admin, nil)
		require.NotContains(s.t, string(p.Body), token, "preview-json")
		require.Contains(s.t, p.JSON(s.t)["text"], "Accept the invitation: [hidden]")
	}
}

// TestInvitationTokenSealedInEmailJob: before it is sent, the invitation's
// email job holds the link only sealed, in its secrets column: no column
// has the token in clear and preview-json shows the placeholder; once
// sent (the message carries the working link), the sealed link is gone.
func TestInvitationTokenSealedInEmailJob(t *testing.T) {
	t.Parallel()
	// The SMTP server holds its reply, so the job is looked at unsent.
	srv := smtptest.Start(t, smtptest.Options{ReplyDelay: 500 * time.Millisecond})
	s := newServer(t, withInvitationMail(srv))
	project, _ := s.defaultProject()
	s.must(201, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "bob@example.com", "role": "editor"})
	ctx := context.Background()
	var id, status string
	var keys []string
	var sealed *string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT id::text, status, secret_keys, secrets FROM email_jobs`).Scan(&id, &status, &keys, &sealed))
	require.NotEqual(t, "completed", status, "looked at before sending")
	require.Equal(t, []string{"link"}, keys)
	require.NotNil(t, sealed)
	var data string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT data::text FROM email_jobs`).Scan(&data))
	require.NotContains(t, data, "token=")
	p := s.must(200, "GET", "/api/superadmin/email-jobs/"+id+"/preview-json", s.admin, nil).JSON(t)
	require.Contains(t, p["text"], "Accept the invitation: [hidden]")
	require.NotContains(t, p["text"], "token=")
	require.NotContains(t, p["html"], "token=")

	token := invitationMail(t, srv, "bob@example.com", "editor")
	require.Eventually(t, func() bool {
		require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT status FROM email_jobs`).Scan(&status))
		return status == "completed"
	}, 10*time.Second, 10*time.Millisecond)
	s.requireTokenHidden(token)
	// The link the message carried works.
	_, bob := s.newUser("bob@example.com", []string{"admin:read", "admin:write"}, "")
	s.must(200, "POST", "/api/invitations/accept", bob, map[string]any{"token": token})
}

func TestInvitationAuth(t *testing.T) {
	t.Parallel()
	s, _, project := newInvitingServer(t)
	base := "/api/projects/" + project + "/invitations"
	body := map[string]any{"email": "carol@example.com", "role": "viewer"}
	var inv invitationBody
	s.must(201, "POST", base, s.admin, body).Decode(t, &inv)

	// 401 without a token, on every route.
	s.must(401, "POST", base, "", body)
	s.must(401, "GET", base, "", nil)
	s.must(401, "DELETE", base+"/"+inv.ID, "", nil)
	s.must(401, "POST", "/api/invitations/accept", "", map[string]any{"token": "x"})
	s.must(401, "GET", "/api/me/invitations", "", nil)

	// 403 for a member who is not a project admin.
	_, editor := s.newMember("editor@example.com", allScopes, project, "editor")
	for _, c := range []struct {
		method, path string
		body         any
	}{{"POST", base, body}, {"GET", base, nil}, {"DELETE", base + "/" + inv.ID, nil}} {
		r := s.must(403, c.method, c.path, editor, c.body)
		require.Equal(t, "permission_denied", r.JSON(t)["code"], c.method)
	}
	// 403 for a project admin's token lacking the scope.
	_, reader := s.newMember("reader@example.com", []string{"admin:read"}, project, "admin")
	require.Contains(t, s.must(403, "POST", base, reader, body).Detail(t), "admin:write")
	// 403 for project-bound tokens on the account routes.
	_, bound := s.newUser("carol@example.com", []string{"admin:read", "admin:write"}, project)
	s.must(403, "GET", "/api/me/invitations", bound, nil)
	s.must(403, "POST", "/api/invitations/accept", bound, map[string]any{"token": "x"})

	// 404: another tenant sees neither the project nor its invitations;
	// an invitation of another project is not found in this one.
	_, other := s.newUser("other@example.com", allScopes, "")
	var org, theirs idBody
	s.must(201, "POST", "/api/orgs", other, map[string]any{"name": "other"}).Decode(t, &org)
	s.must(201, "POST", "/api/projects", other, map[string]any{"orgId": org.ID, "name": "other"}).Decode(t, &theirs)
	s.must(404, "POST", base, other, body)
	s.must(404, "GET", base, other, nil)
	s.must(404, "DELETE", base+"/"+inv.ID, other, nil)
	r := s.must(404, "DELETE", "/api/projects/"+theirs.ID+"/invitations/"+inv.ID, other, nil)
	require.Equal(t, "invitation not found", r.Detail(t))
	s.must(404, "DELETE", base+"/not-a-uuid", s.admin, nil)
	var list invitationList
	s.must(200, "GET", base, s.admin, nil).Decode(t, &list)
	require.Equal(t, []string{"pending"}, []string{list.Data[0].Status}, "the refusals revoked nothing")
}

func TestInvitationBadInput(t *testing.T) {
	t.Parallel()
	s, _, project := newInvitingServer(t)
	base := "/api/projects/" + project + "/invitations"
	for _, c := range []struct {
		body   any
		detail string
	}{
		{map[string]any{"email": "not-an-address", "role": "viewer"}, "email must be one email address"},
		{map[string]any{"email": "a@example.com, b@example.com", "role": "viewer"}, "email must be one email address"},
		{map[string]any{"email": "Ann <a@example.com>", "role": "viewer"}, "email must be one email address"},
		{map[string]any{"email": "a@example.com\r\nBcc: x@example.com", "role": "viewer"}, "email must be one email address"},
		// Addresses no mail server takes (RFC 5321), once accepted and
		// left to fail in the email queue: a control character, a local
		// part over 64 characters, an address over 254.
		{map[string]any{"email": "a@example.com\u0085x", "role": "viewer"}, "email must be one email address"},
		{map[string]any{"email": strings.Repeat("a", 65) + "@example.com", "role": "viewer"}, "at most 64 characters before the @ and 254 in all"},
		{map[string]any{"email": "a@" + strings.Repeat("b", 250) + ".com", "role": "viewer"}, "at most 64 characters before the @ and 254 in all"},
		{map[string]any{"email": "a@example.com", "role": "owner"}, "role"},
		{map[string]any{"email": "a@example.com"}, "role"},
		{map[string]any{"role": "viewer"}, "email"},
		{map[string]any{"email": "a@example.com", "role": "viewer", "extra": 1}, "extra"},
	} {
		r := s.must(400, "POST", base, s.admin, c.body)
		require.Equal(t, "invalid_argument", r.JSON(t)["code"])
		require.Contains(t, r.Detail(t), c.detail, "%v", c.body)
	}
	for _, c := range []struct {
		body   any
		detail string
	}{
		{map[string]any{}, "token"},
		{map[string]any{"token": ""}, "token"},
		{map[string]any{"token": "   "}, "token must not be empty"},
		{map[string]any{"token": "x", "extra": true}, "extra"},
	} {
		r := s.must(400, "POST", "/api/invitations/accept", s.admin, c.body)
		require.Contains(t, r.Detail(t), c.detail, "%v", c.body)
	}
	s.acceptRefused(s.admin, "unknown", 404, "not_found", "invitation not found")
	s.must(400, "GET", base+"?limit=0", s.admin, nil)
	s.must(400, "GET", "/api/me/invitations?offset=-1", s.admin, nil)

	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM project_invitations) + (SELECT count(*) FROM email_jobs)`).Scan(&n))
	require.Zero(t, n, "refused requests write nothing")
}

// TestInvitationRules covers re-invitation, members, another user, expiry
// and revocation.
func TestInvitationRules(t *testing.T) {
	t.Parallel()
	s, srv, project := newInvitingServer(t)
	base := "/api/projects/" + project + "/invitations"
	scopes := []string{"admin:read", "admin:write"}

	// Inviting a pending address again replaces the token and role: the
	// first link stops working, the second gives the new role.
	var first, second invitationBody
	s.must(201, "POST", base, s.admin, map[string]any{"email": "dan@example.com", "role": "viewer"}).Decode(t, &first)
	s.must(201, "POST", base, s.admin, map[string]any{"email": "DAN@example.com", "role": "editor"}).Decode(t, &second)
	require.Equal(t, first.ID, second.ID)
	require.Equal(t, "editor", second.Role)
	oldToken := invitationMail(t, srv, "dan@example.com", "viewer")
	newToken := invitationMail(t, srv, "DAN@example.com", "editor")
	require.NotEqual(t, oldToken, newToken)
	danID, dan := s.newUser("dan@example.com", scopes, "")
	s.acceptRefused(dan, oldToken, 404, "not_found", "invitation not found")

	// Another user holding the link is refused, and the invitation stays.
	_, eve := s.newUser("eve@example.com", scopes, "")
	s.acceptRefused(eve, newToken, 403, "permission_denied", "sent to another email address")
	require.Empty(t, s.myInvitations(eve))

	// A member is not invited; a user who became a member meanwhile
	// cannot accept either (the role they have stays).
	s.addMember(project, danID, "viewer")
	r := s.must(409, "POST", base, s.admin, map[string]any{"email": "Dan@Example.com", "role": "admin"})
	require.Equal(t, "conflict", r.JSON(t)["code"])
	s.acceptRefused(dan, newToken, 409, "conflict", "already a member")
	s.must(204, "DELETE", "/api/projects/"+project+"/members/"+danID, s.admin, nil)
	var accepted invitationBody
	s.must(200, "POST", "/api/invitations/accept", dan, map[string]any{"token": newToken}).Decode(t, &accepted)
	require.Equal(t, "editor", accepted.Role)

	// Revocation: a pending invitation's link stops working; accepted and
	// revoked ones cannot be revoked.
	var fay invitationBody
	s.must(201, "POST", base, s.admin, map[string]any{"email": "fay@example.com", "role": "viewer"}).Decode(t, &fay)
	fayToken := invitationMail(t, srv, "fay@example.com", "viewer")
	s.must(204, "DELETE", base+"/"+fay.ID, s.admin, nil)
	var status string
	var revokedAt *time.Time
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT status, revoked_at FROM project_invitations WHERE id = $1`, fay.ID).Scan(&status, &revokedAt))
	require.Equal(t, "revoked", status)
	require.NotNil(t, revokedAt)
	_, fayUser := s.newUser("fay@example.com", scopes, "")
	require.Empty(t, s.myInvitations(fayUser))
	s.acceptRefused(fayUser, fayToken, 409, "failed_precondition", "revoked")
	require.Contains(t, s.must(409, "DELETE", base+"/"+fay.ID, s.admin, nil).Detail(t), "revoked")
	require.Contains(t, s.must(409, "DELETE", base+"/"+second.ID, s.admin, nil).Detail(t), "accepted")

	// Expiry: after seven days the link is refused and the invitation
	// shows as expired; it can still be revoked.
	var gus invitationBody
	s.must(201, "POST", base, s.admin, map[string]any{"email": "gus@example.com", "role": "viewer"}).Decode(t, &gus)
	gusToken := invitationMail(t, srv, "gus@example.com", "viewer")
	_, gusUser := s.newUser("gus@example.com", scopes, "")
	require.Len(t, s.myInvitations(gusUser), 1)
	s.clock.Advance(7*24*time.Hour + time.Second)
	s.acceptRefused(gusUser, gusToken, 409, "failed_precondition", "expired")
	require.Empty(t, s.myInvitations(gusUser))
	var list invitationList
	s.must(200, "GET", base+"?limit=10", s.admin, nil).Decode(t, &list)
	statuses := map[string]string{}
	for _, i := range list.Data {
		statuses[i.Email] = i.Status
	}
	require.Equal(t, map[string]string{"DAN@example.com": "accepted", "fay@example.com": "revoked", "gus@example.com": "expired"}, statuses)
	s.must(204, "DELETE", base+"/"+gus.ID, s.admin, nil)
}

// TestInvitationAcceptMatchesAddressesAsLower: accepting compares the
// addresses with the rule listing and inviting use (PostgreSQL lower()),
// not Unicode case folding: an address that differs by U+017F (long s,
// which folds to s) is another address, as it is for the user's list.
func TestInvitationAcceptMatchesAddressesAsLower(t *testing.T) {
	t.Parallel()
	s, srv, project := newInvitingServer(t)
	s.must(201, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "bos@example.com", "role": "editor"})
	token := invitationMail(t, srv, "bos@example.com", "editor")
	_, other := s.newUser("bo\u017f@example.com", []string{"admin:read", "admin:write"}, "")
	require.Empty(t, s.myInvitations(other), "lower() keeps them apart")
	s.acceptRefused(other, token, 403, "permission_denied", "another email address")
	var status string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT status FROM project_invitations`).Scan(&status))
	require.Equal(t, "pending", status)
}

// TestInvitationOIDCUser: a user created by their first OIDC sign-in after
// the invitation sees it and accepts it; their session gets the role's
// scopes.
func TestInvitationOIDCUser(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s, srv, project := newInvitingServer(t, withOIDC(iss))
	s.must(201, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "hana@example.com", "role": "editor"})
	token := invitationMail(t, srv, "hana@example.com", "editor")

	hana := iss.token(t, iss.claims("hana", nil)) // email hana@example.com
	mine := s.myInvitations(hana)
	require.Len(t, mine, 1)
	require.Equal(t, "editor", mine[0].Role)
	hp := header{"X-Project-ID", project}
	doc := map[string]any{"filename": "h.txt", "content": "Hana's notes.", "mimeType": "text/plain"}
	s.must(404, "POST", "/api/documents", hana, doc, hp)
	s.must(200, "POST", "/api/invitations/accept", hana, map[string]any{"token": token})
	s.must(201, "POST", "/api/documents", hana, doc, hp)
}

// TestInvitationEmailOff: without SMTP no invitation can be sent (its
// link would reach nobody), and nothing is written.
func TestInvitationEmailOff(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	r := s.must(409, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "ivy@example.com", "role": "viewer"})
	require.Equal(t, "failed_precondition", r.JSON(t)["code"])
	require.Contains(t, r.Detail(t), "GRAPHMILL_SMTP_URL")
	var n int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM project_invitations) + (SELECT count(*) FROM email_jobs)`).Scan(&n))
	require.Zero(t, n)
	var list invitationList
	s.must(200, "GET", "/api/projects/"+project+"/invitations", s.admin, nil).Decode(t, &list)
	require.Empty(t, list.Data)
	require.True(t, strings.HasPrefix(string(s.must(200, "GET", "/api/me/invitations", s.admin, nil).Body), `{"data":[]`))
}

// TestInvitationOIDCUnverifiedEmail: an identity provider that does not
// vouch for the email claim (email_verified absent or false) gives the
// user no address, so they see and accept no invitation sent to it.
func TestInvitationOIDCUnverifiedEmail(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s, srv, project := newInvitingServer(t, withOIDC(iss))
	s.must(201, "POST", "/api/projects/"+project+"/invitations", s.admin, map[string]any{"email": "ines@example.com", "role": "editor"})
	token := invitationMail(t, srv, "ines@example.com", "editor")

	for i, verified := range []any{nil, false, "false"} {
		sub := fmt.Sprintf("mallory%d", i)
		claims := iss.claims(sub, map[string]any{"email": "ines@example.com", "email_verified": verified})
		mallory := iss.token(t, claims)
		require.Empty(t, s.myInvitations(mallory), "email_verified %v", verified)
		s.acceptRefused(mallory, token, 403, "permission_denied", "")
		users := s.usersBySubject(sub)
		require.Len(t, users, 1)
		require.Empty(t, users[0].PrimaryEmail, "email_verified %v", verified)
	}

	// The string "true" some providers send counts as verified.
	ines := iss.token(t, iss.claims("ines", map[string]any{"email": "ines@example.com", "email_verified": "true"}))
	require.Len(t, s.myInvitations(ines), 1)
	s.must(200, "POST", "/api/invitations/accept", ines, map[string]any{"token": token})
}

// TestInvitationListTotalPastTheEnd: a page past the end of a project's
// invitations answers their real total (the window count read 0 there).
func TestInvitationListTotalPastTheEnd(t *testing.T) {
	t.Parallel()
	s, _, project := newInvitingServer(t)
	base := "/api/projects/" + project + "/invitations"
	for _, email := range []string{"ann@example.com", "ben@example.com"} {
		s.must(201, "POST", base, s.admin, map[string]any{"email": email, "role": "viewer"})
	}
	var list struct {
		Data  []map[string]any `json:"data"`
		Total int              `json:"total"`
	}
	s.must(200, "GET", base+"?offset=5", s.admin, nil).Decode(t, &list)
	require.Empty(t, list.Data)
	require.Equal(t, 2, list.Total)
}
