package githubhandlers

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type ghInstallation struct {
	ID                  int64   `json:"id"`
	Account             *ghUser `json:"account"`
	RepositorySelection string  `json:"repository_selection"`
	TargetType          string  `json:"target_type"`
	UpdatedAt           ghTime  `json:"updated_at"`
	SuspendedAt         ghTime  `json:"suspended_at"`
}

type ghInstalledRepository struct {
	ID       int64  `json:"id"`
	FullName string `json:"full_name"`
	Private  bool   `json:"private"`
}

// installationState is the state GitHub reports for an installation object.
func (in ghInstallation) state() string {
	if in.SuspendedAt.valid {
		return "SUSPENDED"
	}
	return "ACTIVE"
}

func (in ghInstallation) record(action string, eventID int64) githubmodel.Installation {
	r := githubmodel.Installation{
		ID: in.ID, RepositorySelection: in.RepositorySelection, TargetType: in.TargetType,
		State: in.state(), LastAction: action, Version: versionOf(in.UpdatedAt, eventID),
	}
	if in.Account != nil {
		r.AccountID, r.AccountLogin, r.AccountType = in.Account.ID, in.Account.Login, in.Account.Type
	}
	return r
}

func coveredRepositories(installationID int64, repos []ghInstalledRepository, deleted bool, eventID int64) []githubmodel.InstallationRepository {
	out := make([]githubmodel.InstallationRepository, 0, len(repos))
	for _, r := range repos {
		if r.ID <= 0 {
			continue
		}
		out = append(out, githubmodel.InstallationRepository{
			InstallationID: installationID, RepositoryID: r.ID, FullName: r.FullName, Private: r.Private,
			Deleted: deleted, Version: versionOf(ghTime{}, eventID),
		})
	}
	return out
}

