package s3_test

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/connectortest"
	"github.com/graphmill/graphmill/internal/connector/s3"
	"github.com/graphmill/graphmill/internal/errs"
)

const (
	testBucket = "docs-bucket"
	testKeyID  = "AKIDGRAPHMILLTEST"
	testSecret = "s3cr3t-Graphmill-key-value"
)

// fakeS3 is a gofakes3 server behind a SigV4 check (gofakes3 checks no
// signature) that counts the object downloads it serves.
type fakeS3 struct {
	backend  *s3mem.Backend
	srv      *httptest.Server
	gets     atomic.Int64 // GET or HEAD of one object
	requests atomic.Int64 // every request
	mu       sync.Mutex
	fetched  []string
}

func newFakeS3(t *testing.T) *fakeS3 { return startFakeS3(t, false) }

// startFakeS3 starts the fake, over TLS when tls is set.
func startFakeS3(t *testing.T, tls bool) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	require.NoError(t, f.backend.CreateBucket(testBucket))
	h := gofakes3.New(f.backend).Server()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if code := checkSigV4(r, map[string]string{testKeyID: testSecret}); code != "" {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>denied</Message></Error>`))
			return
		}
		if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2); len(parts) == 2 && parts[1] != "" &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead) {
			f.gets.Add(1)
			f.mu.Lock()
			f.fetched = append(f.fetched, parts[1])
			f.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	if tls {
		f.srv.StartTLS()
	} else {
		f.srv.Start()
	}
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeS3) put(t *testing.T, key, contentType, body string) {
	t.Helper()
	// The HTTP PUT path of gofakes3 records Last-Modified; its backend
	// does not, and S3 always sends it.
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
	if contentType == "" {
		contentType = "binary/octet-stream" // what S3 stores for an object put without one
	}
	meta["Content-Type"] = contentType
	_, err := f.backend.PutObject(testBucket, key, meta, strings.NewReader(body), int64(len(body)), nil)
	require.NoError(t, err)
}

func (f *fakeS3) resetCounts() {
	f.gets.Store(0)
	f.mu.Lock()
	f.fetched = nil
	f.mu.Unlock()
}

func (f *fakeS3) fetchedKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.fetched...)
}

func (f *fakeS3) config(mod func(c map[string]any)) connector.Config {
	c := map[string]any{
		"endpoint":          f.srv.Listener.Addr().String(),
		"bucket":            testBucket,
		"access_key_id":     testKeyID,
		"secret_access_key": testSecret,
		"use_ssl":           f.srv.TLS != nil,
		"region":            "us-east-1",
	}
	if mod != nil {
		mod(c)
	}
	return connectortest.Config(c)
}

// checkSigV4 verifies an AWS Signature Version 4 header signature and
// returns the S3 error code of a failure ("" when valid).
func checkSigV4(r *http.Request, secrets map[string]string) string {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "AccessDenied"
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 {
		return "AuthorizationHeaderMalformed"
	}
	secret, ok := secrets[cred[0]]
	if !ok {
		return "InvalidAccessKeyId"
	}
	var headers strings.Builder
	for h := range strings.SplitSeq(fields["SignedHeaders"], ";") {
		vals := r.Header.Values(h)
		if h == "host" {
			vals = []string{r.Host}
		}
		for i, v := range vals {
			vals[i] = strings.Join(strings.Fields(v), " ")
		}
		headers.WriteString(h + ":" + strings.Join(vals, ",") + "\n")
	}
	canonical := strings.Join([]string{
		r.Method, r.URL.EscapedPath(), strings.ReplaceAll(r.URL.Query().Encode(), "+", "%20"),
		headers.String(), fields["SignedHeaders"], r.Header.Get("X-Amz-Content-Sha256"),
	}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + r.Header.Get("X-Amz-Date") + "\n" + strings.Join(cred[1:], "/") + "\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + secret)
	for _, s := range append(cred[1:], toSign) {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		key = m.Sum(nil)
	}
	if !hmac.Equal([]byte(hex.EncodeToString(key)), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch"
	}
	return ""
}

// walk walks f's bucket with cfg (f.config(nil) when nil) and the cap
// maxBytes, reporting to w; the walk must succeed.
func walk(t *testing.T, f *fakeS3, cfg connector.Config, maxBytes int64, w *connectortest.Walker) *connectortest.Walker {
	t.Helper()
	if cfg == nil {
		cfg = f.config(nil)
	}
	require.NoError(t, s3.New(maxBytes).Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w))
	return w
}

func plainEnv() connector.Env { return connector.Env{HTTP: connectortest.Client()} }

func seed(t *testing.T, f *fakeS3) {
	t.Helper()
	f.put(t, "docs/a.md", "text/markdown; charset=utf-8", "# Alpha\n\nfirst")
	f.put(t, "docs/b.txt", "", "bravo text")
	f.put(t, "other/c.html", "text/html", "<html><body>charlie</body></html>")
	f.put(t, "docs/", "", "") // a folder marker, not a document
}

func TestWalkFirstSync(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	w := walk(t, f, nil, 0, connectortest.NewWalker(nil))

	require.Equal(t, []string{"docs/a.md", "docs/b.txt", "other/c.html"}, w.Reported())
	require.Empty(t, w.UnchangedIDs())
	require.Empty(t, w.FailedItems())
	a := w.Items()["docs/a.md"]
	require.Equal(t, "# Alpha\n\nfirst", string(a.Content))
	require.Equal(t, "text/markdown", a.MimeType)
	require.Equal(t, "a.md", a.Filename)
	require.Equal(t, "s3://"+testBucket+"/docs/a.md", a.URL)
	require.False(t, a.Modified.IsZero())
	sum := md5hex("# Alpha\n\nfirst")
	require.Equal(t, sum, a.Version, "the version is the ETag without quotes")
	require.Equal(t, "binary/octet-stream", w.Items()["docs/b.txt"].MimeType, "a generic type: the document package decides, as for an upload")
	require.Equal(t, "text/html", w.Items()["other/c.html"].MimeType)
	require.Equal(t, int64(3), f.gets.Load(), "one download per object, none for the folder marker")
}

func TestWalkUnchangedDownloadsNothing(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	first := walk(t, f, nil, 0, connectortest.NewWalker(nil))
	f.resetCounts()
	again := walk(t, f, nil, 0, first.Next())
	require.Empty(t, again.Items())
	require.ElementsMatch(t, []string{"docs/a.md", "docs/b.txt", "other/c.html"}, again.UnchangedIDs())
	require.Zero(t, f.gets.Load(), "no GetObject for an object whose ETag is known")
}

func TestWalkChangedAndRemovedObjects(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	first := walk(t, f, nil, 0, connectortest.NewWalker(nil))

	f.put(t, "docs/a.md", "text/markdown", "# Alpha\n\nedited")
	_, err := f.backend.DeleteObject(testBucket, "docs/b.txt")
	require.NoError(t, err)
	f.resetCounts()

	next := walk(t, f, nil, 0, first.Next())
	require.Equal(t, []string{"docs/a.md", "other/c.html"}, next.Reported(), "the removed object is not reported")
	require.Len(t, next.Items(), 1)
	a := next.Items()["docs/a.md"]
	require.Equal(t, "# Alpha\n\nedited", string(a.Content))
	require.Equal(t, md5hex("# Alpha\n\nedited"), a.Version)
	require.NotEqual(t, first.Items()["docs/a.md"].Version, a.Version)
	require.Equal(t, []string{"other/c.html"}, next.UnchangedIDs())
	require.Equal(t, []string{"docs/a.md"}, f.fetchedKeys(), "only the changed object is downloaded")
}

func TestWalkPrefix(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	w := walk(t, f, f.config(func(c map[string]any) { c["prefix"] = "docs/" }), 0, connectortest.NewWalker(nil))
	require.Equal(t, []string{"docs/a.md", "docs/b.txt"}, w.Reported())
	require.ElementsMatch(t, []string{"docs/a.md", "docs/b.txt"}, f.fetchedKeys())
}

func TestWalkSkipsObjectsAboveTheCap(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	f.put(t, "small.txt", "text/plain", "tiny")
	f.put(t, "big.txt", "text/plain", strings.Repeat("x", 64))
	w := walk(t, f, nil, 32, connectortest.NewWalker(nil))
	require.Equal(t, []string{"small.txt"}, w.Reported())
	require.Empty(t, w.FailedItems(), "a too-large object does not make the listing incomplete")
	require.Equal(t, []string{"small.txt"}, f.fetchedKeys(), "the large object is never downloaded")
	require.Equal(t, []connectortest.Log{{
		Level: connector.LevelWarn, Message: "object larger than the size cap skipped",
		Details: map[string]any{"key": "big.txt", "size": int64(64), "max_bytes": int64(32)},
	}}, w.Logs())
}

func TestWalkItemErrors(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	c := s3.New(0)

	skip := connectortest.NewWalker(nil)
	skip.ItemFunc = func(it connector.Item) error {
		if it.ExternalID == "docs/a.md" {
			return connector.ErrSkipItem
		}
		return nil
	}
	walk(t, f, nil, 0, skip)
	require.Equal(t, []string{"docs/b.txt", "other/c.html"}, skip.Reported(), "a skipped item does not stop the walk")

	boom := errors.New("database gone")
	stop := connectortest.NewWalker(nil)
	stop.ItemFunc = func(connector.Item) error { return boom }
	require.ErrorIs(t, c.Walk(t.Context(), plainEnv(), f.config(nil), connector.Options{}, stop), boom)
	require.Empty(t, stop.Items())
}

func TestWalkStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := connectortest.NewWalker(nil)
	w.ItemFunc = func(connector.Item) error {
		cancel() // the sync is cancelled while the first item is stored
		return nil
	}
	err := s3.New(0).Walk(ctx, plainEnv(), f.config(nil), connector.Options{}, w)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, w.Items(), 1, "nothing is fetched after the cancel")
	require.Equal(t, int64(1), f.gets.Load())
}

func TestWalkFailsWhenTheListingFails(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	w := connectortest.NewWalker(map[string]string{"docs/a.md": "x"})
	cfg := f.config(func(c map[string]any) { c["bucket"] = "no-such-bucket" })
	err := s3.New(0).Walk(t.Context(), plainEnv(), cfg, connector.Options{}, w)
	require.Error(t, err, "a failed listing must not look complete (it would delete every document)")
	require.Contains(t, err.Error(), `bucket "no-such-bucket" does not exist`)
	require.Empty(t, w.Reported())
}

func TestWalkUsesTheEnvNetwork(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)

	var dials atomic.Int64
	dialer := &net.Dialer{}
	env := connector.Env{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}}
	w := connectortest.NewWalker(nil)
	require.NoError(t, s3.New(0).Walk(t.Context(), env, f.config(nil), connector.Options{}, w))
	require.Len(t, w.Items(), 3)
	require.Positive(t, dials.Load(), "connections are dialled through Env.Dial")

	var trips atomic.Int64
	base := connectortest.Transport()
	env = connector.Env{HTTP: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		trips.Add(1)
		return base.RoundTrip(r)
	})}}
	w = connectortest.NewWalker(nil)
	require.NoError(t, s3.New(0).Walk(t.Context(), env, f.config(nil), connector.Options{}, w))
	require.Len(t, w.Items(), 3)
	require.GreaterOrEqual(t, trips.Load(), int64(4), "the listing and the three downloads go through Env.HTTP's transport")

	refused := connector.Env{Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("egress refused: private address")
	}}
	err := s3.New(0).Walk(t.Context(), refused, f.config(nil), connector.Options{}, connectortest.NewWalker(nil))
	require.ErrorContains(t, err, "egress refused")

	// A client without a transport (http.DefaultTransport, past the
	// egress guard) and no Env at all are refused: nothing reaches the
	// endpoint.
	served := f.requests.Load()
	for _, env := range []connector.Env{{HTTP: &http.Client{}}, {}} {
		w = connectortest.NewWalker(nil)
		err = s3.New(0).Walk(t.Context(), env, f.config(nil), connector.Options{}, w)
		require.ErrorContains(t, err, "no network access given to the connector")
		require.Empty(t, w.Items())
	}
	require.Equal(t, served, f.requests.Load())
}

func TestWalkOverTLS(t *testing.T) {
	t.Parallel()
	f := startFakeS3(t, true)
	seed(t, f)
	cfg := f.config(func(m map[string]any) { delete(m, "use_ssl") }) // https by default
	w := connectortest.NewWalker(nil)
	env := connector.Env{HTTP: f.srv.Client()} // trusts the test certificate
	require.NoError(t, s3.New(0).Walk(t.Context(), env, cfg, connector.Options{}, w))
	require.Equal(t, []string{"docs/a.md", "docs/b.txt", "other/c.html"}, w.Reported())

	err := s3.New(0).Test(t.Context(), plainEnv(), cfg)
	require.ErrorContains(t, err, "cannot reach "+f.srv.Listener.Addr().String(), "the default transport does not trust the test certificate")
	require.NotContains(t, err.Error(), testSecret)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTest(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	seed(t, f)
	c := s3.New(0)
	ctx := t.Context()

	require.NoError(t, c.Test(ctx, plainEnv(), f.config(nil)))
	require.NoError(t, c.Test(ctx, plainEnv(), f.config(func(m map[string]any) { delete(m, "region") })), "region asked from the endpoint")

	closed := httptest.NewServer(http.NotFoundHandler())
	unreachable := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()

	cases := []struct {
		name string
		mod  func(map[string]any)
		want string
	}{
		{"wrong key id", func(m map[string]any) { m["access_key_id"] = "AKIDUNKNOWN" }, "does not know this access key id"},
		{"wrong secret", func(m map[string]any) { m["secret_access_key"] = "wrong-" + testSecret }, "rejected the secret access key"},
		{"no such bucket", func(m map[string]any) { m["bucket"] = "missing-bucket" }, `bucket "missing-bucket" does not exist`},
		{"unreachable", func(m map[string]any) { m["endpoint"] = unreachable }, "cannot reach " + unreachable},
	}
	for _, tc := range cases {
		err := c.Test(ctx, plainEnv(), f.config(tc.mod))
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
		require.NotContains(t, err.Error(), testSecret, tc.name)
		require.NotContains(t, err.Error(), "s3cr3t", tc.name)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	c := s3.New(0)
	good := map[string]any{"endpoint": "minio.example.com:9000", "bucket": "my-bucket", "access_key_id": "a", "secret_access_key": "b"}
	require.NoError(t, c.Validate(connectortest.Config(good)))

	for _, tc := range []struct {
		field string
		value any
	}{
		{"endpoint", "https://minio.example.com"},
		{"endpoint", "minio.example.com/path"},
		{"endpoint", "user@minio.example.com"},
		{"endpoint", ""},
		{"endpoint", "minio.example.com:99999"},
		{"endpoint", "minio.example.com:0"},
		{"endpoint", "minio.example.com:"},
		{"endpoint", "minio.example.com:http"},
		{"bucket", "x"},
		{"bucket", "bad/bucket"},
		{"bucket", ""},
		{"secret_access_key", ""},
	} {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		m[tc.field] = tc.value
		err := c.Validate(connectortest.Config(m))
		require.Error(t, err, "%s=%v", tc.field, tc.value)
		require.Equal(t, errs.Invalid, errs.CodeOf(err))
		require.Contains(t, err.Error(), tc.field)
	}
}

func TestDescriptor(t *testing.T) {
	t.Parallel()
	d := s3.New(0).Descriptor()
	require.Equal(t, "s3", d.Name)
	require.Equal(t, "storage", d.Category)
	byName := map[string]connector.Field{}
	for _, fld := range append(d.RequiredFields, d.OptionalFields...) {
		byName[fld.Name] = fld
	}
	require.True(t, byName["endpoint"].Target)
	require.True(t, byName["bucket"].Target)
	require.True(t, byName["access_key_id"].Secret)
	require.True(t, byName["secret_access_key"].Secret)
	require.Equal(t, connector.TypeBoolean, byName["use_ssl"].Type)
	require.Len(t, d.RequiredFields, 4)
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // S3 ETags of single-part objects are MD5
	return hex.EncodeToString(sum[:])
}

// TestWalkMediaTypeIsTheDeclaredOne: an object's media type is its
// Content-Type only; a generic one stays generic, so the document
// package decides from the name, else the content, as for an upload (a
// .json or .log object is then text, as an uploaded one is, not refused as
// the type its extension maps to).
func TestWalkMediaTypeIsTheDeclaredOne(t *testing.T) {
	t.Parallel()
	f := newFakeS3(t)
	f.put(t, "data.json", "", `{"a": 1}`)
	f.put(t, "app.log", "", "started")
	f.put(t, "page", "text/html; charset=utf-8", "<p>x</p>")
	w := walk(t, f, nil, 0, connectortest.NewWalker(nil))
	require.Equal(t, "binary/octet-stream", w.Items()["data.json"].MimeType)
	require.Equal(t, "binary/octet-stream", w.Items()["app.log"].MimeType)
	require.Equal(t, "text/html", w.Items()["page"].MimeType)
}
