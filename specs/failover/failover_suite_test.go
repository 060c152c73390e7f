// Package failover_test is the spec of losing the database host
// (docs/operations/database-failover.md): a pg_auto_failover formation whose primary is killed
// under admission and dispatch by two servers on the multi-host DATABASE_URL.
package failover_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestFailover(t *testing.T) {
	support.RunSpecs(t, "Database failover")
}
