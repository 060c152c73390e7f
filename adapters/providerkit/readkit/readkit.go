// Package readkit is what every provider's read API is built from, so a read package keeps only
// its store queries, its row→JSON views and its route list:
//
//   - Config and Mount: the dependencies every read API needs (authenticator, member directory,
//     store, logger), checked once, and the member route group
//     /api/workspaces/{ws}{path} (managementapi.MemberRoutes) its routes are added to.
//   - ReadAPI: a read package's Register as a module mounts it (providerkit.Built.ReadAPI).
//   - List, ListOfID and ListOfKey: GET routes answering one page of a store's list
//     ({"items","page","size","total"}, managementapi.WriteList), bound to the workspace the
//     member check authorised; errors answer through httperr with a 500's cause logged.
//   - Timestamp, Updated and Optional: the JSON shaping shared by the views (views.go).
//
// Access, the same for every read API: a valid token (401 otherwise) of a member of the
// workspace, whatever its role (ADMIN or MEMBER), or the instance administrator; 404 for an
// unknown workspace, 403 for a known workspace the caller is no member of.
package readkit

import (
	"context"
	"errors"
	"reflect"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Config is what a read API's routes need; S is the provider's store interface.
type Config[S any] struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Store   S
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Group is a read API's member route group and how its routes answer a failure.
type Group struct {
	group *gin.RouterGroup
	log   ports.Logger
	what  string
}

// Mount checks cfg, opens the member route group /api/workspaces/{ws}{path} on r and lets
// routes add the read API's routes to it. name prefixes the error; path "/outline" logs a 500's
// cause as "outline mirror read failed". Errors: a missing authenticator, member directory or
// store.
func Mount[S any](r gin.IRouter, name, path string, cfg Config[S], routes func(g *Group)) error {
	if cfg.Auth == nil || cfg.Members == nil || isNil(cfg.Store) {
		return errors.New(name + ": an authenticator, a member directory and a store are required")
	}
	what := "mirror read failed"
	if path != "" {
		what = path[1:] + " " + what
	}
	routes(&Group{group: managementapi.MemberRoutes(r, cfg.Auth, cfg.Members, path), log: cfg.Log, what: what})
	return nil
}

// isNil reports a store that is not there: nil, or a nil pointer, map or func.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// ReadAPI is a read package's Register serving store, as a module mounts it with the guard
// bootstrap hands over (providerkit.Built.ReadAPI).
func ReadAPI[S any](register func(gin.IRouter, Config[S]) error, store S) func(gin.IRouter, providerkit.Guard) error {
	return func(r gin.IRouter, g providerkit.Guard) error {
		return register(r, Config[S]{Auth: g.Auth, Members: g.Members, Store: store, Log: g.Log})
	}
}

// Fail answers err (httperr's status and code), logging the cause of a 500.
func (rt *Group) Fail(c *gin.Context, err error) {
	httperr.WriteLogged(c, err, rt.log, rt.what)
}

// Read is one page of a store's list of the workspace ws, and the list's total.
type Read[R any] func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error)

// List adds GET path: a page of read's rows of the authorised workspace, shaped by toJSON.
func List[R, J any](rt *Group, path string, read Read[R], toJSON func(R) J) {
	rt.group.GET(path, func(c *gin.Context) { write(rt, c, read, toJSON) })
}

// ListOfID adds GET path (which names :id): a page of the rows of the parent :id. Anything but a
// positive integer names no parent: 404 before the paging is read. read errors:
// ports.ErrNotFound for a parent the workspace does not have (404).
func ListOfID[R, J any](rt *Group, path string, read func(ctx context.Context, ws, id int64, page ports.PageRequest) ([]R, int, error), toJSON func(R) J) {
	rt.group.GET(path, func(c *gin.Context) {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			rt.Fail(c, ports.ErrNotFound)
			return
		}
		write(rt, c, func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error) {
			return read(ctx, ws, id, page)
		}, toJSON)
	})
}

// ListOfKey adds GET path (which names :id): a page of the rows of the parent with the provider
// key :id (a Slack channel id). read errors: ports.ErrNotFound for a parent the workspace does
// not have (404).
func ListOfKey[R, J any](rt *Group, path string, read func(ctx context.Context, ws int64, key string, page ports.PageRequest) ([]R, int, error), toJSON func(R) J) {
	rt.group.GET(path, func(c *gin.Context) {
		key := c.Param("id")
		write(rt, c, func(ctx context.Context, ws int64, page ports.PageRequest) ([]R, int, error) {
			return read(ctx, ws, key, page)
		}, toJSON)
	})
}

// write answers one page of read's rows of the workspace RequireMember authorised.
func write[R, J any](rt *Group, c *gin.Context, read Read[R], toJSON func(R) J) {
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, read, toJSON); err != nil {
		rt.Fail(c, err)
	}
}
