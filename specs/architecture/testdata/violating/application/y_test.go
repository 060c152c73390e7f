package application

// Specs of application may use any helper: the layering binds production code.
import "github.com/jackc/pgx/v5"

var _ pgx.Tx
