package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/document"
)

// heapPeak samples the live heap every millisecond until stopped and
// reports the highest value seen.
type heapPeak struct {
	stop chan struct{}
	done chan uint64
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan uint64)}
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-h.stop:
				h.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) Stop() uint64 {
	close(h.stop)
	return <-h.done
}

func heapNow() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkUploadMemory measures what one upload costs the server in
// memory, through the real router into PostgreSQL: bytes allocated per
// upload (B/op, the whole process: client and server run in it, the client
// sends a prebuilt body) and the peak of the live heap above its level
// before the upload (peak-MiB), for a 64 MiB multipart upload and an
// 8 MiB JSON upload. Parsing is paused so that only the upload is measured.
//
//	go test ./cmd/graphmill -run '^$' -bench UploadMemory -benchmem -benchtime 5x
func BenchmarkUploadMemory(b *testing.B) {
	s := newServer(b)
	project, _ := s.defaultProject()
	require.NoError(b, s.m.jobs.Pause(context.Background(), document.QueueParsing))
	content := bytes.Repeat([]byte("Graphmill streams uploads to storage. "), (64<<20)/38)

	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	part, err := mw.CreateFormFile("file", "big.txt")
	require.NoError(b, err)
	_, _ = part.Write(content)
	require.NoError(b, mw.Close())
	mpBody := mp.Bytes()
	mpMark := bytes.Index(mpBody, content[:64])

	jsContent := string(content[:8<<20])
	jsBody, err := json.Marshal(map[string]string{"filename": "big.txt", "content": jsContent, "mimeType": "text/plain"})
	require.NoError(b, err)
	jsMark := bytes.Index(jsBody, content[:64])

	for _, c := range []struct {
		name, contentType string
		body              []byte
		mark              int
	}{
		{"multipart-64MiB", mw.FormDataContentType(), mpBody, mpMark},
		{"json-8MiB", "application/json", jsBody, jsMark},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			var peak uint64
			n := uint64(0)
			for b.Loop() {
				b.StopTimer()
				n++
				// New bytes every time (no duplicate): a counter inside the
				// content.
				copy(c.body[c.mark:], fmt.Sprintf("%016d", n))
				runtime.GC()
				base := heapNow()
				h := startHeapPeak()
				b.StartTimer()
				req, err := http.NewRequestWithContext(context.Background(), "POST", s.base+"/api/documents", bytes.NewReader(c.body))
				require.NoError(b, err)
				req.Header.Set("Content-Type", c.contentType)
				req.Header.Set("Authorization", "Bearer "+s.admin)
				req.Header.Set("X-Project-ID", project)
				res, err := s.client.Do(req)
				require.NoError(b, err)
				raw, _ := io.ReadAll(res.Body)
				_ = res.Body.Close()
				b.StopTimer()
				p := h.Stop()
				require.Equal(b, 201, res.StatusCode, "%s", raw)
				if p > base {
					peak = max(peak, p-base)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}
