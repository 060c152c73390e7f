package support

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// BackendPID is the server process of the session tx runs on: the holder a waiter is blocked by.
func BackendPID(ctx context.Context, tx pgx.Tx) int32 {
	ginkgo.GinkgoHelper()
	var pid int32
	gomega.Expect(tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)).To(gomega.Succeed())
	return pid
}

// EventuallyBlockedBy waits until n sessions of the current database wait for a lock that the
// backend holder holds, as pg_stat_activity and pg_blocking_pids show them. It proves "it waits
// for the lock" by observing the wait itself, where a fixed pause (Consistently) only shows that
// nothing happened yet, for a reason it cannot tell, at the price of the pause. observer must
// not be the holder's session.
func EventuallyBlockedBy(ctx context.Context, observer *pgxpool.Pool, holder int32, n int) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func() (int, error) {
		var waiting int
		err := observer.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND $1::int = ANY (pg_blocking_pids(pid))`, holder).Scan(&waiting)
		return waiting, err
	}).WithTimeout(10*time.Second).WithPolling(5*time.Millisecond).Should(gomega.Equal(n),
		"sessions waiting for a lock held by backend %d", holder)
}
