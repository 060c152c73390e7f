package management

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// SetSubscriptions replaces the resources the managed workspace monitors through a connection.
// Resource types must be among the provider module's ResourceTypes, and ids of the shape its
// ResourceValidator wants.
//
// A connection whose kind has an access checker (GITHUB_PAT) subscribes only to what its own
// credential can read: every resource is checked with the provider before anything is
// stored, outside any database transaction (a slow provider holds no lock), and the set is
// stored VERIFIED only when every check admitted. Other kinds' subscriptions are VERIFIED
// because their source vouches at admission (an App receives only its installation's
// deliveries).
// Errors: ports.ErrNotFound; ports.ErrMalformed ("unknown-resource-type", "invalid-resource",
// "duplicate-resource", "unsupported-resource", "secret-required"); ports.ErrForbidden
// ("resource-not-accessible"); ports.ErrUnavailable ("provider-unavailable": no answer,
// retry); ports.ErrConflict ("unknown-provider") for a connection whose provider module is no
// longer wired.
func (s *Service) SetSubscriptions(ctx context.Context, m Managed, id int64, resources []ports.SubscribedResource) ([]ports.SubscribedResource, error) {
	c, err := s.connections.Connection(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("connection %d: %w", id, err)
	}
	entry, ok := s.kinds[c.Kind.String()]
	if !ok {
		return nil, ports.Reject(ports.ErrConflict, "unknown-provider", c.Kind.String())
	}
	types := entry.module.ResourceTypes()
	seen := make(map[[2]string]bool, len(resources))
	for _, r := range resources {
		if !slices.Contains(types, r.Type) {
			return nil, ports.Reject(ports.ErrMalformed, "unknown-resource-type", r.Type)
		}
		if r.ID == "" || len(r.ID) > maxResourceIDLength || len(r.Name) > maxResourceNameLen ||
			!utf8.ValidString(r.ID) || !utf8.ValidString(r.Name) {
			return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", r.Type)
		}
		if v, ok := entry.module.(contract.ResourceValidator); ok {
			if err := v.ValidateResource(ports.Resource{Type: r.Type, ID: r.ID}); err != nil {
				return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", err.Error())
			}
		}
		key := [2]string{r.Type, r.ID}
		if seen[key] {
			return nil, ports.Reject(ports.ErrMalformed, "duplicate-resource", r.Type+"/"+r.ID)
		}
		seen[key] = true
	}
	resources, err = s.verifyAccess(ctx, m, c, resources)
	if err != nil {
		return nil, err
	}
	set, err := s.connections.ReplaceSubscriptions(ctx, m.ws.ID, id, resources)
	if err != nil {
		return nil, fmt.Errorf("replace subscriptions of connection %d: %w", id, err)
	}
	return set, nil
}

// maxConcurrentAccessChecks bounds the provider calls one subscription change makes at once.
const maxConcurrentAccessChecks = 4

// ReasonProviderUnavailable is a 503 (retry): the provider gave no usable answer to a check.
const ReasonProviderUnavailable = "provider-unavailable"

