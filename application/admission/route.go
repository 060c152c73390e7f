package admission

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// target is one row to store: its workspace (0 for an installation control row), the
// connection it was admitted through (0 when none) and that connection's source URL.
type target struct {
	workspaceID  int64
	connectionID int64
	sourceURL    string
}

// route reads the routes, takes the lifecycle locks and decides which rows to store. An empty
// result with d.dropReason set drops the delivery.
func (s *Service) route(ctx context.Context, tx ports.AdmissionTx, p provider.Provider, urlConnID int64,
	conn *ports.SourceConnection, env contract.Envelope, d *decision,
) ([]target, error) {
	routes, err := tx.Routes(ctx, env.Route, p.String(), urlConnID)
	if err != nil {
		return nil, fmt.Errorf("read routes: %w", err)
	}
	slices.SortFunc(routes, func(a, b ports.Route) int { return cmp.Compare(a.ConnectionID, b.ConnectionID) })
	if env.Control {
		return []target{s.controlTarget(routes)}, nil
	}

	var sources, recipients []ports.Route
	for _, r := range routes {
		if r.Source {
			sources = append(sources, r)
		}
		if r.Recipient && !otherTenantsSource(r, env.Route) {
			recipients = append(recipients, r)
		}
	}
	if conn != nil {
		// The delivery was verified with the configuration the directory read; the route must
		// still be that connection at that version, or the provider retries against the new one.
		if len(sources) != 1 || sources[0].ConnectionID != conn.ID ||
			(conn.ConfigVersion != 0 && sources[0].ConfigVersion != conn.ConfigVersion) {
			return nil, routeChanged(conn.ID)
		}
	}
	if len(sources) == 0 {
		d.dropReason = ReasonNoSource
		return nil, nil
	}

	// Lock the union of sources and recipients; routes are sorted and distinct by connection,
	// so the ids are in connection-id order across workspaces, the one order every locker uses.
	ids := make([]int64, len(routes))
	version := make(map[int64]int64, len(routes))
	for i, r := range routes {
		ids[i] = r.ConnectionID
		version[r.ConnectionID] = r.ConfigVersion
	}
	locked, err := tx.LockConnections(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("lock connections: %w", err)
	}
	state := make(map[int64]connection.State, len(locked))
	for _, l := range locked {
		if l.Exists && l.ConfigVersion == version[l.ConnectionID] {
			state[l.ConnectionID] = l.State
		}
	}
	for _, id := range ids {
		if _, ok := state[id]; !ok {
			return nil, routeChanged(id) // gone, or reconfigured while admission waited
		}
	}

	// The source must admit, whoever else would receive the delivery through it.
	if !slices.ContainsFunc(sources, func(r ports.Route) bool { return state[r.ConnectionID].Admits() }) {
		d.dropReason = ReasonSourceInactive
		return nil, nil
	}
	// One row per admitted workspace, through its lowest admitting connection (recipients are
	// in connection-id order, so the first admitting one wins).
	var targets []target
	admitted := map[int64]bool{}
	for _, r := range recipients {
		if !admitted[r.WorkspaceID] && state[r.ConnectionID].Admits() {
			admitted[r.WorkspaceID] = true
			targets = append(targets, target{workspaceID: r.WorkspaceID, connectionID: r.ConnectionID, sourceURL: r.SourceServerURL})
		}
	}
	refusedWS := map[int64]bool{}
	for _, r := range recipients {
		if !admitted[r.WorkspaceID] && !refusedWS[r.WorkspaceID] {
			refusedWS[r.WorkspaceID] = true
			d.refusals = append(d.refusals, refusal{workspaceID: r.WorkspaceID, connectionID: r.ConnectionID})
		}
	}
	switch {
	case len(recipients) == 0:
		d.dropReason = ReasonNoSubscriber
	case len(targets) == 0:
		d.dropReason = ReasonConnectionInactive
		d.refusals = nil // the drop itself is the refusal
	}
	// Rows go in workspace order, so two admissions of one delivery meet the unique index in
	// the same order and the second waits for the first instead of deadlocking.
	slices.SortFunc(targets, func(a, b target) int { return cmp.Compare(a.workspaceID, b.workspaceID) })
	return targets, nil
}

// otherTenantsSource reports a route that the store must not have answered as a recipient: a
// connection of the source's kind that is not a source of this delivery is the source of
// another installation or team, which never receives this one's deliveries, whatever it
// subscribes to (tenant isolation; the routes statement already leaves it out).
func otherTenantsSource(r ports.Route, spec ports.RouteSpec) bool {
	return !r.Source && spec.SourceKind != "" && r.Kind == spec.SourceKind
}

// controlTarget is the one NULL-workspace row of an installation control event. Its source is
// not required, and not required to be ACTIVE: the handler of an installation event creates or
// repairs the connection. No lifecycle rule applies to it, so it takes no lock.
func (s *Service) controlTarget(routes []ports.Route) target {
	t := target{sourceURL: s.cfg.DefaultSourceServerURL}
	var best *ports.Route
	for i := range routes {
		r := &routes[i]
		if !r.Source {
			continue
		}
		// Prefer the live connection over uninstalled ones that keep the same installation id.
		if best == nil || (r.State.Admits() && !best.State.Admits()) {
			best = r
		}
	}
	if best != nil {
		t.connectionID, t.sourceURL = best.ConnectionID, best.SourceServerURL
	}
	return t
}

func newRows(p provider.Provider, req ports.Request, env contract.Envelope, targets []target) ([]ports.NewRow, error) {
	payload := storedPayload(req, env)
	rows := make([]ports.NewRow, 0, len(targets))
	for _, t := range targets {
		dl, err := inbox.NewDelivery(inbox.Admission{
			WorkspaceID: t.workspaceID, Provider: p, EventType: env.EventType,
			DeliveryKey: env.DeliveryKey, Subject: env.Subject, Control: env.Control,
		}, req.ReceivedAt)
		if err != nil {
			return nil, ports.Reject(ports.ErrMalformed, ReasonInvalidPayload, err.Error())
		}
		rows = append(rows, ports.NewRow{
			Delivery: dl, ConnectionID: t.connectionID, Payload: payload,
			Headers: rowHeaders(env.Headers, t.sourceURL), TraceParent: req.TraceParent,
		})
	}
	return rows, nil
}

// storedPayload is the body the rows store: the adapter's payload less its credentials when it
// removed some (ReceiveFrom held it to the payload rule), else the body as received.
func storedPayload(req ports.Request, env contract.Envelope) []byte {
	if env.Payload == nil {
		return req.Body
	}
	return env.Payload
}

// credentialHeaderParts name headers that carry a signature, token or cookie. Adapters never
// list such headers; admission drops them again so that no adapter mistake stores a credential.
var credentialHeaderParts = []string{"signature", "token", "authorization", "cookie", "secret"}

// rowHeaders keeps the adapter's headers and sets the source URL from the connection,
// replacing any header of that name a request may have carried.
func rowHeaders(env map[string]string, sourceURL string) map[string]string {
	h := make(map[string]string, len(env)+1)
	for k, v := range env {
		lower := strings.ToLower(k)
		if strings.EqualFold(k, HeaderSourceServerURL) || slices.ContainsFunc(credentialHeaderParts,
			func(part string) bool { return strings.Contains(lower, part) }) {
			continue
		}
		h[k] = v
	}
	h[HeaderSourceServerURL] = sourceURL
	return h
}
