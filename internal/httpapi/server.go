package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server is an HTTP server bound to its address at construction, so that
// ":0" addresses are known before serving starts.
type Server struct {
	name   string
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
	done   chan error
}

// Listen binds addr for h. There is no server-wide write timeout: it would
// cut the event and MCP streams; other routes get RouteTimeout from the
// router.
func Listen(ctx context.Context, name, addr string, h http.Handler, logger *slog.Logger) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for %s: %w", addr, name, err)
	}
	return &Server{
		name: name, ln: ln, logger: logger,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
	}, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Start serves in the background until Shutdown.
func (s *Server) Start() {
	s.done = make(chan error, 1)
	s.logger.Info("listening", "server", s.name, "addr", s.Addr())
	go func() {
		err := s.srv.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
}

// Shutdown stops accepting requests and waits for in-flight ones until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	if s.done != nil {
		if serr := <-s.done; serr != nil && err == nil {
			err = serr
		}
		s.done = nil
	}
	return err
}
