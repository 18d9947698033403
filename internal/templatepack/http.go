package templatepack

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	listIn struct {
		httpapi.PageParams
	}
	packIn struct {
		ID string `path:"id"`
	}
	installedListIn struct {
		ProjectID string `path:"projectId"`
		httpapi.PageParams
	}
	versionsIn struct {
		ID string `path:"id"`
		httpapi.PageParams
	}
	versionIn struct {
		ID      string `path:"id"`
		Version string `path:"version" doc:"A version of the pack, as its version field shows it (1.0.2)."`
	}
	installIn struct {
		ProjectID string `path:"projectId"`
		PackID    string `path:"packId"`
	}
)

// Register adds the template pack routes.
func Register(api huma.API, svc *Service) {
	read := auth.Rule{Scope: auth.SchemaRead, Resource: auth.Authenticated}
	pack := &auth.Owner{Param: "id", Kind: "template-pack", Resolve: auth.InOrg(svc.PackOrg), NotFound: ErrNotFound}
	h := handlers{svc: svc}
	projectRead := auth.Rule{Scope: auth.SchemaRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	projectWrite := auth.Rule{Scope: auth.SchemaWrite, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}

	huma.Register(api, httpapi.Op("list-template-packs", http.MethodGet, "/api/template-packs",
		"List the template packs you can see: built-in ones and those of your projects' organizations", read), h.listTemplatePacks)
	huma.Register(api, httpapi.Op("get-template-pack", http.MethodGet, "/api/template-packs/{id}", "Get a template pack", read.WithOwner(pack)), h.getTemplatePack)
	huma.Register(api, httpapi.Op("list-template-pack-versions", http.MethodGet, "/api/template-packs/{id}/versions",
		"List the versions of a template pack, newest first, with what each changed", read.WithOwner(pack)), h.listTemplatePackVersions)
	huma.Register(api, httpapi.Op("get-template-pack-version", http.MethodGet, "/api/template-packs/{id}/versions/{version}",
		"Get a version of a template pack with the pack's definition as of that version", read.WithOwner(pack).WithKeys("version")), h.getTemplatePackVersion)
	huma.Register(api, httpapi.Op("list-installed-template-packs", http.MethodGet, "/api/projects/{projectId}/template-packs",
		"List the packs installed in a project, in install order (none: the built-in default pack applies)", projectRead), h.listInstalledTemplatePacks)
	huma.Register(api, httpapi.Op("install-template-pack", http.MethodPost, "/api/projects/{projectId}/template-packs/{packId}",
		"Install a template pack in a project (201; 200 when it was installed already)", projectWrite.WithKeys("packId")), h.installTemplatePack)
	huma.Register(api, httpapi.Op("uninstall-template-pack", http.MethodDelete, "/api/projects/{projectId}/template-packs/{packId}",
		"Uninstall a template pack from a project (existing objects keep their types)", projectWrite.WithKeys("packId")), h.uninstallTemplatePack)
}

// handlers are the template pack routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listTemplatePacks(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Pack]], error) {
	list, total, err := h.svc.ListPacks(ctx, auth.PrincipalFrom(ctx), in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) getTemplatePack(ctx context.Context, _ *packIn) (*httpapi.Out[Pack], error) {
	return httpapi.Reply(h.svc.GetPack(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ResourceID))
}

func (h handlers) listTemplatePackVersions(ctx context.Context, in *versionsIn) (*httpapi.Out[httpapi.List[PackVersion]], error) {
	list, total, err := h.svc.ListVersions(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ResourceID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) getTemplatePackVersion(ctx context.Context, in *versionIn) (*httpapi.Out[PackVersionDetail], error) {
	return httpapi.Reply(h.svc.GetVersion(ctx, auth.PrincipalFrom(ctx), auth.AccessFrom(ctx).ResourceID, in.Version))
}

func (h handlers) listInstalledTemplatePacks(ctx context.Context, in *installedListIn) (*httpapi.Out[httpapi.List[InstalledPack]], error) {
	list, total, err := h.svc.ListInstalled(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) installTemplatePack(ctx context.Context, in *installIn) (*httpapi.Created[InstalledPack], error) {
	id, err := httpapi.ParseID(in.PackID, ErrNotFound)
	if err != nil {
		return nil, err
	}
	user := auth.PrincipalFrom(ctx).UserID
	p, created, err := h.svc.Install(ctx, auth.AccessFrom(ctx).ProjectID, id, &user)
	if err != nil {
		return nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return &httpapi.Created[InstalledPack]{Status: status, Body: p}, nil
}

func (h handlers) uninstallTemplatePack(ctx context.Context, in *installIn) (*httpapi.NoContent, error) {
	id, err := httpapi.ParseID(in.PackID, ErrNotInstalled)
	if err != nil {
		return nil, err
	}
	return nil, h.svc.Uninstall(ctx, auth.AccessFrom(ctx).ProjectID, id)
}
