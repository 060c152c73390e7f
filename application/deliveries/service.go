// Package deliveries holds the deliveries browser's use cases (the Operator
// API): every inbox row of a workspace in any state, and one row with its payload, headers,
// committed steps and attempt history.
//
// Reading manages nothing, so a workspace's rows are open to its members whatever their role;
// the inbound adapter decides membership (managementapi.RequireMember) and hands the workspace it
// authorised. Installation rows (NULL workspace) are the instance administrator's alone, checked
// here on the principal.
package deliveries

import (
	"context"
	"errors"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// installation is the workspace id the ports use for installation rows.
const installation int64 = 0

// Service runs the deliveries browser. It is safe for concurrent use.
type Service struct {
	reader    ports.DeliveryReader
	providers provider.Set
}

// New builds the service on reader; providers are the server's providers, the values a
// filter's provider may name.
func New(reader ports.DeliveryReader, providers provider.Set) (*Service, error) {
	if reader == nil {
		return nil, errors.New("deliveries: reader is required")
	}
	return &Service{reader: reader, providers: providers}, nil
}

// CheckFilter refuses a filter value that can name no row: a provider this server does not run
// or a text that is no error class (inbox.IsErrorClass). Errors: *ports.RejectedError wrapping
// ports.ErrMalformed, reason "invalid-filter", Detail the field. The dead-letter lists use it
// too.
func CheckFilter(providers provider.Set, providerName, errorClass string) error {
	if providerName != "" && !providers.Has(providerName) {
		return ports.Reject(ports.ErrMalformed, "invalid-filter", "provider")
	}
	if errorClass != "" && !inbox.IsErrorClass(errorClass) {
		return ports.Reject(ports.ErrMalformed, "invalid-filter", "errorClass")
	}
	return nil
}

// List pages the rows of workspace ws (one the caller is a member of) that match filter,
// newest first; total is exact up to ports.DeliveryListCap, capped says it was reached.
func (s *Service) List(ctx context.Context, ws ports.Workspace, filter ports.DeliveryFilter, page ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
	if ws.ID <= 0 {
		return nil, 0, false, fmt.Errorf("list deliveries: %w", ports.ErrNotFound)
	}
	return s.list(ctx, ws.ID, filter, page)
}

// Delivery reads one row of workspace ws. Errors: ports.ErrNotFound (no such row there, a row
// of another workspace included).
func (s *Service) Delivery(ctx context.Context, ws ports.Workspace, id int64) (ports.Delivery, error) {
	if ws.ID <= 0 {
		return ports.Delivery{}, fmt.Errorf("delivery: %w", ports.ErrNotFound)
	}
	return s.delivery(ctx, ws.ID, id)
}

// ListInstallation is List for the installation rows: the instance administrator only
// (ports.ErrForbidden otherwise).
func (s *Service) ListInstallation(ctx context.Context, p ports.Principal, filter ports.DeliveryFilter, page ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
	if !p.InstanceAdmin {
		return nil, 0, false, ports.ErrForbidden
	}
	return s.list(ctx, installation, filter, page)
}

// InstallationDelivery is Delivery for an installation row: the instance administrator only.
func (s *Service) InstallationDelivery(ctx context.Context, p ports.Principal, id int64) (ports.Delivery, error) {
	if !p.InstanceAdmin {
		return ports.Delivery{}, ports.ErrForbidden
	}
	return s.delivery(ctx, installation, id)
}

func (s *Service) list(ctx context.Context, ws int64, filter ports.DeliveryFilter, page ports.PageRequest) ([]ports.DeliveryItem, int, bool, error) {
	if err := CheckFilter(s.providers, filter.Provider, filter.ErrorClass); err != nil {
		return nil, 0, false, fmt.Errorf("list deliveries: %w", err)
	}
	items, total, capped, err := s.reader.ListDeliveries(ctx, ws, filter, page)
	if err != nil {
		return nil, 0, false, fmt.Errorf("list deliveries: %w", err)
	}
	return items, total, capped, nil
}

func (s *Service) delivery(ctx context.Context, ws, id int64) (ports.Delivery, error) {
	d, err := s.reader.Delivery(ctx, ws, id)
	if err != nil {
		return ports.Delivery{}, fmt.Errorf("delivery %d: %w", id, err)
	}
	return d, nil
}
