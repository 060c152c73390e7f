package support

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	pgerasure "github.com/hephaestus-dev/hephaestus/adapters/postgres/erasure"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ErasureStore is the person-erasure store on pool as bootstrap composes it: every provider's
// person fields and mirror store, and GitHub's installation namespace https://github.com.
func ErasureStore(pool *pgxpool.Pool) *pgerasure.Store {
	gh, err := githubmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gl, err := gitlabmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	sl, err := slackmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ol, err := outlinemirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s, err := pgerasure.New(pool, pgerasure.Config{
		Fields:                 []ports.PersonFields{github.PersonFields(), gitlab.PersonFields(), slack.PersonFields(), outline.PersonFields()},
		Mirrors:                []ports.PersonDataStore{gh, gl, sl, ol},
		InstallationNamespaces: map[string]string{github.Provider.String(): "https://github.com"},
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}
