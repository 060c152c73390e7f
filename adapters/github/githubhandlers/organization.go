package githubhandlers

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// organization mirrors an organization event: renames and deletions of the organization, and
// its members joining or leaving. One step, "organization.upsert"; the member's user first.
func (b base) organization(ctx context.Context, d ports.Dispatch) error {
	const event = EventOrganization
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Membership *struct {
			State string  `json:"state"`
			Role  string  `json:"role"`
			User  *ghUser `json:"user"`
		} `json:"membership"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	org, ok := toOrganization(p.Organization, eventID)
	if !ok {
		return malformed(event, "organization needs an id and a login")
	}
	org.Deleted = p.Action == "deleted"

	var member *githubmodel.OrganizationMember
	if p.Membership != nil && (p.Action == "member_added" || p.Action == "member_removed") {
		if u, ok := toUser(p.Membership.User, eventID); ok {
			if err := b.writeUsers(ctx, ws, []githubmodel.User{u}); err != nil {
				return wrap(event, err)
			}
			member = &githubmodel.OrganizationMember{
				OrganizationID: org.ID, UserID: u.ID, Role: p.Membership.Role, State: p.Membership.State,
				Deleted: p.Action == "member_removed", Version: versionOf(ghTime{}, eventID),
			}
		}
	}
	return wrap(event, b.step(ctx, stepOrganization, func(ctx context.Context, tx ports.Tx) error {
		if err := b.deps.Store.UpsertOrganization(ctx, tx, ws, org); err != nil {
			return err
		}
		if member != nil {
			return b.deps.Store.SetOrganizationMember(ctx, tx, ws, *member)
		}
		return nil
	}))
}

// repository mirrors a repository event (created, edited, renamed, transferred, archived,
// publicized, privatized, deleted): the repository as the payload shows it; a deletion is a
// tombstone. One step, "repository.upsert".
func (b base) repository(ctx context.Context, d ports.Dispatch) error {
	const event = EventRepository
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p envelope
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	repo, err := toRepository(event, p.Repository, eventID)
	if err != nil {
		return err
	}
	repo.Deleted = p.Action == "deleted"
	return wrap(event, b.step(ctx, stepRepository, func(ctx context.Context, tx ports.Tx) error {
		return b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID))
	}))
}

// member mirrors a repository collaborator added, edited or removed. One step,
// "member.upsert"; the member's user first.
func (b base) member(ctx context.Context, d ports.Dispatch) error {
	const event = EventMember
	var p struct {
		envelope
		Member  *ghUser `json:"member"`
		Changes struct {
			Permission *struct {
				To string `json:"to"`
			} `json:"permission"`
		} `json:"changes"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	u, ok := toUser(p.Member, eventID)
	if !ok {
		return malformed(event, "member needs an id and a login")
	}
	if err := b.writeUsers(ctx, ws, []githubmodel.User{u}); err != nil {
		return wrap(event, err)
	}
	c := githubmodel.Collaborator{RepositoryID: repo.ID, UserID: u.ID, Deleted: p.Action == "removed", Version: versionOf(ghTime{}, eventID)}
	if p.Changes.Permission != nil {
		c.Permission = p.Changes.Permission.To
	}
	return wrap(event, b.step(ctx, stepMember, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, orgOf(p.Organization, eventID)); err != nil {
			return err
		}
		return b.deps.Store.SetCollaborator(ctx, tx, ws, c)
	}))
}

