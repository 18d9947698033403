package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/graphmill/graphmill/internal/startstop"
)

// Streams is what owns a server's long-lived responses (the event hub's
// streams, the MCP server's sessions): its Stop ends them.
type Streams interface {
	Stop(ctx context.Context) error
}

// Server is an HTTP server, one of the long-running parts: Start binds its
// address and serves, Stop drains.
type Server struct {
	name    string
	addr    string
	srv     *http.Server
	logger  *slog.Logger
	streams []Streams
	life    startstop.Base

	mu       sync.Mutex
	ln       net.Listener
	serveErr error
}

// NewServer returns a server of h on addr. There is no server-wide write
// timeout: it would cut the event and MCP streams; other routes get
// RouteTimeout from the router. streams are stopped first when the server
// stops: long-lived responses never end by themselves, and a drain would
// wait for them until its deadline.
func NewServer(name, addr string, h http.Handler, logger *slog.Logger, streams ...Streams) *Server {
	return &Server{
		name: name, addr: addr, logger: logger, streams: streams,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
	}
}

// Addr is the bound address ("" before Start), so that ":0" addresses are
// known once the server runs.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Start binds the address (ctx bounds that) and serves in the background
// until Stop.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(ctx); err != nil {
		return fmt.Errorf("%s server: %w", s.name, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen on %s for %s: %w", s.addr, s.name, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.logger.Info("listening", "server", s.name, "addr", s.Addr())
	s.life.Go(func(context.Context) {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			return
		}
		s.mu.Lock()
		s.serveErr = err
		s.mu.Unlock()
	})
	return nil
}

// Stop stops the streams, then stops accepting requests and waits for
// those in flight until ctx ends, then closes what is left.
func (s *Server) Stop(ctx context.Context) error {
	var errList []error
	for _, st := range s.streams {
		errList = append(errList, st.Stop(ctx))
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
		errList = append(errList, fmt.Errorf("shutdown %s server: %w", s.name, err))
	}
	// Serve returns as soon as its listener is closed, which Shutdown and
	// Close did: this wait is short whatever ctx says.
	_ = s.life.Stop(context.WithoutCancel(ctx))
	s.mu.Lock()
	errList = append(errList, s.serveErr)
	s.mu.Unlock()
	return errors.Join(errList...)
}
