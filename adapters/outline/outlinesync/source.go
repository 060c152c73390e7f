// Package outlinesync is Outline's sync source (contract.SyncSource, run by application/backfill):
// a collection subscription's backfill reads the collection (POST collections.info, with the
// first page) and its documents (POST documents.list), 100 per page by offset, oldest created
// first, with the connection's own API token, and
// writes each page through the mirror store's handler method (outlinehandlers.BackfillPage);
// an uninstalled connection's teardown deletes what only it brought into the workspace. The
// cursor is "documents:<offset>", the offset of the next page.
//
// Outline is called only for a connection whose sourceServerUrl is the configured instance
// (HEPHAESTUS_OUTLINE_API_URL), so a tenant cannot make the server call another host; without
// that instance configured, without a token, or on another instance, the page is refused
// (inbox.ProviderRefused) and Outline is never called.
package outlinesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

var (
	_ contract.SyncSource = (*Source)(nil)
	_ Reader              = (*outlineapi.Client)(nil)
)

// PageSize is how many documents one page asks for (documents.list's largest limit).
const PageSize = 100

// Reader is the API client's side of a backfill (*outlineapi.Client). Errors:
// *inbox.ProviderError.
type Reader interface {
	// SameInstance reports whether a connection's source server is the configured instance.
	SameInstance(sourceServerURL string) bool
	CollectionInfo(ctx context.Context, token, collectionID string) (json.RawMessage, error)
	ListDocuments(ctx context.Context, token, collectionID string, offset, limit int) (outlineapi.DocumentsPage, error)
}

// Tokens reads a connection's API token, bound to its workspace
// (the connection store's LiveSecrets). found is false without a live connection or a token.
type Tokens interface {
	APICredential(ctx context.Context, workspaceID, connectionID int64) (cred credential.Credential, sourceServerURL string, found bool, err error)
}

// Store is the mirror store a page writes through, and the teardown.
type Store interface {
	outlinehandlers.BackfillWriter
	// TeardownConnection deletes, in tx, the workspace's mirrored Outline data that only the
	// connection brought in (outlinemirror documents the rule).
	TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// Source reads Outline for sync jobs.
type Source struct {
	reader Reader // nil: no Outline instance configured; backfills fail as refused
	tokens Tokens
	store  Store
}

// New makes the source; reader may be nil when no Outline instance is configured.
func New(reader Reader, tokens Tokens, store Store) (*Source, error) {
	if store == nil || tokens == nil {
		return nil, errors.New("outline sync: a mirror store and a token reader are required")
	}
	return &Source{reader: reader, tokens: tokens, store: store}, nil
}

// Provider implements contract.SyncSource.
func (s *Source) Provider() provider.Provider { return outline.Provider }

func refused(op, why string) error {
	return &inbox.ProviderError{Provider: "outline", Op: op, Kind: inbox.ProviderRefused, Err: errors.New(why)}
}

// NextPage implements contract.SyncSource.
func (s *Source) NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	if job.Kind == syncjob.Teardown {
		return ports.SyncPage{Done: true, Write: func(ctx context.Context, tx ports.Tx) error {
			return s.store.TeardownConnection(ctx, tx, job.WorkspaceID, job.ConnectionID)
		}}, nil
	}
	if job.ResourceType != outline.ResourceCollection {
		return ports.SyncPage{}, refused("sync "+job.ResourceType, "only collections are backfilled")
	}
	if s.reader == nil {
		return ports.SyncPage{}, refused("sync", "no Outline API URL configured")
	}
	offset, err := parseCursor(cursor)
	if err != nil {
		return ports.SyncPage{}, err
	}
	cred, sourceServerURL, found, err := s.tokens.APICredential(ctx, job.WorkspaceID, job.ConnectionID)
	if err != nil {
		return ports.SyncPage{}, fmt.Errorf("outline sync: %w", err)
	}
	token := cred.Secret()
	if !found {
		return ports.SyncPage{}, refused("sync", "the connection has no API token")
	}
	if !s.reader.SameInstance(sourceServerURL) {
		return ports.SyncPage{}, refused("sync", "the connection is not on the configured Outline instance")
	}
	// The first page also mirrors the collection itself (its name for the read API, and a row
	// the teardown removes with it).
	var collection *outlinemodel.Collection
	if offset == 0 {
		data, err := s.reader.CollectionInfo(ctx, token, job.ResourceID)
		if err != nil {
			return ports.SyncPage{}, err
		}
		c, err := outlinehandlers.DecodeBackfillCollection(data, job.ResourceID)
		if err != nil {
			return ports.SyncPage{}, unreadable("POST collections.info")
		}
		collection = &c
	}
	page, err := s.reader.ListDocuments(ctx, token, job.ResourceID, offset, PageSize)
	if err != nil {
		return ports.SyncPage{}, err
	}
	bp, err := outlinehandlers.DecodeBackfillDocuments(page.Documents, job.ResourceID)
	if err != nil {
		return ports.SyncPage{}, unreadable("POST documents.list")
	}
	if collection != nil {
		bp = bp.WithCollection(*collection)
	}
	out := ports.SyncPage{Items: bp.Items(), Write: func(ctx context.Context, tx ports.Tx) error {
		return bp.Write(ctx, tx, s.store, job.WorkspaceID)
	}}
	if bp.Items() < PageSize || !page.HasNext {
		out.Next, out.Done = "documents:done", true
	} else {
		out.Next = "documents:" + strconv.Itoa(offset+bp.Items())
	}
	return out, nil
}

// unreadable is a provider answer without the documented shape: retried within the budget.
func unreadable(op string) error {
	return &inbox.ProviderError{Provider: "outline", Op: op, Kind: inbox.ProviderUnreadable, Status: 200,
		Err: errors.New("answer does not have the documented shape")}
}

func parseCursor(cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	list, n, ok := strings.Cut(cursor, ":")
	offset, err := strconv.Atoi(n)
	if !ok || err != nil || offset < 0 || list != "documents" {
		return 0, fmt.Errorf("outline sync: cursor %q is not documents:<offset>", cursor)
	}
	return offset, nil
}
