// Package s3 is the connector for the objects of an S3-compatible bucket
// (AWS S3, MinIO, Ceph, R2, ...), through github.com/minio/minio-go/v7.
//
// Every object under the optional prefix is one item: its key is the
// external id and its ETag the version, so that an object whose ETag is
// the one stored by the last sync is reported Unchanged without being
// downloaded. Objects larger than the connector's cap are not downloaded
// and not reported (a warning names them in the sync log): the integration
// domain then treats them as gone, which is what they are for the project.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
)

// Config field names.
const (
	FieldEndpoint        = "endpoint"
	FieldBucket          = "bucket"
	FieldAccessKeyID     = "access_key_id"
	FieldSecretAccessKey = "secret_access_key"
	FieldPrefix          = "prefix"
	FieldRegion          = "region"
	FieldUseSSL          = "use_ssl"
)

// MaxObjectBytesDefault caps the size of an object the connector
// downloads when New is given no cap (the default upload cap, 100 MiB).
const MaxObjectBytesDefault int64 = 100 << 20

// Retries of one S3 request: a few during a sync, none for a test (the
// operator waits for its answer).
const (
	walkRetries = 3
	testRetries = 1
)

// Connector is the s3 connector.
type Connector struct {
	maxObjectBytes int64
}

// New returns the s3 connector. Objects larger than maxObjectBytes are
// skipped without being downloaded; maxObjectBytes <= 0 means
// MaxObjectBytesDefault.
func New(maxObjectBytes int64) *Connector {
	if maxObjectBytes <= 0 {
		maxObjectBytes = MaxObjectBytesDefault
	}
	return &Connector{maxObjectBytes: maxObjectBytes}
}

// Descriptor implements connector.Connector.
func (c *Connector) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name:        "s3",
		DisplayName: "S3 bucket",
		Description: "Objects of an S3-compatible bucket (AWS S3, MinIO, Ceph, R2), optionally under a prefix, synced incrementally by ETag.",
		Category:    "storage",
		AuthType:    "access_key",
		RequiredFields: []connector.Field{
			{Name: FieldEndpoint, Type: connector.TypeString, Target: true, Description: "Host and optional port of the S3 API, without scheme (s3.eu-west-1.amazonaws.com, minio.example.com:9000)."},
			{Name: FieldBucket, Type: connector.TypeString, Target: true, Description: "Name of the bucket."},
			{Name: FieldAccessKeyID, Type: connector.TypeString, Secret: true, Description: "Access key id."},
			{Name: FieldSecretAccessKey, Type: connector.TypeString, Secret: true, Description: "Secret access key."},
		},
		OptionalFields: []connector.Field{
			{Name: FieldPrefix, Type: connector.TypeString, Description: "Only objects whose key starts with this prefix are synced."},
			{Name: FieldRegion, Type: connector.TypeString, Description: "Region of the bucket; asked from the endpoint when absent."},
			{Name: FieldUseSSL, Type: connector.TypeBoolean, Description: "Use HTTPS (default true)."},
		},
		DocumentationURL: "https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html",
	}
}

// Validate implements connector.Connector.
func (c *Connector) Validate(cfg connector.Config) error {
	endpoint := cfg.String(FieldEndpoint)
	u, err := url.Parse("https://" + endpoint)
	if strings.ContainsAny(endpoint, "/?#@ ") || err != nil || u.Host != endpoint || u.Hostname() == "" {
		return errs.Errorf(errs.Invalid, "%s must be a host with an optional port, without scheme or path (%s chooses http or https)", FieldEndpoint, FieldUseSSL)
	}
	if port, err := strconv.Atoi(u.Port()); strings.HasSuffix(endpoint, ":") || u.Port() != "" && (err != nil || port < 1 || port > 65535) {
		return errs.Errorf(errs.Invalid, "%s: the port must be a number from 1 to 65535", FieldEndpoint)
	}
	if err := s3utils.CheckValidBucketName(cfg.String(FieldBucket)); err != nil {
		return errs.Errorf(errs.Invalid, "%s: %s", FieldBucket, err.Error())
	}
	for _, name := range []string{FieldAccessKeyID, FieldSecretAccessKey} {
		if cfg.String(name) == "" {
			return errs.Errorf(errs.Invalid, "%s must not be empty", name)
		}
	}
	return nil
}

// Test implements connector.Connector: it authenticates and lists at most
// one object of the bucket (under the prefix).
func (c *Connector) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	client, done, err := newClient(env, cfg, testRetries)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, ok := <-client.ListObjects(ctx, cfg.String(FieldBucket), minio.ListObjectsOptions{
		Prefix: cfg.String(FieldPrefix), Recursive: true, MaxKeys: 1,
	})
	if ok && first.Err != nil {
		return describe(cfg, first.Err)
	}
	return nil
}

// Walk implements connector.Connector.
func (c *Connector) Walk(ctx context.Context, env connector.Env, cfg connector.Config, _ connector.Options, w connector.Walker) error {
	client, done, err := newClient(env, cfg, walkRetries)
	if err != nil {
		return err
	}
	defer done()
	bucket := cfg.String(FieldBucket)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine when the walk ends early
	for obj := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{
		Prefix: cfg.String(FieldPrefix), Recursive: true,
	}) {
		if obj.Err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("list bucket: %w", describe(cfg, obj.Err))
		}
		if err := c.visit(ctx, client, bucket, obj, w); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// visit reports one listed object to w.