// installation handles the App's installation lifecycle on the instance inbox (the row has no
// workspace). In one step, "installation.upsert", under the lifecycle lock of the App
// connection whose source key is the installation id:
//
//   - created and unsuspend activate the live connection of the installation (a SUSPENDED one
//     is repaired), suspend suspends it, deleted uninstalls it — each through the domain's
//     connection.State.Next. An UNINSTALLED connection is never revived: a reinstall is bound
//     to a workspace again only through the install flow or by the instance administrator
//     (the one live connection per installation, uq_connection_installation, is the only one
//     this handler reads);
//   - the installation is recorded instance-wide, also when no connection exists (then there
//     is nothing to repair, and the record says so with no connection);
//   - created records the repositories the installation covers for the connection's
//     workspace; deleted marks them uncovered.
//
// The connection moves only when this event's installation version is not older than the
// recorded one, so a replayed older event cannot undo a later suspension or reinstall. With App
// authentication (Deps.Installations), the step first verifies the installation's status with
// the App inside its transaction, as the seed's boundary says, and GitHub's answer (deleted,
// suspended or active) decides the transition instead of the event's action.
func (b base) installation(ctx context.Context, d ports.Dispatch) error {
	const event = EventInstallation
	var p struct {
		Action       string                  `json:"action"`
		Installation *ghInstallation         `json:"installation"`
		Repositories []ghInstalledRepository `json:"repositories"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Installation == nil || p.Installation.ID <= 0 || p.Action == "" {
		return malformed(event, "installation needs an id and an action")
	}
	eventID := d.Delivery.ID()
	inst := p.Installation
	record := inst.record(p.Action, eventID)
	var (
		action    connection.Action
		hasAction = true
	)
	switch p.Action {
	case "created", "unsuspend":
		action, record.State = connection.Activate, "ACTIVE"
	case "suspend":
		action, record.State = connection.Suspend, "SUSPENDED"
	case "deleted":
		action, record.State = connection.Uninstall, "DELETED"
	default:
		hasAction = false // new_permissions_accepted and the like: recorded only
	}

	var outcome, verified string
	eventAction, eventState := action, record.State
	err := b.step(ctx, stepInstallation, func(ctx context.Context, tx ports.Tx) error {
		outcome, verified = "", ""
		action, record.State = eventAction, eventState
		if hasAction && b.deps.Installations != nil {
			// The seed's boundary: the status read runs inside this handler transaction, which
			// it holds until GitHub answers (before any lock of this step is taken). GitHub's
			// current status decides the transition, so a delayed or replayed event cannot
			// reactivate a suspended or deleted installation.
			status, err := b.deps.Installations.InstallationStatus(ctx, inst.ID)
			if err != nil {
				return err
			}
			switch {
			case !status.Exists:
				action, record.State = connection.Uninstall, "DELETED"
			case status.Suspended:
				action, record.State = connection.Suspend, "SUSPENDED"
			default:
				action, record.State = connection.Activate, "ACTIVE"
			}
			if action != eventAction {
				verified = record.State
			}
		}
		conn, found, err := b.deps.Store.LockAppConnection(ctx, tx, inst.ID)
		if err != nil {
			return err
		}
		if found {
			record.ConnectionID = conn.ID
		}
		applied, err := b.deps.Store.RecordInstallation(ctx, tx, record)
		if err != nil {
			return err
		}
		switch {
		case !applied:
			outcome = "older-than-recorded"
			return nil
		case !found:
			outcome = "no-connection"
			return nil
		}
		if hasAction {
			next, err := conn.State.Next(action)
			switch {
			case err == nil:
				if err := b.deps.Store.SetAppConnectionState(ctx, tx, conn.ID, next); err != nil {
					return err
				}
			case errors.Is(err, connection.ErrForbiddenTransition):
				// Already there (a redelivery, or an operator was first), or a transition the
				// state machine refuses: GitHub's event cannot be refused, so it changes nothing.
				outcome = "unchanged:" + conn.State.String()
			default:
				return err
			}
		}
		switch {
		case p.Action == "created" && action == connection.Activate:
			return b.deps.Store.SetInstallationRepositories(ctx, tx, conn.WorkspaceID,
				coveredRepositories(inst.ID, p.Repositories, false, eventID))
		case hasAction && action == connection.Uninstall:
			return b.deps.Store.RemoveInstallationRepositories(ctx, tx, conn.WorkspaceID, inst.ID, versionOf(ghTime{}, eventID))
		}
		return nil
	})
	if err == nil && verified != "" {
		b.note("github installation status verified with the App differs from the event",
			"action", p.Action, "installationId", inst.ID, "eventId", eventID, "status", verified)
	}
	if err == nil && outcome != "" {
		b.note("github installation event changed no connection",
			"action", p.Action, "installationId", inst.ID, "eventId", eventID, "outcome", outcome)
	}
	return wrap(event, err)
}

// installationRepositories records the repositories added to or removed from an installation
// for the workspace of its live App connection, in one step,
// "installation_repositories.upsert", under the connection's lifecycle lock.
func (b base) installationRepositories(ctx context.Context, d ports.Dispatch) error {
	const event = EventInstallationRepositories
	var p struct {
		Action              string                  `json:"action"`
		Installation        *ghInstallation         `json:"installation"`
		RepositorySelection string                  `json:"repository_selection"`
		Added               []ghInstalledRepository `json:"repositories_added"`
		Removed             []ghInstalledRepository `json:"repositories_removed"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Installation == nil || p.Installation.ID <= 0 {
		return malformed(event, "installation needs an id")
	}
	eventID := d.Delivery.ID()
	inst := p.Installation
	record := inst.record("repositories_"+p.Action, eventID)
	if p.RepositorySelection != "" {
		record.RepositorySelection = p.RepositorySelection
	}
	repos := append(coveredRepositories(inst.ID, p.Added, false, eventID),
		coveredRepositories(inst.ID, p.Removed, true, eventID)...)
	var found bool
	err := b.step(ctx, stepInstallationRepo, func(ctx context.Context, tx ports.Tx) error {
		conn, ok, err := b.deps.Store.LockAppConnection(ctx, tx, inst.ID)
		if err != nil {
			return err
		}
		found = ok
		if ok {
			record.ConnectionID = conn.ID
		}
		if _, err := b.deps.Store.RecordInstallation(ctx, tx, record); err != nil {
			return err
		}
		if !ok || len(repos) == 0 {
			return nil
		}
		return b.deps.Store.SetInstallationRepositories(ctx, tx, conn.WorkspaceID, repos)
	})
	if err == nil && !found {
		b.note("github installation repositories of an installation without a live connection",
			"installationId", inst.ID, "eventId", eventID)
	}
	return wrap(event, err)
}

// installationTarget records that the account an installation belongs to was renamed, in one
// step, "installation_target.upsert".
func (b base) installationTarget(ctx context.Context, d ports.Dispatch) error {
	const event = EventInstallationTarget
	var p struct {
		Action       string          `json:"action"`
		Installation *ghInstallation `json:"installation"`
		Account      *ghUser         `json:"account"`
		TargetType   string          `json:"target_type"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	if p.Installation == nil || p.Installation.ID <= 0 {
		return malformed(event, "installation needs an id")
	}
	if p.Account == nil || p.Account.Login == "" {
		return malformed(event, "account needs a login")
	}
	v := versionOf(ghTime{}, d.Delivery.ID())
	return wrap(event, b.step(ctx, stepInstallationTgt, func(ctx context.Context, tx ports.Tx) error {
		return b.deps.Store.RenameInstallationAccount(ctx, tx, p.Installation.ID, p.Account.Login, v)
	}))
}
