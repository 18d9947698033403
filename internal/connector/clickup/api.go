package clickup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxResponseBytes caps one API response.
const maxResponseBytes = 32 << 20

// rateLimitRetries is how many times a request answered 429 is retried
// after the rate limit window ClickUp announces (at most rateLimitWait).
const (
	rateLimitRetries = 3
	rateLimitWait    = time.Minute
)

// client calls the ClickUp API with one API key.
type client struct {
	http *http.Client
	base string
	key  string
}

// apiError is a non-2xx answer of the API. Its message never contains the
// key (ClickUp's error bodies are not echoed either).
type apiError struct {
	status int
	path   string
}

func (e *apiError) Error() string {
	switch e.status {
	case http.StatusUnauthorized:
		return "ClickUp rejected the API key (HTTP 401)"
	case http.StatusForbidden:
		return fmt.Sprintf("the API key has no access to %s (HTTP 403)", e.path)
	case http.StatusTooManyRequests:
		return "ClickUp rate limit exceeded (HTTP 429)"
	}
	return fmt.Sprintf("ClickUp answered HTTP %d for %s", e.status, e.path)
}

// get decodes the JSON answer of GET base+path?query into out.
func (c *client) get(ctx context.Context, path string, query url.Values, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("clickup request %s: %w", path, err)
		}
		req.Header.Set("Authorization", c.key)
		req.Header.Set("Accept", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("clickup %s: %w", path, err)
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < rateLimitRetries {
			wait := resetWait(resp.Header.Get("X-RateLimit-Reset"), time.Now())
			_ = resp.Body.Close()
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		err = decode(resp, path, out)
		_ = resp.Body.Close()
		return err
	}
}

func decode(resp *http.Response, path string, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &apiError{status: resp.StatusCode, path: path}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out); err != nil {
		return fmt.Errorf("clickup %s: decode answer: %w", path, err)
	}
	return nil
}

// resetWait is how long to wait for the rate limit window that ends at
// reset (Unix seconds), between zero and rateLimitWait.
func resetWait(reset string, now time.Time) time.Duration {
	sec, err := strconv.ParseInt(reset, 10, 64)
	if err != nil {
		return rateLimitWait
	}
	return min(max(time.Unix(sec, 0).Sub(now), 0), rateLimitWait)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// API v2 shapes (only the fields the connector reads).

type team struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type teamsAnswer struct {
	Teams []team `json:"teams"`
}

type container struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Archived bool   `json:"archived"`
}

type spacesAnswer struct {
	Spaces []container `json:"spaces"`
}

type foldersAnswer struct {
	Folders []container `json:"folders"`
}

type listsAnswer struct {
	Lists []container `json:"lists"`
}

type user struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Email    string `json:"email"`
}

type task struct {
	ID                  string `json:"id"`
	Name                string `json:"name"`
	TextContent         string `json:"text_content"`
	Description         string `json:"description"`
	MarkdownDescription string `json:"markdown_description"`
	Status              struct {
		Status string `json:"status"`
	} `json:"status"`
	Assignees   []user    `json:"assignees"`
	URL         string    `json:"url"`
	DateCreated string    `json:"date_created"`
	DateUpdated string    `json:"date_updated"`
	Archived    bool      `json:"archived"`
	List        container `json:"list"`
	Space       struct {
		ID string `json:"id"`
	} `json:"space"`
}

type tasksAnswer struct {
	Tasks    []task `json:"tasks"`
	LastPage bool   `json:"last_page"`
}

// API v3 (Docs) shapes.

type doc struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Parent struct {
		ID   string `json:"id"`
		Type int    `json:"type"`
	} `json:"parent"`
	DateUpdated int64 `json:"date_updated"`
	Deleted     bool  `json:"deleted"`
	Archived    bool  `json:"archived"`
}

type docsAnswer struct {
	Docs       []doc  `json:"docs"`
	NextCursor string `json:"next_cursor"`
}

type page struct {
	ID          string `json:"id"`
	DocID       string `json:"doc_id"`
	Name        string `json:"name"`
	Content     string `json:"content"`
	DateUpdated int64  `json:"date_updated"`
	DateEdited  int64  `json:"date_edited"`
	Deleted     bool   `json:"deleted"`
	Archived    bool   `json:"archived"`
	Pages       []page `json:"pages"`
}