// verifyAccess checks every resource with c's own credential when c's kind has an access
// checker, and returns the resources with the access to store. It runs before the
// subscription transaction and outside any: the provider's answer decides whether the
// transaction runs at all.
func (s *Service) verifyAccess(ctx context.Context, m Managed, c ports.StoredConnection, resources []ports.SubscribedResource) ([]ports.SubscribedResource, error) {
	out := make([]ports.SubscribedResource, len(resources))
	checker, checked := s.checkers[c.Kind.String()]
	for i, r := range resources {
		out[i] = ports.SubscribedResource{Type: r.Type, ID: r.ID, Name: r.Name, Access: connection.Verified}
		if checked && !slices.Contains(checker.ResourceTypes(), r.Type) {
			return nil, ports.Reject(ports.ErrMalformed, "unsupported-resource", c.Kind.String()+" cannot subscribe to "+r.Type)
		}
	}
	if !checked || len(out) == 0 {
		return out, nil
	}
	credential, err := s.checkCredential(ctx, m, c, checker)
	if errors.Is(err, contract.ErrUnverifiable) && m.by.InstanceAdmin {
		return vouched(out), nil
	}
	if err != nil {
		return nil, err
	}
	defer clear(credential)

	infos, errs := checkEach(ctx, checker, contract.AccessTarget{WorkspaceID: m.ws.ID, ConnectionID: c.ID, Credential: credential}, out)
	checkedAt := s.now().UTC()
	for i, err := range errs {
		var rej *ports.RejectedError
		switch {
		case err == nil:
			out[i].AccessCheckedAt = &checkedAt
			if err := resolveName(&out[i], infos[i]); err != nil {
				return nil, err
			}
		case errors.Is(err, contract.ErrUnverifiable) && m.by.InstanceAdmin:
			// The server cannot ask (no API root or App key): the instance administrator
			// vouches, a workspace ADMIN never can.
			return vouched(out), nil
		case errors.As(err, &rej) && errors.Is(err, ports.ErrForbidden):
			return nil, ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible,
				fmt.Sprintf("%s %s: %s", out[i].Type, out[i].ID, rej.Detail))
		case errors.Is(err, ports.ErrMalformed):
			return nil, ports.Reject(ports.ErrMalformed, "invalid-resource", err.Error())
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, &ports.RejectedError{Kind: ports.ErrUnavailable, Reason: ReasonProviderUnavailable,
				Detail: fmt.Sprintf("%s %s: %v", out[i].Type, out[i].ID, err)}
		}
	}
	return out, nil
}

// ReasonNameMismatch refuses a subscription whose "name" is not the provider's name of its id:
// the id decides what is read, and a name is display only, so a name naming another resource
// is a mistake (or an attempt) the caller hears about (400), never stored.
const ReasonNameMismatch = "name-mismatch"

// resolveName sets r's name to the provider's (info), refusing a given name that differs from
// it (case-insensitively: GitHub and Slack names are). An empty given name takes the
// provider's.
func resolveName(r *ports.SubscribedResource, info contract.ResourceInfo) error {
	if info.Name == "" {
		return nil
	}
	if r.Name != "" && !strings.EqualFold(r.Name, info.Name) {
		return ports.Reject(ports.ErrMalformed, ReasonNameMismatch,
			fmt.Sprintf("%s %s is %q, not %q: the name is display only and taken from the id", r.Type, r.ID, info.Name, r.Name))
	}
	r.Name = info.Name
	return nil
}

// ReasonVouched is the access reason of a subscription the server could not verify (no API root
// or App key configured for the provider, or a connection without the credential a check
// needs) and the instance administrator stored anyway: VERIFIED, never checked
// (accessCheckedAt null), rechecked once a check becomes possible. A workspace ADMIN gets 403
// resource-not-accessible instead.
const ReasonVouched = "vouched-by-instance-admin"

// vouched marks every resource VERIFIED on the instance administrator's word.
func vouched(out []ports.SubscribedResource) []ports.SubscribedResource {
	for i := range out {
		out[i].AccessReason, out[i].AccessCheckedAt = ReasonVouched, nil
	}
	return out
}

// Subscriptions reads the resources the managed workspace monitors through a connection,
// with their access. Errors: ports.ErrNotFound.
func (s *Service) Subscriptions(ctx context.Context, m Managed, id int64) ([]ports.SubscribedResource, error) {
	set, err := s.connections.Subscriptions(ctx, m.ws.ID, id)
	if err != nil {
		return nil, fmt.Errorf("subscriptions of connection %d: %w", id, err)
	}
	return set, nil
}

// checkEach checks every resource for target, at most maxConcurrentAccessChecks at once, and
// returns each check's answer and error.
func checkEach(ctx context.Context, checker contract.ResourceAccessChecker, target contract.AccessTarget, resources []ports.SubscribedResource) ([]contract.ResourceInfo, []error) {
	infos, errs := make([]contract.ResourceInfo, len(resources)), make([]error, len(resources))
	sem := make(chan struct{}, maxConcurrentAccessChecks)
	var wg sync.WaitGroup
	for i := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			infos[i], errs[i] = checker.CheckAccess(ctx, target, ports.Resource{Type: resources[i].Type, ID: resources[i].ID})
		}()
	}
	wg.Wait()
	return infos, errs
}
