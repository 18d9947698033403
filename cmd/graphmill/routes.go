package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/danielgtaylor/huma/v2"
	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/embeddingpolicy"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/health"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/scheduler"
	"github.com/graphmill/graphmill/internal/search"
	"github.com/graphmill/graphmill/internal/superadmin"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// apiServices are the services behind the routes of the OpenAPI document.
type apiServices struct {
	health        *health.Service
	production    bool
	tenancy       *tenancy.Service
	invitations   *tenancy.Invitations
	providers     *provider.Service
	notifications *notification.Service
	tasks         *task.Service
	activity      *activity.Service
	packs         *templatepack.Service
	graph         *graph.Service
	policies      *embeddingpolicy.Service
	documents     *document.Service
	uploads       document.UploadLimits
	extraction    *extraction.Service
	discovery     *discovery.Service
	integrations  *integration.Service
	search        *search.Service
	chat          *chat.Service
	mcpRegistry   *mcpregistry.Service
	agents        *agent.Service
	jobs          *jobqueue.Client
	embeddings    *embedding.Service
	emails        *email.Service
	scheduler     *scheduler.Scheduler
	superadmin    *superadmin.Service
	audit         *audit.Service
}

// registerAPI registers every route of the OpenAPI document on api
// (Main.Start; the event stream, MCP and the console are plain handlers
// outside it). Registration reads nothing from the services: handlers and
// owner resolvers keep them for requests, so openAPIDocument registers
// the same routes with none.
func registerAPI(api huma.API, s apiServices) {
	health.Register(api, s.health, s.production)
	tenancy.Register(api, s.tenancy)
	tenancy.RegisterInvitations(api, s.invitations)
	provider.Register(api, s.providers)
	notification.Register(api, s.notifications)
	task.Register(api, s.tasks)
	activity.Register(api, s.activity)
	templatepack.Register(api, s.packs)
	graph.Register(api, s.graph)
	embeddingpolicy.Register(api, s.policies)
	document.Register(api, s.documents, s.uploads)
	extraction.Register(api, s.extraction)
	discovery.Register(api, s.discovery)
	integration.Register(api, s.integrations)
	search.Register(api, s.search)
	chat.Register(api, s.chat)
	mcpregistry.Register(api, s.mcpRegistry)
	agent.Register(api, s.agents)
	jobqueue.Register(api, s.jobs)
	superadmin.Register(api, s.superadmin, s.tenancy, s.extraction, s.documents, s.embeddings, s.audit)
	superadmin.RegisterSyncJobs(api, s.superadmin, s.integrations, s.audit)
	superadmin.RegisterEmail(api, s.emails)
	scheduler.Register(api, s.scheduler)
}

// openAPICommand is graphmill openapi: the API's OpenAPI document,
// without a server or database (go generate ./internal/client uses it).
func openAPICommand(stdout io.Writer) *cobra.Command {
	var version string
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the API's OpenAPI document (3.1, or 3.0 as huma downgrades it) without a server or database",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			paths := map[string]string{"3.1": "/api/openapi.json", "3.0": "/api/openapi-3.0.json"}
			path, ok := paths[version]
			if !ok {
				return usageErr("--openapi is 3.1 or 3.0, not %q", version)
			}
			doc, err := openAPIDocument(path)
			if err != nil {
				return err
			}
			_, err = stdout.Write(doc)
			return err
		},
	}
	cmd.Flags().StringVar(&version, "openapi", "3.1", "the OpenAPI version: 3.1 or 3.0")
	return cmd
}

// openAPIDocument is the API's OpenAPI document at path (/api/openapi.json,
// or the 3.0 downgrade /api/openapi-3.0.json), built without a database:
// the routes registered with no services and the document served by
// huma's own handler.
func openAPIDocument(path string) ([]byte, error) {
	router := httpapi.NewRouter(httpapi.RouterConfig{Logger: slog.New(slog.DiscardHandler)})
	registerAPI(httpapi.NewAPI(router, nil, health.Version()), apiServices{})
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, http.NoBody))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("openapi document %s: %d %s", path, rec.Code, rec.Body)
	}
	return append(bytes.TrimRight(rec.Body.Bytes(), "\n"), '\n'), nil
}