func (c *Connector) visit(ctx context.Context, client *minio.Client, bucket string, obj minio.ObjectInfo, w connector.Walker) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.HasSuffix(obj.Key, "/") && obj.Size == 0 {
		return nil // a "folder" marker, not a document
	}
	if obj.Size > c.maxObjectBytes {
		w.Log(ctx, connector.LevelWarn, "object larger than the size cap skipped", map[string]any{
			"key": obj.Key, "size": obj.Size, "max_bytes": c.maxObjectBytes,
		})
		return nil
	}
	etag := strings.Trim(obj.ETag, `"`)
	if known, ok := w.Known(obj.Key); ok && etag != "" && known == etag {
		return w.Unchanged(ctx, obj.Key)
	}
	it, err := c.fetch(ctx, client, bucket, obj.Key)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.Failed(ctx, obj.Key, err)
		return nil
	}
	if err := w.Item(ctx, it); err != nil && !errors.Is(err, connector.ErrSkipItem) {
		return err
	}
	return nil
}

// fetch downloads one object.
func (c *Connector) fetch(ctx context.Context, client *minio.Client, bucket, key string) (connector.Item, error) {
	obj, err := client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return connector.Item{}, fmt.Errorf("get object: %w", err)
	}
	defer func() { _ = obj.Close() }()
	// Reading first makes one GET whose headers Stat then returns.
	data, err := io.ReadAll(io.LimitReader(obj, c.maxObjectBytes+1))
	if err != nil {
		return connector.Item{}, fmt.Errorf("read object: %w", err)
	}
	if int64(len(data)) > c.maxObjectBytes {
		return connector.Item{}, fmt.Errorf("object is larger than the cap of %d bytes", c.maxObjectBytes)
	}
	info, err := obj.Stat()
	if err != nil {
		return connector.Item{}, fmt.Errorf("get object: %w", err)
	}
	name := path.Base(key)
	return connector.Item{
		ExternalID: key,
		Version:    strings.Trim(info.ETag, `"`),
		Title:      name,
		URL:        "s3://" + bucket + "/" + key,
		Filename:   name,
		MimeType:   mediaType(info.ContentType),
		Content:    data,
		Modified:   info.LastModified,
	}, nil
}

// mediaType is the object's Content-Type without parameters, or "" when
// it is absent or malformed: an upload's declared type. The document
// package takes it from there as for an upload (a generic type means the
// extension, else the content, decides), so no extension list lives here.
func mediaType(contentType string) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	return ""
}

// newClient builds a minio client whose every connection goes through
// env; done releases the connections of a transport built here.
func newClient(env connector.Env, cfg connector.Config, retries int) (client *minio.Client, done func(), err error) {
	transport, done, err := roundTripper(env)
	if err != nil {
		return nil, nil, err
	}
	client, err = minio.New(cfg.String(FieldEndpoint), &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.String(FieldAccessKeyID), cfg.String(FieldSecretAccessKey), ""),
		Secure:     cfg.Bool(FieldUseSSL, true),
		Region:     cfg.String(FieldRegion),
		Transport:  transport,
		MaxRetries: retries,
	})
	if err != nil {
		done()
		return nil, nil, errs.Errorf(errs.Invalid, "%s: %s", FieldEndpoint, err.Error())
	}
	return client, done, nil
}

// roundTripper is env's HTTP transport, or one dialling through env.Dial
// (closed by done). It fails closed: a client without a transport would
// use http.DefaultTransport, past the egress guard.
func roundTripper(env connector.Env) (rt http.RoundTripper, done func(), err error) {
	switch {
	case env.HTTP != nil && env.HTTP.Transport != nil:
		return env.HTTP.Transport, func() {}, nil
	case env.Dial != nil:
		t := egress.DialTransport(env.Dial)
		return t, t.CloseIdleConnections, nil
	}
	return nil, nil, errors.New("s3: no network access given to the connector (neither an HTTP transport nor a dialer)")
}

// describe turns an S3 or network error into a message for the operator.
// It never contains the credentials.
func describe(cfg connector.Config, err error) error {
	bucket, endpoint := cfg.String(FieldBucket), cfg.String(FieldEndpoint)
	switch resp := minio.ToErrorResponse(err); resp.Code {
	case "":
	case "InvalidAccessKeyId":
		return fmt.Errorf("the endpoint %s does not know this access key id", endpoint)
	case "SignatureDoesNotMatch":
		return fmt.Errorf("the endpoint %s rejected the secret access key", endpoint)
	case "NoSuchBucket":
		return fmt.Errorf("bucket %q does not exist at %s", bucket, endpoint)
	case "AccessDenied", "AllAccessDisabled":
		return fmt.Errorf("access to bucket %q denied for this access key", bucket)
	default:
		return fmt.Errorf("the endpoint %s answered %s (HTTP %d)", endpoint, resp.Code, resp.StatusCode)
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("cannot reach %s: %w", endpoint, err)
	}
	return fmt.Errorf("s3 %s: %w", endpoint, err)
}
