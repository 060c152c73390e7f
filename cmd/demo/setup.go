package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// errNoAnswer is a wanted status whose documented JSON answer could not be read.
func errNoAnswer(operation string) error {
	return fmt.Errorf("%s: the answer is not the documented JSON", operation)
}

// setUp creates the workspace, one ACTIVE connection per provider and their subscriptions;
// it returns the connection ids by provider.
func (d *demo) setUp(ctx context.Context) (map[string]int, error) {
	s := d.s
	created, err := d.api.hx.CreateWorkspaceWithResponse(ctx, hxapi.CreateWorkspaceJSONRequestBody{Slug: s.slug, Name: "Demo " + s.suffix})
	err = outcome("createWorkspace", created, err, http.StatusCreated)
	if isStatus(err, http.StatusUnauthorized) || isStatus(err, http.StatusForbidden) {
		return nil, fmt.Errorf("the server refused the admin token (%v): use the token of this server "+
			"(%s, or the admin-token file of its data dir)", err, envAdminToken)
	}
	if err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	if created.JSON201 == nil {
		return nil, errNoAnswer("createWorkspace")
	}
	ws := *created.JSON201

	specs := []struct {
		provider string
		body     hxapi.ConnectionRequest
		sub      hxapi.Resource
		note     string
	}{
		{"GITHUB", hxapi.ConnectionRequest{Kind: "GITHUB_APP", SourceServerUrl: ptr("https://github.com"),
			Config: &map[string]any{"installationId": s.installationID}},
			resource("repository", strconv.FormatInt(s.repoID, 10), s.fullName()),
			fmt.Sprintf("installationId %d", s.installationID)},
		{"GITLAB", hxapi.ConnectionRequest{Kind: "GITLAB", SourceServerUrl: ptr(s.gitlabURL),
			Config: &map[string]any{"groupId": s.gitlabGroupID}, Secret: ptr(s.gitlabSecret)},
			resource("project", strconv.FormatInt(s.projectID, 10), s.projectPath),
			fmt.Sprintf("groupId %d, token secret", s.gitlabGroupID)},
		{"SLACK", hxapi.ConnectionRequest{Kind: "SLACK", SourceServerUrl: ptr("https://slack.com"),
			Config: &map[string]any{"teamId": s.teamID, "appId": s.appID}},
			resource("channel", s.channelID, "#"+s.channelName),
			fmt.Sprintf("teamId %s, appId %s", s.teamID, s.appID)},
		{"OUTLINE", hxapi.ConnectionRequest{Kind: "OUTLINE", SourceServerUrl: ptr(s.outlineURL),
			Config: &map[string]any{}, Secret: ptr(s.outlineSecret)},
			resource("collection", s.collectionID, "Engineering"),
			"signing secret"},
	}
	d.printf("Workspace %s (id %d), its connections and subscriptions:\n", s.slug, ws.Id)
	tw := d.table()
	fmt.Fprintln(tw, "  PROVIDER\tCONNECTION\tSTATE\tCONFIG\tWEBHOOK URL\tSUBSCRIBED")
	conns := map[string]int{}
	for _, sp := range specs {
		r, err := d.api.hx.CreateConnectionWithResponse(ctx, s.slug, sp.body)
		if err := outcome("createConnection", r, err, http.StatusCreated); err != nil {
			return nil, fmt.Errorf("create %s connection: %w", sp.body.Kind, err)
		}
		if r.JSON201 == nil {
			return nil, errNoAnswer("createConnection")
		}
		c := *r.JSON201
		set, err := d.api.hx.ReplaceSubscriptionsWithResponse(ctx, s.slug, strconv.Itoa(c.Id),
			hxapi.ReplaceSubscriptionsJSONRequestBody{Resources: []hxapi.Resource{sp.sub}})
		if err := outcome("replaceSubscriptions", set, err, http.StatusOK); err != nil {
			return nil, fmt.Errorf("subscribe %s connection %d: %w", sp.provider, c.Id, err)
		}
		if set.JSON200 == nil {
			return nil, errNoAnswer("replaceSubscriptions")
		}
		if len(set.JSON200.Resources) != 1 {
			return nil, fmt.Errorf("subscribe %s connection %d: answered %d resources, want 1", sp.provider, c.Id, len(set.JSON200.Resources))
		}
		conns[sp.provider] = c.Id
		hook := deref(c.WebhookUrl)
		if c.WebhookUrl == nil {
			hook = "/webhooks/" + strings.ToLower(sp.provider) + " (shared)"
		}
		fmt.Fprintf(tw, "  %s\t%s #%d\t%s\t%s\t%s\t%s %s (%s)\n", sp.provider, c.Kind, c.Id, c.State, sp.note, hook,
			sp.sub.Type, deref(sp.sub.Name), sp.sub.Id)
	}
	_ = tw.Flush()
	return conns, nil
}

// resource is a subscription of the set-up.
func resource(typ, id, name string) hxapi.Resource {
	return hxapi.Resource{Type: typ, Id: id, Name: &name}
}

// ptr is a pointer to v, for the optional fields of a request.
func ptr[T any](v T) *T { return &v }