// membership mirrors a user added to or removed from a team. One step, "membership.upsert";
// the member's user first. A team that GitHub reports deleted becomes a tombstone.
func (b base) membership(ctx context.Context, d ports.Dispatch) error {
	const event = EventMembership
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Scope  string  `json:"scope"`
		Member *ghUser `json:"member"`
		Team   *ghTeam `json:"team"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	org := orgOf(p.Organization, eventID)
	var orgID int64
	if org != nil {
		orgID = org.ID
	}
	team, ok := toTeam(p.Team, orgID, eventID)
	if !ok {
		return malformed(event, "team needs an id")
	}
	u, ok := toUser(p.Member, eventID)
	if !ok {
		return malformed(event, "member needs an id and a login")
	}
	if err := b.writeUsers(ctx, ws, []githubmodel.User{u}); err != nil {
		return wrap(event, err)
	}
	m := githubmodel.TeamMember{TeamID: team.ID, UserID: u.ID, Deleted: p.Action == "removed", Version: versionOf(ghTime{}, eventID)}
	return wrap(event, b.step(ctx, stepMembership, func(ctx context.Context, tx ports.Tx) error {
		if org != nil {
			if err := b.deps.Store.UpsertOrganization(ctx, tx, ws, *org); err != nil {
				return err
			}
		}
		if err := b.deps.Store.UpsertTeam(ctx, tx, ws, team); err != nil {
			return err
		}
		return b.deps.Store.SetTeamMember(ctx, tx, ws, m)
	}))
}

// team mirrors a team created, edited or deleted, and its repositories added or removed.
// One step, "team.upsert".
func (b base) team(ctx context.Context, d ports.Dispatch) error {
	const event = EventTeam
	ws, err := workspace(event, d)
	if err != nil {
		return err
	}
	var p struct {
		envelope
		Team *ghTeam `json:"team"`
	}
	if err := decode(event, d.Payload, &p); err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	org := orgOf(p.Organization, eventID)
	var orgID int64
	if org != nil {
		orgID = org.ID
	}
	team, ok := toTeam(p.Team, orgID, eventID)
	if !ok {
		return malformed(event, "team needs an id")
	}
	team.Deleted = team.Deleted || p.Action == "deleted"
	var (
		repo *githubmodel.Repository
		link *githubmodel.TeamRepository
	)
	if p.Action == "added_to_repository" || p.Action == "removed_from_repository" {
		r, err := toRepository(event, p.Repository, eventID)
		if err != nil {
			return err
		}
		repo = &r
		link = &githubmodel.TeamRepository{
			TeamID: team.ID, RepositoryID: r.ID, Permission: repositoryPermission(d.Payload, team.Permission),
			Deleted: p.Action == "removed_from_repository", Version: versionOf(ghTime{}, eventID),
		}
	}
	return wrap(event, b.step(ctx, stepTeam, func(ctx context.Context, tx ports.Tx) error {
		if org != nil {
			if err := b.deps.Store.UpsertOrganization(ctx, tx, ws, *org); err != nil {
				return err
			}
		}
		if err := b.deps.Store.UpsertTeam(ctx, tx, ws, team); err != nil {
			return err
		}
		if repo == nil {
			return nil
		}
		if err := b.deps.Store.UpsertRepository(ctx, tx, ws, *repo); err != nil {
			return err
		}
		return b.deps.Store.SetTeamRepository(ctx, tx, ws, *link)
	}))
}

// teamAdd mirrors a repository added to a team (team_add). One step, "team_repository.upsert".
func (b base) teamAdd(ctx context.Context, d ports.Dispatch) error {
	const event = EventTeamAdd
	var p struct {
		envelope
		Team *ghTeam `json:"team"`
	}
	ws, repo, err := repositoryEvent(event, d, &p)
	if err != nil {
		return err
	}
	eventID := d.Delivery.ID()
	org := orgOf(p.Organization, eventID)
	var orgID int64
	if org != nil {
		orgID = org.ID
	}
	team, ok := toTeam(p.Team, orgID, eventID)
	if !ok {
		return malformed(event, "team needs an id")
	}
	link := githubmodel.TeamRepository{
		TeamID: team.ID, RepositoryID: repo.ID, Permission: repositoryPermission(d.Payload, team.Permission),
		Version: versionOf(ghTime{}, eventID),
	}
	return wrap(event, b.step(ctx, stepTeamAdd, func(ctx context.Context, tx ports.Tx) error {
		if err := b.upsertRepositoryAndOrganization(ctx, tx, ws, repo, org); err != nil {
			return err
		}
		if err := b.deps.Store.UpsertTeam(ctx, tx, ws, team); err != nil {
			return err
		}
		return b.deps.Store.SetTeamRepository(ctx, tx, ws, link)
	}))
}

// repositoryPermission is the team's highest permission on the event's repository
// (repository.permissions), or fallback when the payload does not say.
func repositoryPermission(payload []byte, fallback string) string {
	var p struct {
		Repository *struct {
			Permissions map[string]bool `json:"permissions"`
		} `json:"repository"`
	}
	if decode("", payload, &p) != nil || p.Repository == nil {
		return fallback
	}
	for _, perm := range []string{"admin", "maintain", "push", "triage", "pull"} {
		if p.Repository.Permissions[perm] {
			return perm
		}
	}
	return fallback
}
