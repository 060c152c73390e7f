package hxapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// A consumer of the change feed: it long-polls from its last cursor, applies each change, keeps
// the newest version of each entity (versions compare byte by byte, greater is newer, so
// overlapping writers cannot make it go back), and goes on from next. A 410 cursor-expired
// means the consumer was away longer than the feed keeps changes: it reads the entities again
// and starts from the oldest change kept. The server here is a stand-in answering three pages;
// a real consumer loops until it is stopped, keeping its cursor durably.
func Example_followTheChangeFeed() {
	srv := httptest.NewServer(http.HandlerFunc(feedStandIn))
	defer srv.Close()
	api, err := hxapi.NewClientWithResponses(srv.URL, hxapi.WithRequestEditorFn(hxapi.BearerToken("a-member-token")))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	newest := map[string]string{} // subject → the newest version applied
	after, wait := "", "30s"
	for range 3 {
		params := &hxapi.ListChangesParams{Wait: &wait}
		if after != "" {
			params.After = &after
		}
		page, err := api.ListChangesWithResponse(ctx, "acme", params)
		switch {
		case err != nil:
			fmt.Println(err)
			return
		case page.JSON410 != nil:
			fmt.Println("cursor expired: read the entities again, then follow from the start")
			after = ""
			continue
		case page.JSON200 == nil:
			fmt.Println("unexpected answer", page.StatusCode())
			return
		}
		for _, c := range page.JSON200.Changes {
			v := ""
			if c.Data.Version != nil {
				v = *c.Data.Version
			}
			if v <= newest[c.Subject] {
				fmt.Println("skip", c.Type, c.Subject, v, "(older than what was applied)")
				continue
			}
			newest[c.Subject] = v
			fmt.Println("apply", c.Type, c.Subject, v)
		}
		after = page.JSON200.Next
	}
	fmt.Println("follow on from", after)
	// Output:
	// apply github.issue.upserted github:issue:3001 0002
	// apply github.label.upserted github:label:7 0001
	// skip github.issue.upserted github:issue:3001 0001 (older than what was applied)
	// apply github.issue.upserted github:issue:3001 0003
	// follow on from 812-3
}

// feedStandIn answers GET /api/workspaces/acme/changes as the server does, from a fixed feed:
// two changes, then one that committed late with an older version, then a newer one.
func feedStandIn(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/workspaces/acme/changes" || r.Header.Get("Authorization") != "Bearer a-member-token" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Query().Get("after") {
	case "":
		fmt.Fprint(w, `{"changes":[
			{"id":1,"cursor":"810-1","type":"github.issue.upserted","subject":"github:issue:3001","occurredAt":"2026-12-07T10:00:00Z","data":{"version":"0002"}},
			{"id":2,"cursor":"810-2","type":"github.label.upserted","subject":"github:label:7","occurredAt":"2026-12-07T10:00:01Z","data":{"version":"0001"}}],
			"next":"810-2"}`)
	case "810-2":
		fmt.Fprint(w, `{"changes":[
			{"id":3,"cursor":"811-3","type":"github.issue.upserted","subject":"github:issue:3001","occurredAt":"2026-12-07T09:59:59Z","data":{"version":"0001"}}],
			"next":"811-3"}`)
	default:
		fmt.Fprint(w, `{"changes":[
			{"id":4,"cursor":"812-3","type":"github.issue.upserted","subject":"github:issue:3001","occurredAt":"2026-12-07T10:00:05Z","data":{"version":"0003"}}],
			"next":"812-3"}`)
	}
}
